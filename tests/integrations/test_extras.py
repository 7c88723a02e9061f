"""Each adapter stays behind its extra: without the framework, importing the adapter fails with one line
naming the extra; ``import hanrag`` and the core commands never import a framework. Each case runs in a
fresh interpreter whose import system refuses the frameworks (as if they were not installed)."""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap

import pytest

from hanrag.integrations import EXTRAS, missing_extra_message

FRAMEWORKS = ("langchain", "langchain_core", "langchain_tests", "langsmith", "llama_index", "haystack", "mcp",
              "mcp_types")

# a meta-path finder in front of every other: a framework import is recorded and fails as if not installed
BLOCKER = textwrap.dedent(f"""
    import sys
    BLOCKED = {FRAMEWORKS!r}
    ATTEMPTS = []

    class Blocker:
        def find_spec(self, name, path=None, target=None):
            if name.split(".")[0] in BLOCKED:
                ATTEMPTS.append(name)
                raise ModuleNotFoundError(f"No module named {{name!r}}", name=name)
            return None

    sys.meta_path.insert(0, Blocker())
""")


def _python(code: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-c", BLOCKER + textwrap.dedent(code)], capture_output=True, text=True,
                          timeout=300)


@pytest.mark.parametrize("extra", sorted(EXTRAS))
def test_adapter_without_its_framework_names_the_extra(extra: str) -> None:
    out = _python(f"import hanrag.integrations.{extra}")
    assert out.returncode == 1
    last = out.stderr.strip().splitlines()[-1]
    assert last == f"ImportError: {missing_extra_message(extra)}"
    assert f"pip install 'hanrag[{extra}]'" in last
    # the traceback is the adapter's own line, not a chain through the framework's import machinery
    assert "During handling" not in out.stderr


def test_core_never_imports_a_framework(built) -> None:
    code = f"""
        import json
        from typer.testing import CliRunner
        import hanrag, hanrag.api, hanrag.cli, hanrag.server, hanrag.integrations
        from hanrag.cli import app
        index, config, corpus = {str(built["index_dir"])!r}, {str(built["config_path"])!r}, {str(built["corpus"])!r}
        runner = CliRunner()
        codes = {{}}
        for name, args in [
            ("search", ["search", index, "갑목 용신", "--json", "--no-server", "-c", config, "--lang", "ko"]),
            ("lint", ["lint", corpus, "-c", config]),
            ("help", ["--help"]),
        ]:
            codes[name] = runner.invoke(app, args).exit_code
        hits = hanrag.open(index, config=config).search("롤백", top_k=2)
        mcp = runner.invoke(app, ["mcp", index, "-c", config])
        print(json.dumps({{"attempts": ATTEMPTS, "codes": codes, "hits": len(hits), "mcp_code": mcp.exit_code,
                          "mcp_output": mcp.output}}))
    """
    out = _python(code)
    assert out.returncode == 0, out.stderr[-3000:]
    report = json.loads(out.stdout.strip().splitlines()[-1])
    assert report["codes"]["search"] == 0 and report["codes"]["lint"] == 0 and report["codes"]["help"] == 0
    assert report["hits"] == 2
    # only `hanrag mcp` reaches for its framework, and fails with the one line naming the extra
    assert report["mcp_code"] == 2 and "pip install 'hanrag[mcp]'" in report["mcp_output"]
    assert report["attempts"] and all(name.split(".")[0] == "mcp" for name in report["attempts"])
