"""The on-disk snapshot store: immutable snapshots and an atomically switched pointer.

Layout of an index directory::

    INDEX/
      CURRENT                 name of the published snapshot (switched by os.replace)
      snapshots/<name>/       one immutable snapshot: manifest.json, chunks.jsonl,
                              embeddings.npy, duplicates.json, sparse/...
      snapshots/.tmp-<name>/  a build in progress (removed by the next build if killed)
      cache/                  embedding and token caches shared by builds
      .build.lock             flock held by the one running build

A build writes every file into ``.tmp-<name>``, fsyncs them, writes the manifest
(with a sha256 per file) last, renames the folder into place, then replaces
``CURRENT``. A reader follows ``CURRENT`` and is never affected by a build in progress;
a build killed at any moment leaves the previous snapshot intact.

Integrity: the set of files a snapshot holds is fixed by the format (:data:`SNAPSHOT_FILES`),
so a manifest listing fewer (or more) files is refused; the manifest carries the sha256 of its
own canonical JSON (``manifest_sha256``), and ``CURRENT`` holds, after the snapshot name, the
sha256 of the manifest file it publishes (``manifest-sha256 <hex>``). A ``CURRENT`` without that line
is refused: to roll back by hand, write both lines (the name, then ``manifest-sha256`` and the sha256 of
the older snapshot's ``manifest.json``).

An index is data read from disk: ``CURRENT``, the manifest and every snapshot file must be regular files,
and ``snapshots/``, the snapshot and its ``sparse/`` real folders (no symbolic links, pipes or devices);
the pointer and the manifest are read up to a bound, never whole. Checksums catch accidents (a truncated
copy, a bit flip, a half-written file), not a writer with access to the folder, who can recompute them:
for that, :data:`INDEX_KEY_ENV` seals a snapshot with an HMAC of its manifest (:func:`seal_manifest`).

Size (over 500 lines, on purpose): the pointer, the build lock, the snapshot writer and the bounded readers
of one folder layout; they change together whenever the layout does.
"""

from __future__ import annotations

import contextlib
import datetime as _dt
import errno
import hashlib
import hmac
import json
import os
import shutil
import stat
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import numpy as np

from hanrag.fsutil import atomic_write_bytes, fsync_dir

FORMAT = "hanrag-index"
# 2: fixed file set, manifest_sha256, CURRENT names the manifest's sha256
# 3: memory-mapped chunk records (offsets, sorted ids, filter columns), dup_of.npy, the HNSW graph dense.usearch,
#    edges_sha256 of big files (open checks those; `hanrag doctor` checks the full sha256)
FORMAT_VERSION = 3
POINTER = "CURRENT"
SNAPSHOTS = "snapshots"
TMP_PREFIX = ".tmp-"
MANIFEST = "manifest.json"
LOCK = ".build.lock"
MANIFEST_SUM = "manifest_sha256"
POINTER_SUM = "manifest-sha256"
# every file a snapshot holds besides manifest.json: exactly these, each with its sha256 in the manifest
SNAPSHOT_FILES = frozenset(
    {
        "chunks.jsonl",
        "chunks_offsets.npy",
        "chunk_meta.npy",
        "chunk_ids.npy",
        "chunk_ids_sorted.npy",
        "chunk_ids_rows.npy",
        "dup_of.npy",
        "embeddings.npy",
        "dense.usearch",
        "duplicates.json",
        "sparse/bm25_vocab.json",
        "sparse/bm25_meta.json",
        "sparse/bm25_data.npy",
        "sparse/bm25_indices.npy",
        "sparse/bm25_indptr.npy",
        "sparse/bm25_doc_lens.npy",
    }
)
# files up to this size are sha256-verified whenever a snapshot is opened; a bigger one (vectors, the graph
# at 100k+ chunks: reading 2 GB to hash it would take seconds) gets its size and the sha256 of its first and
# last MiB checked at open (truncation, a rewritten header or tail), the full sha256 in `hanrag doctor`
FULL_VERIFY_MAX_BYTES = 32 << 20
EDGE_BYTES = 1 << 20
POINTER_MAX_BYTES = 4096  # CURRENT: a name and one checksum line
MANIFEST_MAX_BYTES = 64 << 20  # a manifest is tens of KB (config, glossary); anything near this is not one
# the keyed seal: with this variable set, a build signs its manifest (HMAC-SHA256) and an open refuses a
# snapshot that is unsealed or sealed with another key (and hashes every file in full)
INDEX_KEY_ENV = "HANRAG_INDEX_KEY"
SEAL = "seal"
SEAL_ALG = "hmac-sha256"
_SEAL_CONTEXT = b"hanrag-index-seal-v1\n"  # domain separation: the key signs nothing else of this shape
_NAME_CHARS = frozenset("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789-_.")


