"""Atomic, durable file writes: the one helper every writer of hanrag's files uses.

A write goes to a unique temporary file in the target's folder (``mkstemp``: two threads or
processes writing the same path never share a temporary), is flushed and fsynced, then renamed
over the target with ``os.replace`` and the folder fsynced, so a reader sees the old file or the
new one, never a torn one, and a crash leaves at worst a ``.NAME.*.tmp`` file behind.
"""

from __future__ import annotations

import contextlib
import json
import os
import tempfile
import threading
from collections.abc import Iterable, Iterator
from pathlib import Path
from typing import TYPE_CHECKING, Any, BinaryIO

if TYPE_CHECKING:
    import numpy as np


def default_cache_dir() -> Path:
    """hanrag's per-user cache folder (embedding vectors, converted models, jieba's dictionary, parsed
    dictionaries): ``$HANRAG_CACHE_DIR``, else ``$XDG_CACHE_HOME/hanrag``, else ``~/.cache/hanrag``."""
    explicit = os.environ.get("HANRAG_CACHE_DIR", "").strip()
    if explicit:
        return Path(explicit).expanduser()
    xdg = os.environ.get("XDG_CACHE_HOME", "").strip()
    return (Path(xdg).expanduser() if xdg else Path.home() / ".cache") / "hanrag"


def fsync_dir(path: Path) -> None:
    """Make a rename/creation inside ``path`` durable (no-op where directories cannot be opened)."""
    try:
        fd = os.open(path, os.O_RDONLY)
    except OSError:
        return
    try:
        os.fsync(fd)
    except OSError:
        pass
    finally:
        os.close(fd)


@contextlib.contextmanager
def atomic_open(path: str | Path, *, mkdir: bool = False) -> Iterator[BinaryIO]:
    """A binary file handle whose content replaces ``path`` when the block ends without error.

    ``mkdir`` creates missing parent folders first. On an error the temporary file is removed
    and ``path`` is left as it was."""
    path = Path(path)
    if mkdir:
        path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
    try:
        with os.fdopen(fd, "wb") as fh:
            yield fh
            fh.flush()
            os.fsync(fh.fileno())
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise
    fsync_dir(path.parent)


def atomic_write_bytes(path: str | Path, data: bytes, *, mkdir: bool = False) -> None:
    """Replace ``path`` with ``data`` atomically."""
    with atomic_open(path, mkdir=mkdir) as fh:
        fh.write(data)


def atomic_write_text(path: str | Path, text: str, *, mkdir: bool = False) -> None:
    """UTF-8 text with ``\\n`` line ends, atomically."""
    atomic_write_bytes(path, text.encode("utf-8"), mkdir=mkdir)


def atomic_write_json(path: str | Path, data: Any, *, indent: int | None = 1, mkdir: bool = False) -> None:
    atomic_write_bytes(path, json.dumps(data, ensure_ascii=False, indent=indent).encode("utf-8"), mkdir=mkdir)


def atomic_write_jsonl(path: str | Path, rows: Iterable[Any], *, mkdir: bool = False) -> None:
    text = "".join(json.dumps(row, ensure_ascii=False) + "\n" for row in rows)
    atomic_write_text(path, text, mkdir=mkdir)


def atomic_save_npy(path: str | Path, array: np.ndarray, *, mkdir: bool = False) -> None:
    """An ``.npy`` file, never pickled (``allow_pickle=False``), atomically."""
    import numpy as np  # here: the CLI imports this module, and a search through a server needs no NumPy

    with atomic_open(path, mkdir=mkdir) as fh:  # streamed: a large array is not copied into memory first
        np.save(fh, array, allow_pickle=False)


# NumPy parses an .npy header with ast.literal_eval, and CPython 3.11's AST constructor is not thread-safe
# (two threads parsing at once raise "SystemError: AST constructor recursion depth mismatch", seen when a
# build thread and a reader opened snapshots together): every .npy this package reads goes through here
_NPY_LOCK = threading.Lock()


def load_npy(path: str | Path, mmap_mode: str | None = None) -> np.ndarray:
    """``np.load`` of an .npy without pickle, its header parsed under a process-wide lock (see above)."""
    import numpy as np

    with _NPY_LOCK:
        return np.load(path, mmap_mode=mmap_mode, allow_pickle=False)


def read_npy_header(fh: BinaryIO) -> tuple[tuple[int, ...], bool, np.dtype]:
    """(shape, fortran_order, dtype) of the .npy whose start ``fh`` is at, under the same lock."""
    import numpy as np

    with _NPY_LOCK:
        major, _ = np.lib.format.read_magic(fh)
        read = np.lib.format.read_array_header_1_0 if major == 1 else np.lib.format.read_array_header_2_0
        return read(fh)


__all__ = ["atomic_open", "atomic_save_npy", "atomic_write_bytes", "atomic_write_json", "atomic_write_jsonl",
           "atomic_write_text", "fsync_dir", "load_npy", "read_npy_header"]
