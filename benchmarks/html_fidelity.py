"""HTML → Markdown converter fidelity on tables, code and headings.

Compares hanrag's tuned markdownify converter with plain markdownify and html2text
(when installed) on a small realistic sample (Korean text, GFM tables, code with
indentation and markdown-like characters). Prints one line per converter with the
share of expected headings, table rows, code lines and identifiers kept verbatim,
and whether code stayed in a fenced block. Run: ``python benchmarks/html_fidelity.py``.
"""

from __future__ import annotations

import markdownify

from hanrag.sources.html import html_to_markdown

SAMPLES: dict[str, str] = {}
SAMPLES["api_doc"] = """<html><head><title>Deploy guide</title></head><body>
<h1>배포 가이드</h1>
<p>이 문서는 <code>kubectl_apply</code> 사용법을 설명합니다. See <a href="https://k8s.io/docs">docs</a>.</p>
<h2>Configuration</h2>
<table>
<thead><tr><th>Key</th><th>Type</th><th>설명</th></tr></thead>
<tbody>
<tr><td>replica_count</td><td>int</td><td>파드 수</td></tr>
<tr><td>image</td><td>string</td><td>컨테이너 이미지 | 태그</td></tr>
</tbody></table>
<h3>Example</h3>
<pre><code class="language-python">def main():
    for i in range(3):
        print(f"pod_{i}")  # *not* emphasis
</code></pre>
<ul><li>first item</li><li>second <strong>bold</strong> item</li></ul>
<h2>Notes</h2>
<p>Values like 2*3 and snake_case_name must stay readable.</p>
</body></html>"""
SAMPLES["table_no_thead"] = """<body><h2>사주 용어</h2><table>
<tr><td><b>천간</b></td><td><b>오행</b></td></tr>
<tr><td>甲</td><td>木</td></tr><tr><td>丙</td><td>火</td></tr></table>
<h2>Shell</h2><pre>$ ls -la
total 0
    indented line</pre></body>"""
EXPECT = {
    "api_doc": {
        "headings": ["# 배포 가이드", "## Configuration", "### Example", "## Notes"],
        "table_rows": [["Key", "Type", "설명"], ["replica_count", "int", "파드 수"]],
        "code": ["def main():", "    for i in range(3):", '        print(f"pod_{i}")  # *not* emphasis'],
        "text": ["kubectl_apply", "snake_case_name", "2*3"],
    },
    "table_no_thead": {
        "headings": ["## 사주 용어", "## Shell"],
        "table_rows": [["甲", "木"], ["丙", "火"]],
        "code": ["$ ls -la", "    indented line"],
        "text": [],
    },
}


def score(md, exp):
    lines = md.splitlines()
    s = {}
    s["headings"] = sum(h in lines for h in exp["headings"]) / len(exp["headings"])
    rows = []
    for line in lines:
        if line.strip().startswith("|") or line.count("|") >= 1 and not line.startswith("    "):
            cells = [c.strip().strip("*") for c in line.strip().strip("|").split("|")]
            rows.append(cells)
    s["table"] = sum(any(r[: len(e)] == e for r in rows) for e in exp["table_rows"]) / len(exp["table_rows"])
    s["code"] = sum(c in lines for c in exp["code"]) / len(exp["code"])
    # fenced?
    s["fenced"] = float("```" in md)
    s["text"] = (sum(t in md for t in exp["text"]) / len(exp["text"])) if exp["text"] else 1.0
    return s


def md_markdownify_default(h: str) -> str:
    return markdownify.markdownify(h, heading_style="ATX")


def main() -> None:
    converters = [
        ("hanrag (markdownify tuned)", html_to_markdown),
        ("markdownify (default ATX)", md_markdownify_default),
    ]
    try:
        import html2text

        def md_html2text(h: str) -> str:
            c = html2text.HTML2Text()
            c.body_width = 0
            return c.handle(h)

        converters.append(("html2text (body_width=0)", md_html2text))
    except ImportError:
        print("html2text not installed: skipped")
    for name, fn in converters:
        tot: dict[str, float] = {}
        for k, h in SAMPLES.items():
            for a, b in score(fn(h), EXPECT[k]).items():
                tot[a] = tot.get(a, 0) + b / len(SAMPLES)
        print(f"{name:28s}", " ".join(f"{a}={b:.2f}" for a, b in tot.items()))


if __name__ == "__main__":
    main()