class IndexLoadError(RuntimeError):
    """An index cannot be opened: missing, corrupt, foreign or from a newer format."""


class IndexBuildError(RuntimeError):
    """A build cannot run (another build holds the lock, bad input chunks ...)."""


# --- durable writes: hanrag.fsutil's helpers (imported above) and fsync of a file written in place ------


def fsync_file(path: Path) -> None:
    with open(path, "rb+") as fh:
        os.fsync(fh.fileno())


def edges_sha256(path: Path) -> str:
    """sha256 of the first and the last :data:`EDGE_BYTES` of a file (the cheap check of a big file)."""
    h = hashlib.sha256()
    size = path.stat().st_size
    with open(path, "rb") as fh:
        h.update(fh.read(EDGE_BYTES))
        if size > EDGE_BYTES:
            fh.seek(max(EDGE_BYTES, size - EDGE_BYTES))
            h.update(fh.read(EDGE_BYTES))
    return h.hexdigest()


def sha256_file(path: Path) -> str:
    h = hashlib.sha256()
    with open(path, "rb") as fh:
        for block in iter(lambda: fh.read(1 << 20), b""):
            h.update(block)
    return h.hexdigest()


# --- pointer and snapshots ---------------------------------------------------------------------


def snapshots_dir(index_dir: Path) -> Path:
    return Path(index_dir) / SNAPSHOTS


def read_regular(path: Path, limit: int, what: str) -> bytes:
    """The bytes of ``path``, a regular file of at most ``limit`` bytes, or IndexLoadError (one line).

    Never follows a symbolic link, never opens a pipe or device (a FIFO would block the reader forever,
    ``/dev/zero`` would be read until memory runs out) and never reads more than ``limit + 1`` bytes.
    FileNotFoundError passes through (a missing pointer means "no index")."""
    try:
        st = os.lstat(path)
    except FileNotFoundError:
        raise
    except OSError as exc:
        raise IndexLoadError(f"{path}: unreadable ({exc.strerror or exc}); rebuild the index") from None
    _require_regular(path, st, what)
    try:
        # O_NONBLOCK: were it swapped for a FIFO after the lstat, the open still returns (and fstat refuses it)
        fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC)
    except FileNotFoundError:
        raise
    except OSError as exc:
        if exc.errno == errno.ELOOP:
            raise IndexLoadError(f"{path}: is a symbolic link, not {what}; rebuild the index") from None
        raise IndexLoadError(f"{path}: unreadable ({exc.strerror or exc}); rebuild the index") from None
    try:
        _require_regular(path, os.fstat(fd), what)
        chunks: list[bytes] = []
        size = 0
        while size <= limit:
            block = os.read(fd, min(1 << 20, limit + 1 - size))
            if not block:
                break
            chunks.append(block)
            size += len(block)
    except OSError as exc:
        raise IndexLoadError(f"{path}: unreadable ({exc.strerror or exc}); rebuild the index") from None
    finally:
        os.close(fd)
    if size > limit:
        raise IndexLoadError(f"{path}: over {limit} bytes, not {what}; rebuild the index")
    return b"".join(chunks)


def _require_regular(path: Path, st: os.stat_result, what: str) -> None:
    if stat.S_ISREG(st.st_mode):
        return
    if stat.S_ISDIR(st.st_mode):
        raise IndexLoadError(f"{path}: is a directory, not {what}; rebuild the index")
    kind = "a symbolic link" if stat.S_ISLNK(st.st_mode) else "not a regular file (a pipe, socket or device)"
    raise IndexLoadError(f"{path}: is {kind}, not {what}; rebuild the index")


