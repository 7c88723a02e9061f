"""What every ``hanrag`` command shares: its common options, one-line errors, text from a corpus shown as data,
the config and the index opened with a hint for each way they fail.

Light on purpose (typer, rich, the config and records modules): the server imports it with the search command
(:mod:`hanrag.commands.search`), and ``hanrag --help`` with every command. Whatever opens an index is imported
inside :func:`open_index`.
"""

from __future__ import annotations

import json
import re
import sys
import traceback
import warnings
from pathlib import Path
from typing import Annotated

import typer
from rich.console import Console
from rich.markup import escape
from rich.text import Text

from hanrag.config import Config, ConfigError, load_config

# jieba and milvus-lite import pkg_resources, which setuptools >= 80.9 (llama-index-core needs it, see
# pyproject's milvus extra) flags at every import: a dependency's deprecation, nothing a user can act on
warnings.filterwarnings("ignore", message="pkg_resources is deprecated as an API", category=UserWarning)

console = Console()
err_console = Console(stderr=True, soft_wrap=True)  # an error stays one line, whatever the terminal width

ConfigOpt = Annotated[
    Path | None, typer.Option("--config", "-c", help="hanrag.toml to use (default: ./hanrag.toml if present)")
]
JsonOpt = Annotated[bool, typer.Option("--json", help="machine-readable JSON output")]

_state = {"debug": False}

LEXICON_HINT = ("[lexicon] paths names bundled lexicons (saju, it) or TSV files: term<TAB>equivalent..., UTF-8 "
                "(see docs/configuration.md)")


def set_debug(debug: bool) -> None:
    """``hanrag --debug``: :func:`fail` prints the traceback before its line."""
    _state["debug"] = debug


def load(config: Path | None) -> Config:
    """The config a command runs with (``--config``, else ./hanrag.toml when present, else the defaults), or fail
    with one line."""
    if config is None and Path("hanrag.toml").is_file():
        config = Path("hanrag.toml")
    try:
        return load_config(config)
    except ConfigError as exc:
        if config is not None and not config.exists():
            fail(str(exc), f"write one with `hanrag init {config}`, or leave out --config for the defaults")
        if config is not None and not config.is_file():
            fail(str(exc), "name a TOML config file, or leave out --config for the defaults")
        fail(str(exc), "compare the file with the full commented config: `hanrag init --print`")
        raise  # unreachable


def fail(message: str, hint: str = "") -> None:
    """Print one clear error line (and a hint) and exit 2."""
    if _state["debug"]:
        if sys.exc_info()[0] is not None:
            traceback.print_exc()
        else:
            traceback.print_stack()
    # escaped: messages and hints name config sections ("[embedder]") that Rich would eat as markup
    err_console.print(f"[bold red]error:[/] {plain(message)}", highlight=False)
    if hint:
        err_console.print(f"[dim]hint: {plain(hint)}[/]", highlight=False)
    raise typer.Exit(2)


def print_json(data: object) -> None:
    sys.stdout.write(json.dumps(data, ensure_ascii=False, indent=2) + "\n")


# C0 and C1 control characters but TAB and newline: an ESC sequence in a document could plant a terminal link
# (OSC 8), retitle the window or rewrite what was printed before it
_CONTROL = re.compile(r"[\x00-\x08\x0b-\x1f\x7f-\x9f]")


def clean(value: object) -> str:
    """Text from a corpus, an index, a file name or a client, safe for a terminal: control characters as U+FFFD."""
    return _CONTROL.sub("\ufffd", str(value))


def data(value: object, style: str = "") -> Text:
    """Such text as rich shows it: a ``Text``, never parsed as markup (``[/]`` or ``[link=...]`` in a document is
    text), control characters replaced."""
    return Text(clean(value), style=style)


def plain(value: object) -> str:
    """Such text inside a markup string: escaped for rich, control characters replaced."""
    return escape(clean(value))


# --- opening an index ---------------------------------------------------------------------------------------


def milvus_errors(cfg: Config) -> tuple[type[Exception], ...]:
    """MilvusError when the Milvus backend is configured, else nothing to catch: importing it loads pymilvus,
    which an embedded search never needs."""
    if cfg.backend.kind != "milvus":
        return ()
    from hanrag.backends.milvus import MilvusError

    return (MilvusError,)


def open_index(index: Path, cfg: Config):
    """Open an index for search (``[backend] kind``: the folder, or the [milvus] collection), or fail with one
    line naming the problem."""
    import hanrag
    from hanrag.embed import EmbedderError
    from hanrag.index.store import IndexLoadError
    from hanrag.lexicon import LexiconError

    MilvusError = milvus_errors(cfg)
    remote = cfg.backend.kind == "milvus"
    if remote and not cfg.milvus.uri:
        fail("milvus.uri is not set", "set [milvus] uri in hanrag.toml or HANRAG_MILVUS__URI")
    if not remote and not index.exists():
        fail(f"{index}: no such index folder", f"build one with `hanrag build CORPUS --index {index}`")
    try:
        return hanrag.open(index, config=cfg)
    except EmbedderError as exc:
        fail(str(exc), "use the embedder the index was built with ([embedder] in hanrag.toml), or rebuild it")
    except MilvusError as exc:
        fail(str(exc), "check milvus.uri / token / db_name, that the server is up and the push completed")
    except LexiconError as exc:
        fail(str(exc), LEXICON_HINT)
    except (IndexLoadError, OSError) as exc:
        fail(str(exc), _not_an_index_hint(index, cfg))


def _not_an_index_hint(index: Path, cfg: Config) -> str:
    """The fix for a folder that is not a readable index: a corpus folder given by mistake gets a build command
    whose index folder is not the corpus itself."""
    if index.is_dir() and not (index / "CURRENT").exists() and not (index / "snapshots").exists():
        exts = {e.lower() for e in cfg.corpus.extensions}
        looks_like_corpus = any(p.suffix.lower() in exts for p in _first_files(index, 200))
        if looks_like_corpus:
            name = index.resolve().name or "corpus"
            target = Path("index") / name
            if target.resolve() == index.resolve():
                target = Path("index") / f"{name}-index"
            return (f"{index} looks like a corpus folder, not an index: build an index from it with "
                    f"`hanrag build {index} --index {target}`, then search {target}")
    if not (index / "CURRENT").exists() and not (index / "snapshots").exists():
        return f"no index was built there: build one with `hanrag build CORPUS --index {index}`"
    return f"rebuild it with `hanrag build CORPUS --index {index}`"


def _first_files(root: Path, limit: int) -> list[Path]:
    out: list[Path] = []
    try:
        for p in root.rglob("*"):
            if p.is_file():
                out.append(p)
                if len(out) >= limit:
                    break
    except OSError:
        pass
    return out
