"""Domain lexicons: user-editable term lists that map a term to its equivalents.

File format (UTF-8, one entry a line, TAB-separated; ``#`` starts a comment line)::

    # term<TAB>equivalent<TAB>equivalent ...
    갑목	甲木	甲
    쿠버네티스	Kubernetes	K8s
    궁통보감                      ← a term alone: a word the analysers must never split

Rules checked on load (errors read ``path:line: message``): the first column is
the term; every further column is one equivalent (may contain spaces, e.g.
``Load Balancer``); no empty columns; a term appears once per file; a line without
a TAB must be a single word (a common mistake is separating columns with spaces).

Several lexicons may be active (``[lexicon] paths``); bundled ones are named
``saju`` (Korean → Hanja, traditional and simplified) and ``it`` (Korean ↔ English)
and ship inside the package as ``hanrag/lexicons/NAME.tsv``. Relative paths resolve against the config
file's folder.

Hangul terms are found on morpheme borders only (:meth:`Lexicon.find_terms` with a ``border`` test, which
the query analyser answers with Kiwi): a term may carry particles and endings (갑목이, 배포를, 롤백하는) but is
never taken out of another word (인가 in 무엇인가요, 득세 in 취득세).

A lexicon may name its terms that are also ordinary Korean words with a different everyday sense, on
``#!homographs`` lines (the bundled ``saju``: 지지 支持 beside 地支, 연주 演奏, 상관 相關, 세운 from 세우다).
Such a term counts in a query only beside one of that lexicon's terms that is not a homograph (천간과 지지),
so "정부를 지지하는 여론" is not a Saju question.

Expansion direction: a term expands to all its equivalents; an equivalent expands
back to the term(s) listing it (甲木 → 갑목), not to its siblings, so Redis does not
drift into Memcached.
"""

from __future__ import annotations

import hashlib
import json
import os
import re
import stat
import unicodedata
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING

from hanrag.bundled import LEXICON_DIR

if TYPE_CHECKING:
    from hanrag.config import Config

BUNDLED_DIR = LEXICON_DIR
MIN_TERM_CHARS = 2
_LATIN = re.compile(r"[0-9A-Za-z]")
_HANGUL = re.compile(r"[\uac00-\ud7a3]")
# given the folded query text, a test of whether a Hangul span (start, end) stands on morpheme borders
Border = Callable[[str], Callable[[int, int], bool]]


class LexiconError(ValueError):
    """A lexicon file problem; the message starts with ``path:line:``."""


def bundled_names() -> list[str]:
    return sorted(p.stem for p in BUNDLED_DIR.glob("*.tsv"))


def resolve_lexicon_path(name: str, base_dir: str | Path | None = None) -> Path:
    if "/" not in name and "\\" not in name and "." not in name:
        p = BUNDLED_DIR / f"{name}.tsv"
        if p.is_file():
            return p
        raise LexiconError(f"{name}: no bundled lexicon of that name (bundled: {', '.join(bundled_names())})")
    p = Path(name).expanduser()
    if not p.is_absolute() and base_dir:
        p = Path(base_dir) / p
    return p


HOMOGRAPHS_DIRECTIVE = "#!homographs"


def lexicon_homographs(path: Path) -> set[str]:
    """The words a file lists on its ``#!homographs`` lines (space-separated)."""
    out: set[str] = set()
    for line in _read_lexicon_text(path).splitlines():
        line = unicodedata.normalize("NFKC", line).strip()
        if line.startswith(HOMOGRAPHS_DIRECTIVE):
            out.update(w.casefold() for w in line[len(HOMOGRAPHS_DIRECTIVE):].split())
    return out


MAX_LEXICON_BYTES = 64 * 1024 * 1024  # the bundled ones are ~100 KB; a bigger file is not a lexicon


