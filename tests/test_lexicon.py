from pathlib import Path

import pytest

from hanrag.config import Config
from hanrag.lexicon import Lexicon, LexiconError, load_lexicons, parse_lexicon


def _write(tmp_path: Path, text: str, name: str = "lex.tsv") -> Path:
    p = tmp_path / name
    p.write_text(text, encoding="utf-8")
    return p


def test_bundled_lexicons_sizes_and_examples():
    lex = Lexicon.load(["saju"])
    assert len(lex) >= 150
    assert {"甲木", "甲"} <= set(lex.equivalents("갑목"))
    assert {"合沖刑破害", "合冲刑破害"} <= set(lex.equivalents("합충형파해"))
    assert {"寅申沖", "寅申冲"} <= set(lex.equivalents("인신충"))
    assert {"桃花煞", "桃花"} <= set(lex.equivalents("도화살"))
    it = Lexicon.load(["it"])
    assert len(it) >= 80
    assert {"Kubernetes", "K8s"} <= set(it.equivalents("쿠버네티스"))
    assert {"LB", "L4", "L7"} <= set(it.equivalents("로드밸런서"))
    assert it.equivalents("kubernetes") == ["쿠버네티스"]  # reverse direction, case-insensitive


def test_longest_first_non_overlapping():
    lex = Lexicon.load(["saju"])
    assert lex.find_terms("합충형파해를 보라") == ["합충형파해"]
    assert lex.find_terms("합충과 인신충") == ["합충", "인신충"]
    # each position is reported once: no 합충 inside 합충형파해, no double counting
    terms = lex.find_terms("합충형파해 합충형파해")
    assert terms == ["합충형파해", "합충형파해"]


def test_latin_terms_need_word_boundaries():
    lex = Lexicon({"인증": ["auth"]})
    assert lex.find_terms("the author wrote") == []
    assert lex.find_terms("Auth failed") == ["auth"]


def test_parse_errors_carry_line_numbers(tmp_path):
    p = _write(tmp_path, "# comment\n갑목\t甲木\n용신  用神\n")
    with pytest.raises(LexiconError, match=r"lex\.tsv:3: no TAB"):
        parse_lexicon(p)
    p = _write(tmp_path, "갑목\t甲木\n\n갑목\t甲\n")
    with pytest.raises(LexiconError, match=r"lex\.tsv:3: .*already defined on line 1"):
        parse_lexicon(p)
    p = _write(tmp_path, "갑목\t\t甲\n")
    with pytest.raises(LexiconError, match=r"lex\.tsv:1: column 2 is empty"):
        parse_lexicon(p)
    p = tmp_path / "bad.tsv"
    p.write_bytes("갑목\t甲木\n".encode() + b"\xff\xfe\n")
    with pytest.raises(LexiconError, match=r"bad\.tsv:2: not valid UTF-8"):
        parse_lexicon(p)


def test_missing_and_unknown_names(tmp_path):
    with pytest.raises(LexiconError, match="no bundled lexicon"):
        Lexicon.load(["nosuchname"])
    with pytest.raises(LexiconError, match="not found"):
        Lexicon.load(["missing.tsv"], base_dir=tmp_path)


def test_relative_path_against_config_dir_and_merge(tmp_path):
    _write(tmp_path, "# mine\n갑목\t甲木王\n궁통보감\n", name="mine.tsv")
    cfg = Config()
    cfg.lexicon.paths = ["saju", "mine.tsv"]
    cfg.base_dir = str(tmp_path)
    lex = load_lexicons(cfg)
    assert "甲木王" in lex.equivalents("갑목") and "甲木" in lex.equivalents("갑목")
    assert "궁통보감" in lex.words()
    assert lex.content_hash() != Lexicon.load(["saju"]).content_hash()