def _lstat(path: Path, missing: str) -> os.stat_result:
    """``os.lstat`` with its failures as one-line load errors (``missing`` says what is missing)."""
    try:
        return os.lstat(path)
    except FileNotFoundError:
        raise IndexLoadError(f"{path}: {missing}; rebuild the index") from None
    except OSError as exc:
        raise IndexLoadError(f"{path}: unreadable ({exc.strerror or exc}); rebuild the index") from None


def require_real_dir(path: Path, what: str) -> None:
    """``path`` is a folder itself, not a symbolic link to one (an index's data stays inside the index)."""
    st = _lstat(path, f"{what} missing")
    if stat.S_ISLNK(st.st_mode):
        raise IndexLoadError(f"{path}: is a symbolic link, not {what} inside the index; rebuild the index")
    if not stat.S_ISDIR(st.st_mode):
        raise IndexLoadError(f"{path}: is not a folder ({what}); rebuild the index")


def check_snapshot_tree(snapshot: Path) -> None:
    """The snapshot's folders are real folders and every file of the format a regular file (no links, pipes,
    devices): cheap (one lstat each), run at every open whatever ``verify`` says."""
    snapshot = Path(snapshot)
    if snapshot.parent.name == SNAPSHOTS:
        require_real_dir(snapshot.parent, f"the {SNAPSHOTS}/ folder")
    require_real_dir(snapshot, "a snapshot folder")
    require_real_dir(snapshot / "sparse", "the snapshot's sparse/ folder")
    for rel in sorted(SNAPSHOT_FILES | {MANIFEST}):
        p = snapshot / rel
        _require_regular(p, _lstat(p, "missing file of the snapshot"), "a file of the snapshot")


def read_pointer_full(index_dir: Path) -> tuple[str, str | None] | None:
    """(snapshot name, manifest sha256 or None) from ``CURRENT``; None when there is no pointer.

    A pointer that is not a readable UTF-8 text file naming one snapshot raises IndexLoadError
    naming the file (one line, never a traceback).
    """
    p = Path(index_dir) / POINTER
    try:
        raw = read_regular(p, POINTER_MAX_BYTES, "the snapshot pointer file")
    except FileNotFoundError:
        return None
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise IndexLoadError(
            f"{p}: not valid UTF-8 (byte {exc.start}); the pointer is corrupt, rebuild the index"
        ) from None
    lines = [line.strip() for line in text.splitlines() if line.strip()]
    if not lines:
        return None
    name, digest = lines[0], None
    if not set(name) <= _NAME_CHARS or name.startswith(".") or len(name) > 200:
        raise IndexLoadError(f"{p}: invalid snapshot name {name[:80]!r}; rebuild the index")
    for line in lines[1:]:
        key, _, value = line.partition(" ")
        value = value.strip().lower()
        if key != POINTER_SUM or len(value) != 64 or not set(value) <= set("0123456789abcdef"):
            raise IndexLoadError(f"{p}: unexpected line {line[:80]!r}; rebuild the index")
        digest = value
    return name, digest


def read_pointer(index_dir: Path) -> str | None:
    """The published snapshot's name (None without a pointer); IndexLoadError for a malformed one."""
    full = read_pointer_full(index_dir)
    return full[0] if full else None


def published_snapshot(index_dir: Path) -> str | None:
    """The published snapshot's name, None without a pointer; a malformed one counts as none (nothing is
    treated as published). For clean-up decisions and messages, never to open an index."""
    try:
        return read_pointer(index_dir)
    except IndexLoadError:
        return None


def current_snapshot_dir(index_dir: Path) -> Path:
    """The published snapshot folder, or IndexLoadError saying what is wrong."""
    index_dir = Path(index_dir)
    if not index_dir.is_dir():
        raise IndexLoadError(f"{index_dir}: no such index folder (build one with `hanrag build CORPUS --index DIR`)")
    name = read_pointer(index_dir)
    if name is None:
        raise IndexLoadError(
            f"{index_dir}: not a hanrag index (no {POINTER} pointer file); build one with `hanrag build`"
        )
    return snapshots_dir(index_dir) / name


def list_snapshots(index_dir: Path) -> list[str]:
    """Published snapshot names, oldest first (names sort by creation time)."""
    d = snapshots_dir(index_dir)
    if not d.is_dir():
        return []
    return sorted(p.name for p in d.iterdir() if p.is_dir() and not p.name.startswith("."))