def _read_lexicon_text(path: Path) -> str:
    """The text of a lexicon file: a regular file of at most :data:`MAX_LEXICON_BYTES` (a FIFO, a device or a huge
    file named by mistake is refused in one line, never read whole)."""
    try:
        # O_NONBLOCK: opening a FIFO must not wait for a writer; on a regular file it changes nothing
        with os.fdopen(os.open(path, os.O_RDONLY | getattr(os, "O_NONBLOCK", 0)), "rb") as fh:
            if not stat.S_ISREG(os.fstat(fh.fileno()).st_mode):
                raise LexiconError(f"{path}: not a lexicon file (not a regular file)")
            raw = fh.read(MAX_LEXICON_BYTES + 1)
    except FileNotFoundError:
        raise LexiconError(f"{path}: lexicon file not found") from None
    except OSError as exc:
        raise LexiconError(f"{path}: cannot read ({exc.strerror or exc})") from None
    if len(raw) > MAX_LEXICON_BYTES:
        raise LexiconError(f"{path}: larger than {MAX_LEXICON_BYTES >> 20} MiB: not a lexicon file")
    if b"\x00" in raw[:8192]:
        raise LexiconError(f"{path}: not a lexicon file (binary data); a lexicon is UTF-8 text, term<TAB>equivalent")
    try:
        text = raw.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        line = raw[: exc.start].count(b"\n") + 1
        raise LexiconError(f"{path}:{line}: not valid UTF-8 (byte {exc.start})") from None
    return text


def parse_lexicon(path: Path) -> dict[str, list[str]]:
    """Read one lexicon file into term -> equivalents, raising LexiconError with line numbers."""
    text = _read_lexicon_text(path)
    entries: dict[str, list[str]] = {}
    first_line: dict[str, int] = {}
    for n, line in enumerate(text.splitlines(), 1):
        line = unicodedata.normalize("NFKC", line).rstrip()
        if not line.strip() or line.lstrip().startswith("#"):
            continue
        cells = [c.strip() for c in line.split("\t")]
        if len(cells) == 1 and re.search(r"\s", cells[0]):
            raise LexiconError(f"{path}:{n}: no TAB found; separate the term and its equivalents with TABs")
        for i, c in enumerate(cells, 1):
            if not c:
                raise LexiconError(f"{path}:{n}: column {i} is empty (two TABs in a row or a trailing TAB?)")
        term, equivs = cells[0], cells[1:]
        if len(term) < MIN_TERM_CHARS:
            raise LexiconError(f"{path}:{n}: term {term!r} is shorter than {MIN_TERM_CHARS} characters")
        key = term.casefold()
        if key in first_line:
            raise LexiconError(f"{path}:{n}: term {term!r} already defined on line {first_line[key]}")
        if any(e.casefold() == key for e in equivs):
            raise LexiconError(f"{path}:{n}: term {term!r} lists itself as an equivalent")
        first_line[key] = n
        entries[term] = list(dict.fromkeys(equivs))
    return entries


