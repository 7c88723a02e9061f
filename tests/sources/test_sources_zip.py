"""A zip's member sizes are the writer's claim: the Confluence export reader bounds the bytes it decompresses."""

from __future__ import annotations

import struct
import zipfile
from pathlib import Path

from hanrag.config import Config
from hanrag.sources import read_corpus
from hanrag.sources.confluence_export import _read_member, _TooLarge


def _page(title: str, body: str) -> str:
    return (f'<html><body><span id="title-text">Dev : {title}</span>'
            f'<div id="main-content"><p>{body}</p></div></body></html>')


def _lie_about_size(path: Path, member: str, claimed: int) -> None:
    """Rewrite ``member``'s uncompressed size in the local and central headers to ``claimed``."""
    data = bytearray(path.read_bytes())
    name = member.encode()
    at = 0
    while (at := data.find(b"PK\x03\x04", at)) >= 0:  # local file headers: size at +22
        if data[at + 30: at + 30 + len(name)] == name:
            struct.pack_into("<I", data, at + 22, claimed)
        at += 4
    at = 0
    while (at := data.find(b"PK\x01\x02", at)) >= 0:  # central directory: size at +24
        if data[at + 46: at + 46 + len(name)] == name:
            struct.pack_into("<I", data, at + 24, claimed)
        at += 4
    path.write_bytes(bytes(data))


def test_a_member_whose_header_understates_its_size_is_skipped_alone(tmp_path: Path) -> None:
    bomb = "DEV/Bomb_2.html"
    with zipfile.ZipFile(tmp_path / "export.zip", "w", zipfile.ZIP_DEFLATED) as zf:
        zf.writestr("DEV/Guide_1.html", _page("Guide", "롤링 배포 maxSurge 설정."))
        zf.writestr(bomb, _page("Bomb", "가" * 2_000_000))  # 6 MB of text, a few KB compressed
    _lie_about_size(tmp_path / "export.zip", bomb, 120)
    with zipfile.ZipFile(tmp_path / "export.zip") as zf:
        assert zf.getinfo(bomb).file_size == 120  # the lie is what the zip reports
    cfg = Config()
    cfg.corpus.extensions = [".zip"]
    docs, findings = read_corpus(tmp_path, cfg)
    assert [d.title for d in docs] == ["Guide"]  # the honest page is still read
    assert any(f.path.endswith(bomb) and f.code in {"bad-zip-member", "too-large"} for f in findings)
    assert not any(f.code == "read-failed" for f in findings)


def test_the_bound_is_on_bytes_produced_not_on_the_header(tmp_path: Path) -> None:
    with zipfile.ZipFile(tmp_path / "z.zip", "w", zipfile.ZIP_DEFLATED) as zf:
        zf.writestr("a.html", "x" * 100_000)
    with zipfile.ZipFile(tmp_path / "z.zip") as zf:
        info = zf.getinfo("a.html")
        assert len(_read_member(zf, info, 100_000)) == 100_000
        try:
            _read_member(zf, info, 99_999)
        except _TooLarge:
            pass
        else:
            raise AssertionError("a member over the limit was read whole")
