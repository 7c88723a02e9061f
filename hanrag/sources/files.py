"""Read a folder tree of files into :class:`~hanrag.records.Document` records: the walk and the readers by extension.

Files are only ever read: nothing here writes, moves or deletes a user's file.
Each problem becomes a :class:`~hanrag.records.Finding` that names the file, and the walk goes on.

Only regular files are read (:func:`walk_corpus`): named pipes, sockets and devices,
unreadable files and folders, broken symlinks, symlink loops and symlinks that leave the
corpus root (unless ``[corpus] follow_symlinks = true``) are findings, never a hang or a
silent skip. A file name that is not valid UTF-8 (a CP949 name from an old zip) is read
under its escaped name (each undecodable byte as ``\\xNN``, see
:func:`hanrag.sources.document.display_name`) with a finding. The walk keeps its own stack and stops
:data:`MAX_FOLDER_DEPTH` folders down with a finding.

Readers are looked up by lower-case extension in :data:`READERS`; the converters (HTML, PDF, OpenAPI,
Confluence export) are imported on their first file, since they pull in heavy libraries. A reader gets
``(file, corpus_root, cfg)`` and returns ``(Document | None, findings)``; the helpers they share
(decoding, :func:`~hanrag.sources.document.make_document`) are in :mod:`hanrag.sources.document` and front
matter in :mod:`hanrag.front_matter`, so no reader imports this module back.
"""

from __future__ import annotations

import errno
import os
import stat
from pathlib import Path
from typing import Any

from hanrag.config import Config
from hanrag.records import Document, Finding
from hanrag.sources.document import Reader, display_name, read_text_file, relative_id, special_file_finding

# folders nested deeper than this below the corpus root are skipped with one finding
MAX_FOLDER_DEPTH = 100


def _lazy_reader(module: str, name: str) -> Reader:
    """A reader imported on its first file: converters pull in heavy libraries (pdfium, lxml) that a corpus
    of Markdown never needs."""

    def reader(path: Path, root: Path, cfg: Config) -> tuple[Document | None, list[Finding]]:
        import importlib  # the reader module is imported on its first file (heavy libraries)

        return getattr(importlib.import_module(module), name)(path, root, cfg)

    reader.__name__ = name
    return reader


READERS: dict[str, Reader] = {
    ".md": read_text_file,
    ".markdown": read_text_file,
    ".txt": read_text_file,
    ".html": _lazy_reader("hanrag.sources.html", "read_html"),
    ".htm": _lazy_reader("hanrag.sources.html", "read_html"),
    ".pdf": _lazy_reader("hanrag.sources.pdf", "read_pdf"),
    ".json": _lazy_reader("hanrag.sources.openapi", "read_openapi"),
    ".yaml": _lazy_reader("hanrag.sources.openapi", "read_openapi"),
    ".yml": _lazy_reader("hanrag.sources.openapi", "read_openapi"),
    # a Confluence HTML space export; its reader returns a list of Documents (one per page)
    ".zip": _lazy_reader("hanrag.sources.confluence_export", "read_confluence_export"),
}


def _within(path: str, root: str) -> bool:
    return path == root or path.startswith(root.rstrip(os.sep) + os.sep)


def _bad_name_finding(rel: str, name: str) -> Finding | None:
    if display_name(name) == name:
        return None
    raw = os.fsencode(name)
    guess = ""
    for enc in ("cp949", "gb18030", "big5", "shift_jis"):
        try:
            guess = f"; as {enc.upper()} it reads {raw.decode(enc)!r}"
            break
        except UnicodeDecodeError:
            continue
    return Finding(
        rel,
        "warning",
        "non-utf8-name",
        f"the name is not valid UTF-8; read under the escaped name {display_name(name)!r}{guess}. "
        "Rename it to UTF-8 to get a readable id",
    )