def new_snapshot_name() -> str:
    now = time.time_ns()
    stamp = time.strftime("%Y%m%dT%H%M%S", time.gmtime(now / 1e9))
    return f"{stamp}-{now % 1_000_000_000:09d}-{os.getpid()}"


@contextlib.contextmanager
def build_lock(index_dir: Path) -> Iterator[None]:
    """One build at a time per index; the kernel drops the lock if the build is killed.

    A build that fails or is interrupted (Ctrl-C) in a folder that held no index leaves no lock file behind,
    nor an empty ``snapshots/`` or index folder it made: only what the user had, and the cache (the vectors
    embedded so far, so the next build resumes). Nothing is removed once a snapshot is published."""
    import fcntl

    index_dir = Path(index_dir)
    made_dir = not index_dir.exists()
    index_dir.mkdir(parents=True, exist_ok=True)
    had_index = (index_dir / POINTER).exists() or (index_dir / POINTER).is_symlink()
    made_snapshots = not snapshots_dir(index_dir).exists()
    path = index_dir / LOCK
    while True:
        try:
            fd = os.open(path, os.O_RDWR | os.O_CREAT | os.O_EXCL, 0o644)
            created = True
        except FileExistsError:
            fd = os.open(path, os.O_RDWR | os.O_CREAT, 0o644)
            created = False
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            os.close(fd)
            raise IndexBuildError(f"{index_dir}: another build is running on this index") from None
        # an interrupted first build removes its lock file while holding it: a lock taken on the file it
        # removed (opened just before) would let two builds run, so lock again the file that is there now
        try:
            same = os.path.samestat(os.fstat(fd), os.stat(path))
        except FileNotFoundError:
            same = False
        if same:
            break
        os.close(fd)
    try:
        yield
    except BaseException:
        if created and not had_index and not (index_dir / POINTER).exists():
            _remove_first_build_leftovers(index_dir, path, made_snapshots, made_dir)
        raise
    finally:
        os.close(fd)


def _remove_first_build_leftovers(index_dir: Path, lock: Path, made_snapshots: bool, made_dir: bool) -> None:
    """What a failed first build made and nothing else: the lock file (removed while still held, see
    :func:`build_lock`), ``snapshots/`` and the index folder if this build made them and they are empty."""
    with contextlib.suppress(OSError):
        lock.unlink()
    for made, folder in ((made_snapshots, snapshots_dir(index_dir)), (made_dir, index_dir)):
        if made:
            with contextlib.suppress(OSError):  # not empty (the cache, a user's file): kept
                folder.rmdir()


def clean_leftovers(index_dir: Path) -> list[str]:
    """Remove what a killed build left behind (call under the build lock). Returns removed names."""
    removed: list[str] = []
    d = snapshots_dir(index_dir)
    current = published_snapshot(index_dir)
    if d.is_dir():
        for p in d.iterdir():
            # temp folders, and complete snapshots renamed in but never published (killed before the switch)
            unpublished = current is not None and not p.name.startswith(".") and p.name > current
            if p.is_dir() and (p.name.startswith(TMP_PREFIX) or unpublished):
                shutil.rmtree(p, ignore_errors=True)
                removed.append(p.name)
    for p in list(Path(index_dir).glob(f".{POINTER}.*.tmp")) + list((Path(index_dir) / "cache").rglob(".*.tmp")):
        p.unlink(missing_ok=True)
        removed.append(p.name)
    return removed


def remove_old_snapshots(index_dir: Path, keep: int) -> list[str]:
    """Keep the ``keep`` newest snapshots, and always the one the pointer names."""
    names = list_snapshots(index_dir)
    current = published_snapshot(index_dir)
    keep_set = set(names[-max(1, keep) :]) | ({current} if current else set())
    removed = []
    for name in names:
        if name not in keep_set:
            # rename first (atomic): a reader sees the snapshot whole or not at all, never half-deleted
            doomed = snapshots_dir(index_dir) / f"{TMP_PREFIX}del-{name}"
            try:
                os.replace(snapshots_dir(index_dir) / name, doomed)
            except OSError:
                continue
            shutil.rmtree(doomed, ignore_errors=True)
            removed.append(name)
    return removed


