"""The inspector's Markdown renderer (hanrag/static/markdown.js) under node, no browser needed.

Each case runs the renderer in one node process and compares its escaped HTML serialisation; a tiny
fake DOM checks toDom(): only the renderer's own elements, http(s) links only, highlights kept.
Skipped when node is not installed.
"""

from __future__ import annotations

import json
import shutil
import subprocess
from pathlib import Path

import pytest

NODE = shutil.which("node")
MARKDOWN_JS = Path(__file__).resolve().parents[2] / "hanrag" / "static" / "markdown.js"

pytestmark = pytest.mark.skipif(NODE is None, reason="node is not installed")

# a fake DOM just big enough for toDom(): elements are {tag, attrs, style, children}, text nodes strings
_RUNNER = r"""
const md = require(process.argv[process.argv.length - 1]);
const input = JSON.parse(require("fs").readFileSync(0, "utf8"));
function elem(tag) {
  return { tag, attrs: {}, style: {}, children: [],
    setAttribute(k, v) { this.attrs[k] = String(v); },
    append(...c) { this.children.push(...c); } };
}
const doc = {
  createElement: elem,
  createTextNode: (t) => ({ text: t }),
  createDocumentFragment: () => elem("#fragment"),
};
const mark = (kind, term, text) => {
  const m = elem("mark"); m.attrs.kind = kind; m.children.push({ text }); return m;
};
function plain(n) {
  if (n.text !== undefined) return n.text;
  const attrs = Object.assign({}, n.attrs, n.style.textAlign ? { align: n.style.textAlign } : {});
  return { tag: n.tag, attrs, children: n.children.map(plain) };
}
function leavesOk(src, tree) {
  return tree.every((n) => n.tag === undefined
    ? n.start === null || src.slice(n.start, n.start + n.text.length) === n.text
    : leavesOk(src, n.children));
}
const out = input.map(([src, spans]) => ({
  html: md.toHTML(md.parse(src)),
  leaves_ok: leavesOk(src, md.parse(src)),
  dom: plain(md.toDom(doc, src, spans, mark)),
}));
process.stdout.write(JSON.stringify(out));
"""


def _render(*cases: str | tuple[str, list[dict]]) -> list[dict]:
    payload = [[c, []] if isinstance(c, str) else list(c) for c in cases]
    done = subprocess.run([NODE, "-e", _RUNNER, str(MARKDOWN_JS)], input=json.dumps(payload), text=True,
                          capture_output=True, timeout=60, check=False)
    assert done.returncode == 0, done.stderr
    results = json.loads(done.stdout)
    assert all(r["leaves_ok"] for r in results), results  # every text leaf is a slice of the source
    return results


def _html(src: str) -> str:
    return _render(src)[0]["html"]


def _tags(tree: dict) -> set[str]:
    if isinstance(tree, str):
        return set()
    return {tree["tag"]}.union(*(_tags(c) for c in tree["children"]))


def test_inline_markup() -> None:
    assert _html("**내 장비** 목록은 _매주_ 점검한다.") == (
        "<p><strong>내 장비</strong> 목록은 <em>매주</em> 점검한다.</p>")
    assert _html("***둘 다*** ~~지움~~ `a < b` \\*별표\\*") == (
        "<p><strong><em>둘 다</em></strong> <del>지움</del> <code>a &lt; b</code> *별표*</p>")
    # not emphasis: snake_case names, a spaced asterisk, an unclosed run
    assert _html("max_surge_pods, 2 * 3 * 4, **열림") == "<p>max_surge_pods, 2 * 3 * 4, **열림</p>"
    # Korean right after the closing run (and punctuation before it) still closes the emphasis
    assert _html("**장비(설명)**은") == "<p><strong>장비(설명)</strong>은</p>"


def test_html_in_the_text_is_text() -> None:
    src = '<img src=x onerror=alert(1)> <script>alert("x")</script> <b>굵게</b> &amp;'
    assert _html(src) == (
        "<p>&lt;img src=x onerror=alert(1)&gt; &lt;script&gt;alert(&quot;x&quot;)&lt;/script&gt; "
        "&lt;b&gt;굵게&lt;/b&gt; &amp;amp;</p>")
    dom = _render(src + "\n\n```html\n<img src=x onerror=alert(1)>\n```")[0]["dom"]
    assert _tags(dom) == {"#fragment", "p", "pre", "code"}