@dataclass
class Lexicon:
    entries: dict[str, list[str]] = field(default_factory=dict)  # term -> equivalents
    sources: tuple[str, ...] = ()
    # casefolded: the terms and equivalents of lexicons that list homographs, and those homographs
    context_forms: frozenset[str] = frozenset()
    homographs: frozenset[str] = frozenset()

    def __post_init__(self) -> None:
        self._forward: dict[str, list[str]] = {}
        self._reverse: dict[str, list[str]] = {}
        self._surface: dict[str, str] = {}  # casefolded form -> form as written
        for term, equivs in self.entries.items():
            k = term.casefold()
            self._surface.setdefault(k, term)
            fwd = self._forward.setdefault(k, [])
            fwd.extend(e for e in equivs if e not in fwd)
            for e in equivs:
                self._surface.setdefault(e.casefold(), e)
                rev = self._reverse.setdefault(e.casefold(), [])
                if term not in rev:
                    rev.append(term)
        # term finding only uses forms of >= 2 characters
        self._findable = {k for k in self._surface if len(k) >= MIN_TERM_CHARS}
        self._max_len = max((len(k) for k in self._findable), default=0)

    @classmethod
    def load(cls, paths: Iterable[str | Path], base_dir: str | Path | None = None) -> Lexicon:
        """Load and merge lexicons (later files add equivalents to terms of earlier ones)."""
        merged: dict[str, list[str]] = {}
        sources = []
        context: set[str] = set()
        homographs: set[str] = set()
        for name in paths:
            p = resolve_lexicon_path(str(name), base_dir)
            sources.append(str(p))
            entries = parse_lexicon(p)
            for term, equivs in entries.items():
                cur = merged.setdefault(term, [])
                cur.extend(e for e in equivs if e not in cur)
            listed = lexicon_homographs(p)
            forms = {w.casefold() for t, eq in entries.items() for w in (t, *eq)}
            if unknown := sorted(listed - forms):
                raise LexiconError(f"{p}: #!homographs names words that are not in the lexicon: {', '.join(unknown)}")
            if listed:
                context.update(forms)
                homographs.update(listed)
        return cls(merged, tuple(sources), frozenset(context), frozenset(homographs))

    def __len__(self) -> int:
        return len(self.entries)

    def words(self) -> set[str]:
        """Every term and equivalent (fed to Kiwi and jieba as user words)."""
        return set(self.entries) | {e for equivs in self.entries.values() for e in equivs}

    def equivalents(self, term: str) -> list[str]:
        """A term's equivalents, or for an equivalent the term(s) that list it."""
        k = unicodedata.normalize("NFKC", term).casefold()
        out = list(self._forward.get(k, []))
        out.extend(t for t in self._reverse.get(k, []) if t not in out)
        return out

    def find_terms(self, text: str, border: Border | None = None) -> list[str]:
        """Known terms (≥ 2 chars) in ``text``, longest first among overlaps, reported in text order."""
        return [surface for _, _, surface in self.find_spans(text, border)]

    def find_spans(self, text: str, border: Border | None = None) -> list[tuple[int, int, str]]:
        """``(start, end, term as written in the lexicon)`` of each term found, offsets into the NFKC-casefolded
        text, in text order.

        A term with Latin letters must stand alone (auth is not found inside author). A Hangul term is taken
        where ``border(folded_text)(start, end)`` allows it (the query analyser passes Kiwi's morpheme
        borders); without ``border`` it matches anywhere, which only callers with no morphology want.
        Candidates are tested before the longest-first choice, so a rejected long one never hides a shorter
        term that stands on its own."""
        if not self._findable:
            return []
        folded = unicodedata.normalize("NFKC", text).casefold()
        n = len(folded)
        allowed = border(folded) if border is not None and _HANGUL.search(folded) else None
        cands: list[tuple[int, int]] = []
        for i in range(n):
            for j in range(min(n, i + self._max_len), i + MIN_TERM_CHARS - 1, -1):
                s = folded[i:j]
                if s in self._findable and self._latin_ok(folded, i, j) and (
                        allowed is None or not _HANGUL.search(s) or allowed(i, j)):
                    cands.append((i, j))
        # longest first; at equal length the leftmost; then keep non-overlapping ones
        cands.sort(key=lambda c: (-(c[1] - c[0]), c[0]))
        taken = bytearray(n)
        chosen = []
        for i, j in cands:
            if not any(taken[i:j]):
                taken[i:j] = b"\x01" * (j - i)
                chosen.append((i, j))
        chosen.sort()
        return [(i, j, self._surface[folded[i:j]]) for i, j in chosen]

    @staticmethod
    def _latin_ok(text: str, i: int, j: int) -> bool:
        s = text[i:j]
        if _LATIN.search(s) is None:
            return True
        before = text[i - 1] if i > 0 else " "
        after = text[j] if j < len(text) else " "
        return not (_LATIN.match(before) and _LATIN.match(s[0])) and not (_LATIN.match(after) and _LATIN.match(s[-1]))

    def content_hash(self) -> str:
        blob = json.dumps(sorted(self.entries.items()), ensure_ascii=False).encode()
        return hashlib.sha256(blob).hexdigest()[:16]


def load_lexicons(cfg: Config) -> Lexicon:
    """The lexicons named by ``cfg.lexicon.paths``, relative paths against the config's folder."""
    return Lexicon.load(cfg.lexicon.paths, base_dir=cfg.base_dir or None)