class SnapshotWriter:
    """Writes one snapshot into a temporary folder; :meth:`publish` makes it current."""

    def __init__(self, index_dir: Path) -> None:
        self.index_dir = Path(index_dir)
        self.name = new_snapshot_name()
        snapshots_dir(self.index_dir).mkdir(parents=True, exist_ok=True)
        self.path = snapshots_dir(self.index_dir) / f"{TMP_PREFIX}{self.name}"
        self.path.mkdir()

    def write_jsonl(self, name: str, rows: list[dict[str, Any]]) -> None:
        with open(self.path / name, "w", encoding="utf-8", newline="\n") as fh:
            for row in rows:
                fh.write(json.dumps(row, ensure_ascii=False) + "\n")

    def write_json(self, name: str, data: Any) -> None:
        (self.path / name).write_text(json.dumps(data, ensure_ascii=False, indent=1), encoding="utf-8")

    def write_npy(self, name: str, array: np.ndarray) -> None:
        np.save(self.path / name, array, allow_pickle=False)

    def checksums(self) -> dict[str, dict[str, Any]]:
        files = {}
        for p in sorted(self.path.rglob("*")):
            if p.is_file() and p.name != MANIFEST:
                rel = p.relative_to(self.path).as_posix()
                files[rel] = {"sha256": sha256_file(p), "bytes": p.stat().st_size, "edges_sha256": edges_sha256(p)}
        if set(files) != SNAPSHOT_FILES:
            missing, extra = sorted(SNAPSHOT_FILES - set(files)), sorted(set(files) - SNAPSHOT_FILES)
            raise IndexBuildError(f"{self.path}: snapshot files differ from the format (missing {missing}, "
                                  f"unexpected {extra})")
        return files

    def publish(self, manifest: dict[str, Any]) -> Path:
        """fsync everything, write the manifest, rename into place, switch the pointer."""
        for p in self.path.rglob("*"):
            if p.is_file():
                fsync_file(p)
        pointer = self.index_dir / POINTER
        if pointer.is_dir():
            raise IndexBuildError(f"{pointer}: is a directory, not the snapshot pointer file; remove it")
        manifest = {
            "format": FORMAT,
            "format_version": FORMAT_VERSION,
            "snapshot": self.name,
            "created_at": _dt.datetime.now(_dt.UTC).isoformat(timespec="seconds"),
            **manifest,
            "files": self.checksums(),
        }
        key = index_key(IndexBuildError)
        if key is not None:
            manifest[SEAL] = {"alg": SEAL_ALG, "mac": seal_manifest(manifest, key)}
        manifest[MANIFEST_SUM] = manifest_digest(manifest)
        self.write_json(MANIFEST, manifest)
        fsync_file(self.path / MANIFEST)
        manifest_sum = sha256_file(self.path / MANIFEST)
        for d in {p.parent for p in self.path.rglob("*")} | {self.path}:
            fsync_dir(d)
        final = snapshots_dir(self.index_dir) / self.name
        os.replace(self.path, final)
        fsync_dir(final.parent)
        self.path = final
        atomic_write_bytes(pointer, f"{self.name}\n{POINTER_SUM} {manifest_sum}\n".encode())
        return final

    def abort(self) -> None:
        if self.path.name.startswith(TMP_PREFIX):
            shutil.rmtree(self.path, ignore_errors=True)


# --- loading ---------------------------------------------------------------------------------


def manifest_digest(manifest: dict[str, Any]) -> str:
    """sha256 of the manifest's canonical JSON without its own checksum field."""
    body = {k: v for k, v in manifest.items() if k != MANIFEST_SUM}
    blob = json.dumps(body, sort_keys=True, ensure_ascii=False, separators=(",", ":"), allow_nan=False)
    return hashlib.sha256(blob.encode("utf-8")).hexdigest()


def index_key(error: type[Exception] = RuntimeError) -> bytes | None:
    """The sealing key from :data:`INDEX_KEY_ENV`, None when it is not set; a blank value raises ``error``
    (an empty key would seal with nothing secret, and an unset one by mistake would silently not seal)."""
    raw = os.environ.get(INDEX_KEY_ENV)
    if raw is None:
        return None
    if not raw.strip():
        raise error(f"{INDEX_KEY_ENV} is set but blank; set the key, or unset the variable")
    return raw.encode("utf-8")