def test_links_only_http() -> None:
    assert _html("[설명서](https://example.org/a_b \"제목\") <https://x.org/y> see http://z.org/p.") == (
        '<p><a href="https://example.org/a_b">설명서</a> <a href="https://x.org/y">https://x.org/y</a> '
        'see <a href="http://z.org/p">http://z.org/p</a>.</p>')
    for bad in ("[x](javascript:alert(1))", "[x](data:text/html,hi)", "[x](/relative)", "[x](JAVASCRIPT:1)",
                "<javascript:alert(1)>", "[x](vbscript:1)"):
        assert "<a" not in _html(bad), bad
    # a quote cannot get into an href: the bracketed link is refused, the bare URL stops before the quote
    assert _html('[x](https://a.org/"onmouseover="1)') == (
        '<p>[x](<a href="https://a.org/">https://a.org/</a>&quot;onmouseover=&quot;1)</p>')
    link = _render("[docs](https://a.org/d)")[0]["dom"]["children"][0]["children"][0]
    assert link["attrs"] == {"href": "https://a.org/d", "target": "_blank", "rel": "noopener noreferrer nofollow"}


def test_blocks() -> None:
    src = ("# 장비 점검\n\n## 내 장비\n\n- 노트북: `X1`\n- 모니터\n  - 27인치 *두 대*\n\n3. 셋\n4. 넷\n\n"
           "> 인용 **굵게**\n\n| 장비 | 수량 |\n|:-----|-----:|\n| 키보드 | 2 |\n\n---\n\n```sh\necho hi\n```\n")
    assert _html(src) == (
        "<h1>장비 점검</h1><h2>내 장비</h2>"
        "<ul><li><p>노트북: <code>X1</code></p></li>"
        "<li><p>모니터</p><ul><li><p>27인치 <em>두 대</em></p></li></ul></li></ul>"
        '<ol start="3"><li><p>셋</p></li><li><p>넷</p></li></ol>'
        "<blockquote><p>인용 <strong>굵게</strong></p></blockquote>"
        '<table><thead><tr><th align="left">장비</th><th align="right">수량</th></tr></thead>'
        '<tbody><tr><td align="left">키보드</td><td align="right">2</td></tr></tbody></table>'
        '<hr><pre data-lang="sh"><code>echo hi</code></pre>')
    # a paragraph keeps its line breaks; a code block left open by the chunk's end runs to the end
    assert _html("첫 줄\n둘째 줄") == "<p>첫 줄\n둘째 줄</p>"
    assert _html("앞\n\n```\nx = 1\n") == "<p>앞</p><pre><code>x = 1</code></pre>"
    assert _html("#태그 아님") == "<p>#태그 아님</p>"


def test_highlights_survive_markup() -> None:
    src = "**내 장비** 점검"
    # offsets into the raw text, as the server sends them: 내 장비 is 2..6, 점검 is 9..11
    spans = [{"start": 2, "end": 6, "term": "내 장비", "kind": "token"},
             {"start": 9, "end": 11, "term": "점검", "kind": "expansion"}]
    dom = _render((src, spans))[0]["dom"]
    para = dom["children"][0]
    strong = para["children"][0]
    assert strong["tag"] == "strong"
    assert strong["children"] == [{"tag": "mark", "attrs": {"kind": "token"}, "children": ["내 장비"]}]
    assert para["children"][1:] == [" ", {"tag": "mark", "attrs": {"kind": "expansion"}, "children": ["점검"]}]


def test_highlight_offsets_are_code_points() -> None:
    # Python counts 😀 as one character, JavaScript as two: the span must still cover 갑목
    src = "😀 **갑목**"
    spans = [{"start": 4, "end": 6, "term": "갑목", "kind": "token"}]
    strong = _render((src, spans))[0]["dom"]["children"][0]["children"][1]
    assert strong["children"] == [{"tag": "mark", "attrs": {"kind": "token"}, "children": ["갑목"]}]