def walk_corpus(root: Path, cfg: Config) -> tuple[list[Path], list[Finding]]:
    """Regular files under ``root`` (sorted, hidden entries skipped) whose extension has a reader,
    and a finding for every entry that cannot be read safely.

    Nothing is opened here: entries are classified by ``lstat``/``stat``. Symlinks are followed
    when their target stays inside the corpus root (files; folders only with
    ``follow_symlinks``); a target outside the root needs ``[corpus] follow_symlinks = true``.
    Followed folders are tracked by (device, inode), so a loop is reported once, not walked.
    Folders more than :data:`MAX_FOLDER_DEPTH` levels down are skipped with a ``too-deep`` finding.
    """
    wanted = {e.lower() if e.startswith(".") else f".{e.lower()}" for e in cfg.corpus.extensions}
    follow = bool(getattr(cfg.corpus, "follow_symlinks", False))
    root = Path(root)
    findings: list[Finding] = []
    files: list[Path] = []

    def want(name: str) -> bool:
        suffix = Path(name).suffix.lower()
        return suffix in wanted and suffix in READERS

    try:
        root_st = os.stat(root)
    except OSError as exc:
        return [], [Finding(display_name(str(root)), "error", "unreadable", f"cannot read: {exc.strerror or exc}")]
    if not stat.S_ISDIR(root_st.st_mode):
        if not stat.S_ISREG(root_st.st_mode):
            return [], [special_file_finding(display_name(root.name), root_st.st_mode)]
        return ([root] if want(root.name) else []), []
    base = root
    root_real = os.path.realpath(root)
    visited: set[tuple[int, int]] = {(root_st.st_dev, root_st.st_ino)}

    def listing(folder: Path) -> list[os.DirEntry[str]] | None:
        try:
            with os.scandir(folder) as it:
                return sorted(it, key=lambda e: e.name)
        except OSError as exc:
            rel = relative_id(folder, base) if folder != base else "."
            findings.append(
                Finding(rel, "error", "unreadable", f"cannot list folder: {exc.strerror or exc}; its files are skipped")
            )
            return None

    # depth first in name order, with an explicit stack (a corpus 1,200 folders deep must not reach
    # Python's recursion limit): one frame per folder being listed, with the (device, inode) that marks
    # it visited while its subtree is walked
    top = listing(root)
    stack: list[tuple[Path, Any, tuple[int, int] | None]] = [] if top is None else [(root, iter(top), None)]
    while stack:
        folder, entries, folder_key = stack[-1]
        entry = next(entries, None)
        if entry is None:
            stack.pop()
            if folder_key is not None:
                visited.discard(folder_key)
            continue
        name = entry.name
        if name.startswith("."):
            continue
        path = folder / name
        rel = relative_id(path, base)
        try:
            lst = entry.stat(follow_symlinks=False)
        except OSError as exc:
            findings.append(Finding(rel, "error", "unreadable", f"cannot stat: {exc.strerror or exc}"))
            continue
        is_link = stat.S_ISLNK(lst.st_mode)
        st = lst
        if is_link:
            target = os.path.realpath(path)
            try:
                st = os.stat(path)
            except OSError as exc:
                if exc.errno == errno.ELOOP:
                    findings.append(Finding(rel, "warning", "symlink-loop", "symlink loop; skipped"))
                elif want(name):
                    why = exc.strerror or exc
                    msg = f"symlink to {target}: {why}; skipped"
                    findings.append(Finding(rel, "warning", "broken-symlink", msg))
                continue
            if stat.S_ISDIR(st.st_mode) and _within(os.path.realpath(folder), target):
                findings.append(
                    Finding(rel, "warning", "symlink-loop", f"folder symlink to {target} (contains it); skipped")
                )
                continue
            inside = _within(target, root_real)
            if not inside and not follow:
                if stat.S_ISDIR(st.st_mode) or want(name):
                    findings.append(
                        Finding(
                            rel,
                            "warning",
                            "symlink-outside",
                            f"symlink to {target}, outside the corpus root; skipped "
                            "(set [corpus] follow_symlinks = true to read it)",
                        )
                    )
                continue
            if stat.S_ISDIR(st.st_mode) and not follow:
                findings.append(
                    Finding(
                        rel,
                        "info",
                        "symlink-dir",
                        f"folder symlink to {target}; skipped, its files are read where they live "
                        "(set [corpus] follow_symlinks = true to follow it)",
                    )
                )
                continue
        if stat.S_ISDIR(st.st_mode):
            key = (st.st_dev, st.st_ino)
            if key in visited:
                findings.append(
                    Finding(rel, "warning", "symlink-loop", "folder is its own ancestor (a loop); skipped")
                )
                continue
            if bad := _bad_name_finding(rel, name):
                findings.append(bad)
            if len(stack) > MAX_FOLDER_DEPTH:
                findings.append(
                    Finding(rel, "warning", "too-deep",
                            f"folder nested more than {MAX_FOLDER_DEPTH} levels below the corpus root; "
                            "skipped with everything under it")
                )
                continue
            sub = listing(path)
            if sub is not None:
                visited.add(key)  # the folders being walked (this one and its ancestors): a loop is a revisit
                stack.append((path, iter(sub), key))
            continue
        if not want(name):
            continue
        if not stat.S_ISREG(st.st_mode):
            findings.append(special_file_finding(rel, st.st_mode))
            continue
        if not os.access(path, os.R_OK):
            findings.append(Finding(rel, "error", "unreadable", "cannot read: permission denied; skipped"))
            continue
        if bad := _bad_name_finding(rel, name):
            findings.append(bad)
        files.append(path)
    return files, findings


def read_corpus(root: Path, cfg: Config) -> tuple[list[Document], list[Finding]]:
    """Read every configured file under ``root`` (a folder, or one file) into Documents.

    Returns the documents in path order and every finding met on the way; one bad file
    never stops the walk.
    """
    root = Path(root)
    if not root.exists():
        return [], [Finding(display_name(str(root)), "error", "not-found", "corpus path does not exist")]
    base = root if root.is_dir() else root.parent
    documents: list[Document] = []
    paths, findings = walk_corpus(root, cfg)
    for path in paths:
        reader = READERS[path.suffix.lower()]
        try:
            doc, file_findings = reader(path, base, cfg)
        except Exception as exc:
            doc, file_findings = (
                None,
                [Finding(relative_id(path, base), "error", "read-failed", f"{type(exc).__name__}: {exc}")],
            )
        findings.extend(file_findings)
        if isinstance(doc, list):  # a container (Confluence export zip) yields several documents
            documents.extend(doc)
        elif doc is not None:
            documents.append(doc)
    return documents, findings