def seal_manifest(manifest: dict[str, Any], key: bytes) -> str:
    """HMAC-SHA256 (hex) of the manifest's canonical JSON without its seal and own checksum: the manifest
    holds every file's sha256, so the seal covers every byte of the snapshot."""
    body = {k: v for k, v in manifest.items() if k not in (MANIFEST_SUM, SEAL)}
    blob = json.dumps(body, sort_keys=True, ensure_ascii=False, separators=(",", ":"), allow_nan=False)
    return hmac.new(key, _SEAL_CONTEXT + blob.encode("utf-8"), hashlib.sha256).hexdigest()


def check_seal(path: Path, manifest: dict[str, Any], key: bytes) -> None:
    """With a key set, the manifest must carry a seal made with that key."""
    seal = manifest.get(SEAL)
    if not isinstance(seal, dict) or not isinstance(seal.get("mac"), str):
        raise IndexLoadError(f"{path}: the snapshot is not sealed but {INDEX_KEY_ENV} is set; rebuild the index "
                             "with the key set, or unset it")
    try:
        want = seal_manifest(manifest, key)
    except ValueError:  # NaN / Infinity in a number: not a manifest this hanrag wrote
        want = ""
    if seal.get("alg") != SEAL_ALG or not hmac.compare_digest(seal["mac"].encode(), want.encode()):
        raise IndexLoadError(f"{path}: the seal does not match {INDEX_KEY_ENV} (another key, or the snapshot was "
                             "edited); rebuild the index with the key set")


def read_manifest(snapshot: Path, expected_sha256: str | None = None, key: bytes | None = None) -> dict[str, Any]:
    """The snapshot's manifest, its format, own checksum and file list checked.

    ``expected_sha256`` (from ``CURRENT``) is the sha256 the manifest file must have; ``key`` (the sealing key,
    :func:`index_key`) the key its seal must have been made with.
    """
    path = Path(snapshot) / MANIFEST
    try:
        raw = read_regular(path, MANIFEST_MAX_BYTES, "a snapshot manifest")
        data = json.loads(raw.decode("utf-8"))
    except FileNotFoundError:
        raise IndexLoadError(f"{path}: missing; the snapshot is incomplete or not a hanrag index") from None
    except (UnicodeDecodeError, json.JSONDecodeError, RecursionError) as exc:
        raise IndexLoadError(f"{path}: corrupt manifest ({exc}); rebuild the index with `hanrag build`") from None
    if not isinstance(data, dict) or data.get("format") != FORMAT:
        raise IndexLoadError(f"{path}: not a hanrag index manifest (foreign index?)")
    version = data.get("format_version")
    if not isinstance(version, int) or isinstance(version, bool) or version > FORMAT_VERSION:
        raise IndexLoadError(
            f"{path}: index format version {version!r} is not supported (this hanrag reads {FORMAT_VERSION}); "
            "upgrade hanrag or rebuild the index"
        )
    if version < FORMAT_VERSION:
        raise IndexLoadError(
            f"{path}: index format version {version} is older than this hanrag's {FORMAT_VERSION} (no memory-mapped "
            "records, no HNSW graph); rebuild the index with `hanrag build`"
        )
    own = data.get(MANIFEST_SUM)
    try:
        digest = manifest_digest(data)
    except ValueError:  # NaN / Infinity in a number
        digest = ""
    if not isinstance(own, str) or own != digest:
        raise IndexLoadError(
            f"{path}: the manifest's own checksum ({MANIFEST_SUM}) does not match its content "
            "(edited or corrupt); rebuild the index"
        )
    if expected_sha256 is not None and hashlib.sha256(raw).hexdigest() != expected_sha256:
        raise IndexLoadError(
            f"{path}: sha256 differs from the one {POINTER} recorded when it was published "
            "(edited or corrupt); rebuild the index"
        )
    if key is not None:
        check_seal(path, data, key)
    files = data.get("files")
    if not isinstance(files, dict):
        raise IndexLoadError(f"{path}: manifest has no file checksums; rebuild the index")
    missing, extra = sorted(SNAPSHOT_FILES - set(files)), sorted(set(files) - SNAPSHOT_FILES)
    if missing or extra:
        what = (f"does not list {', '.join(missing)}" if missing else "") + (
            ("; " if missing else "") + f"lists unexpected {', '.join(extra)}" if extra else ""
        )
        raise IndexLoadError(f"{path}: the manifest {what} (every snapshot file must be checksummed); "
                             "rebuild the index")
    for rel, info in files.items():
        if (
            not isinstance(info, dict)
            or not isinstance(info.get("sha256"), str)
            or len(info["sha256"]) != 64
            or not isinstance(info.get("bytes"), int)
            or isinstance(info.get("bytes"), bool)
        ):
            raise IndexLoadError(f"{path}: bad checksum entry for {rel}; rebuild the index")
    return data


def verify_files(snapshot: Path, manifest: dict[str, Any], *, full: bool = True) -> None:
    """Every file of the format exists, as the manifest lists it, with its size and sha256.

    ``full=False`` (opening for search): a file over :data:`FULL_VERIFY_MAX_BYTES` is checked by size and
    ``edges_sha256`` only, so opening a million-chunk index does not read gigabytes."""
    for rel in sorted(SNAPSHOT_FILES):
        info = manifest["files"][rel]
        p = Path(snapshot) / rel
        if p.is_symlink() or not p.is_file():
            raise IndexLoadError(f"{p}: missing file (or not a regular file) of the snapshot; rebuild the index")
        if p.stat().st_size != info.get("bytes"):
            raise IndexLoadError(f"{p}: size differs from the manifest (corrupt index); rebuild the index")
        if not full and info["bytes"] > FULL_VERIFY_MAX_BYTES:
            if edges_sha256(p) != info.get("edges_sha256"):
                raise IndexLoadError(f"{p}: checksum of its first/last MiB differs from the manifest (corrupt "
                                     "index); rebuild the index")
            continue
        if sha256_file(p) != info.get("sha256"):
            raise IndexLoadError(f"{p}: checksum differs from the manifest (corrupt index); rebuild the index")


# --- which source an index holds (files vs. Confluence) ----------------------------------------
# Here, below both the corpus build and the Confluence sync, so each checks the other without importing it.

CONFLUENCE_STATE_DIR = "confluence"  # INDEX/confluence/: the sync's state.json and documents.jsonl
CONFLUENCE_STATE_FILES = ("state.json", "documents.jsonl")


class IndexSourceError(IndexBuildError):
    """An index folder holds documents of another source (files vs. Confluence); nothing was changed."""


def index_source(index_dir: str | Path) -> str:
    """``"confluence"``, ``"files"`` or ``"none"`` (no index yet, or an empty one).

    The sync state marks a Confluence index; without it (a first sync interrupted after
    publishing, before saving its state) the current snapshot's first document id decides,
    since every synced page's id starts with ``confluence:``.
    """
    index_dir = Path(index_dir)
    if any((index_dir / CONFLUENCE_STATE_DIR / name).is_file() for name in CONFLUENCE_STATE_FILES):
        return "confluence"
    try:
        with open(current_snapshot_dir(index_dir) / "chunks.jsonl", encoding="utf-8") as fh:
            first = next((line for line in fh if line.strip()), "")
        doc_id = str(json.loads(first).get("doc_id", "")) if first else ""
    except (IndexLoadError, OSError, ValueError, AttributeError):
        return "none"
    if not doc_id:
        return "none"
    return "confluence" if doc_id.startswith("confluence:") else "files"


def check_index_source(index_dir: str | Path, wanted: str) -> None:
    """Raise :class:`IndexSourceError` when ``index_dir`` holds another source than ``wanted``."""
    found = index_source(index_dir)
    if found in ("none", wanted):
        return
    if found == "confluence":
        raise IndexSourceError(
            f"{index_dir}: this index is synced from Confluence; building it from a corpus folder would replace "
            "every synced page. Use `hanrag sync confluence` (or POST /index/rebuild with source confluence), "
            "or build the corpus into another index folder"
        )
    raise IndexSourceError(
        f"{index_dir}: this index was built from a corpus folder; a Confluence sync would replace every file "
        "document. Sync into another index folder (`hanrag sync confluence --index OTHER`)"
    )
