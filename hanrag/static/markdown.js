// A small Markdown renderer for chunk text in the inspector: headings, paragraphs, bold/italic/strike,
// inline code, fenced code, lists (nested), block quotes, rules, simple pipe tables and http(s) links.
//
// Safety comes from the output form, not from escaping: parse() returns a tree of plain objects whose
// element tags come only from this file, and toDom() builds it with createElement/textContent, so text
// from the index is never parsed as HTML (`<img onerror=…>` stays text). Link targets other than
// http(s) are not links at all. No innerHTML anywhere.
//
// Every text leaf is {text, start}: an unaltered slice of the source, text === src.slice(start, start +
// text.length), so the server's highlight spans (offsets into the raw chunk text) can still be drawn
// after the Markdown markers around them are gone.
//
// Works in the browser (window.hanragMarkdown) and under node (module.exports) for the tests.
"use strict";

(function (root, factory) {
  const api = factory();
  if (typeof module === "object" && module.exports) module.exports = api;
  else root.hanragMarkdown = api;
})(typeof self !== "undefined" ? self : this, function () {
  const FENCE = /^( {0,3})(`{3,}|~{3,})(.*)$/;
  const HEADING = /^ {0,3}(#{1,6})(?:[ \t]+(.*?))?(?:[ \t]+#+)?[ \t]*$/;
  const RULE = /^ {0,3}([-*_])(?:[ \t]*\1){2,}[ \t]*$/;
  const ITEM = /^( {0,3})([-*+]|\d{1,9}[.)])([ \t]+|$)/;
  const QUOTE = /^ {0,3}> ?/;
  const TABLE_DELIM = /^ {0,3}\|?[ \t]*:?-+:?[ \t]*(\|[ \t]*:?-+:?[ \t]*)*\|?[ \t]*$/;
  const SAFE_URL = /^https?:\/\/[^\s<>"]+$/i;
  const BARE_URL = /^https?:\/\/[^\s<>"'`]*[^\s<>"'`.,;:!?)\]]/i;
  const PUNCT = /[!-/:-@[-`{-~]/;

  const leaf = (text, start) => ({ text, start });
  const node = (tag, children, attrs) => ({ tag, attrs: attrs || {}, children: children || [] });

  // ------------------------------------------------------------------ lines

  function splitLines(src) {
    const lines = [];
    let pos = 0;
    while (pos <= src.length) {
      let nl = src.indexOf("\n", pos);
      if (nl < 0) nl = src.length;
      let end = nl;
      if (end > pos && src[end - 1] === "\r") end -= 1;
      lines.push({ s: pos, e: end });
      pos = nl + 1;
    }
    return lines;
  }

  const textOf = (src, line) => src.slice(line.s, line.e);
  const isBlank = (src, line) => !textOf(src, line).trim();
  const leadingSpaces = (t) => t.length - t.replace(/^ +/, "").length;

  // a line with ``n`` leading characters dropped (only spaces, or the marker the caller measured)
  const shifted = (line, n) => ({ s: Math.min(line.s + n, line.e), e: line.e });
  const dedent = (src, line, n) => shifted(line, Math.min(n, leadingSpaces(textOf(src, line))));

  function startsBlock(src, line) {
    const t = textOf(src, line);
    return FENCE.test(t) || HEADING.test(t) || RULE.test(t) || ITEM.test(t) || QUOTE.test(t);
  }

  // a header row and a delimiter row under it (with a pipe, so a "---" under a line is no table)
  function tableStarts(src, lines, i) {
    if (i + 1 >= lines.length || !textOf(src, lines[i]).includes("|")) return false;
    const delim = textOf(src, lines[i + 1]);
    return delim.includes("|") && TABLE_DELIM.test(delim);
  }

  // ------------------------------------------------------------------ blocks

  function parseBlocks(src, lines) {
    const out = [];
    let i = 0;
    while (i < lines.length) {
      const line = lines[i];
      const t = textOf(src, line);
      if (!t.trim()) { i += 1; continue; }

      const fence = FENCE.exec(t);
      if (fence && !(fence[2][0] === "`" && fence[3].includes("`"))) {
        const indent = fence[1].length, marker = fence[2];
        let j = i + 1;
        const body = [];
        while (j < lines.length) {
          const inner = textOf(src, lines[j]).trim();
          if (inner.startsWith(marker) && /^([`~])\1*$/.test(inner) && inner[0] === marker[0]) break;
          body.push(dedent(src, lines[j], indent));
          j += 1;
        }
        // a fence left open by the chunk's end: the trailing blank lines are the chunk's, not the code's
        if (j >= lines.length) while (body.length && isBlank(src, body[body.length - 1])) body.pop();
        const attrs = {};
        const lang = fence[3].trim().split(/\s+/)[0];
        if (lang) attrs["data-lang"] = lang;
        out.push(node("pre", [node("code", joinLeaves(src, body))], attrs));
        i = j + 1;  // past the closing fence, or past the end when it was never closed
        continue;
      }

      const heading = HEADING.exec(t);
      if (heading) {
        const content = heading[2] || "";
        const at = line.s + (content ? t.indexOf(content, heading[1].length) : t.length);
        out.push(node("h" + heading[1].length, parseInline(src, [{ s: at, e: at + content.length }])));
        i += 1;
        continue;
      }

      if (RULE.test(t)) { out.push(node("hr")); i += 1; continue; }

      if (QUOTE.test(t)) {
        const inner = [];
        while (i < lines.length && !isBlank(src, lines[i])) {
          const m = QUOTE.exec(textOf(src, lines[i]));
          inner.push(m ? shifted(lines[i], m[0].length) : lines[i]);  // a lazy line continues the quote
          i += 1;
        }
        out.push(node("blockquote", parseBlocks(src, inner)));
        continue;
      }

      if (ITEM.test(t)) { i = parseList(src, lines, i, out); continue; }

      if (tableStarts(src, lines, i)) {
        const header = cells(src, line);
        const aligns = cells(src, lines[i + 1]).map((c) => {
          const d = src.slice(c.s, c.e);
          return d.endsWith(":") ? (d.startsWith(":") ? "center" : "right") : (d.startsWith(":") ? "left" : "");
        });
        if (aligns.length === header.length) {
          const cell = (tag, c, k) => node(tag, parseInline(src, [c]), aligns[k] ? { align: aligns[k] } : {});
          const head = node("thead", [node("tr", header.map((c, k) => cell("th", c, k)))]);
          const rows = [];
          i += 2;
          while (i < lines.length && !isBlank(src, lines[i]) && textOf(src, lines[i]).includes("|")) {
            const row = cells(src, lines[i]).slice(0, header.length);
            while (row.length < header.length) row.push({ s: lines[i].e, e: lines[i].e });
            rows.push(node("tr", row.map((c, k) => cell("td", c, k))));
            i += 1;
          }
          out.push(node("table", rows.length ? [head, node("tbody", rows)] : [head]));
          continue;
        }
      }

      // a paragraph: up to a blank line or a line that opens another block
      const para = [line];
      i += 1;
      while (i < lines.length && !isBlank(src, lines[i]) && !startsBlock(src, lines[i]) && !tableStarts(src, lines, i)) {
        para.push(lines[i]);
        i += 1;
      }
      out.push(node("p", parseInline(src, para.map((l) => dedent(src, l, Infinity)))));
    }
    return out;
  }

  function parseList(src, lines, i, out) {
    const first = ITEM.exec(textOf(src, lines[i]));
    const ordered = /\d/.test(first[2]);
    const bullet = first[2].slice(-1);  // -, *, + or the . / ) after a number: a change starts a new list
    const items = [];
    while (i < lines.length) {
      const m = ITEM.exec(textOf(src, lines[i]));
      if (!m || /\d/.test(m[2]) !== ordered || m[2].slice(-1) !== bullet) break;
      // content starts after the marker and its spaces (one space when there are more than four)
      const pad = m[3].length > 4 ? 1 : m[3].length;
      const width = m[1].length + m[2].length + pad;
      const body = [shifted(lines[i], width)];
      i += 1;
      while (i < lines.length) {
        const t = textOf(src, lines[i]);
        if (!t.trim()) {
          // a blank line stays in the item only when the item's content goes on after it
          let k = i;
          while (k < lines.length && isBlank(src, lines[k])) k += 1;
          if (k < lines.length && leadingSpaces(textOf(src, lines[k])) >= width) {
            for (; i < k; i += 1) body.push(lines[i]);
            continue;
          }
          break;
        }
        if (leadingSpaces(t) >= width) { body.push(shifted(lines[i], width)); i += 1; continue; }
        if (startsBlock(src, lines[i]) || isBlank(src, body[body.length - 1])) break;
        body.push(dedent(src, lines[i], Infinity));  // a lazy continuation of the item's paragraph
        i += 1;
      }
      items.push(node("li", parseBlocks(src, body)));
      // blank lines between two items of one list
      let k = i;
      while (k < lines.length && isBlank(src, lines[k])) k += 1;
      if (k < lines.length && k > i && ITEM.test(textOf(src, lines[k]))) i = k;
    }
    const attrs = {};
    const start = parseInt(first[2], 10);
    if (ordered && start !== 1) attrs.start = String(start);
    out.push(node(ordered ? "ol" : "ul", items, attrs));
    return i;
  }

  // the cells of a table row: source ranges between unescaped pipes outside code spans, trimmed
  function cells(src, line) {
    const found = [];
    let s = line.s, e = line.e;
    while (s < e && /\s/.test(src[s])) s += 1;
    while (e > s && /\s/.test(src[e - 1])) e -= 1;
    if (src[s] === "|") s += 1;
    if (e > s && src[e - 1] === "|" && src[e - 2] !== "\\") e -= 1;
    let from = s, code = false;
    for (let p = s; p <= e; p += 1) {
      if (p < e && src[p] === "\\") { p += 1; continue; }
      if (p < e && src[p] === "`") code = !code;
      if (p === e || (src[p] === "|" && !code)) {
        let a = from, b = p;
        while (a < b && /\s/.test(src[a])) a += 1;
        while (b > a && /\s/.test(src[b - 1])) b -= 1;
        found.push({ s: a, e: b });
        from = p + 1;
      }
    }
    return found;
  }

  // ------------------------------------------------------------------ inline

  // The lines of one paragraph (or one cell, one heading) are parsed as one string joined by "\n";
  // ``map`` takes each of its characters back to its source offset, so leaves keep source offsets.
  function joined(src, lines) {
    let v = "";
    const map = [];
    lines.forEach((line, k) => {
      if (k > 0) { v += "\n"; map.push(src[lines[k - 1].e] === "\n" ? lines[k - 1].e : -1); }
      v += src.slice(line.s, line.e);
      for (let p = line.s; p < line.e; p += 1) map.push(p);
    });
    return { v, map };
  }

  // leaves for v[a:b), split wherever the source offsets jump (a line's stripped indent, a quote marker)
  function leavesFor(ctx, a, b) {
    const out = [];
    let k = a;
    while (k < b) {
      let j = k + 1;
      while (j < b && ctx.map[k] >= 0 && ctx.map[j] === ctx.map[j - 1] + 1) j += 1;
      out.push(leaf(ctx.v.slice(k, j), ctx.map[k] >= 0 ? ctx.map[k] : null));
      k = j;
    }
    return out;
  }

  function joinLeaves(src, lines) {
    const ctx = joined(src, lines);
    return leavesFor(ctx, 0, ctx.v.length);
  }

  function parseInline(src, lines) {
    const ctx = joined(src, lines);
    return inline(ctx, 0, ctx.v.length);
  }

  const isSpace = (ch) => ch === undefined || /\s/.test(ch);
  const isWordChar = (ch) => ch !== undefined && /[\p{L}\p{N}]/u.test(ch);

  function runLength(v, p, end) {
    let q = p;
    while (q < end && v[q] === v[p]) q += 1;
    return q - p;
  }

  // inLink: inside a link's text, where another link would nest <a> in <a>
  function inline(ctx, a, b, inLink) {
    const v = ctx.v;
    const out = [];
    let text = a;  // start of plain text not emitted yet
    const flush = (to) => { if (to > text) out.push(...leavesFor(ctx, text, to)); };
    let p = a;
    while (p < b) {
      const ch = v[p];

      if (ch === "\\" && p + 1 < b && PUNCT.test(v[p + 1])) {
        flush(p);
        out.push(...leavesFor(ctx, p + 1, p + 2));
        p += 2;
        text = p;
        continue;
      }

      if (ch === "`") {
        const n = runLength(v, p, b);
        let q = p + n, close = -1;
        while (q < b) {
          if (v[q] === "`") {
            const m = runLength(v, q, b);
            if (m === n) { close = q; break; }
            q += m;
          } else q += 1;
        }
        if (close < 0) { p += n; continue; }
        let s = p + n, e = close;
        if (e - s >= 2 && v[s] === " " && v[e - 1] === " " && v.slice(s, e).trim()) { s += 1; e -= 1; }
        flush(p);
        out.push(node("code", leavesFor(ctx, s, e)));
        p = close + n;
        text = p;
        continue;
      }

      if (ch === "[" && !inLink) {
        const link = linkAt(v, p, b);
        if (link) {
          flush(p);
          out.push(node("a", inline(ctx, p + 1, link.textEnd, true), { href: link.href }));
          p = link.end;
          text = p;
          continue;
        }
      }

      if (ch === "<" && !inLink) {
        const m = /^<(https?:\/\/[^\s<>"]+)>/i.exec(v.slice(p, b));
        if (m) {
          flush(p);
          out.push(node("a", leavesFor(ctx, p + 1, p + m[0].length - 1), { href: m[1] }));
          p += m[0].length;
          text = p;
          continue;
        }
      }

      if ((ch === "h" || ch === "H") && !inLink && !isWordChar(v[p - 1])) {
        const m = BARE_URL.exec(v.slice(p, b));
        if (m) {
          flush(p);
          out.push(node("a", leavesFor(ctx, p, p + m[0].length), { href: m[0] }));
          p += m[0].length;
          text = p;
          continue;
        }
      }

      if (ch === "*" || ch === "_" || ch === "~") {
        const n = runLength(v, p, b);
        const span = emphasisAt(v, p, n, b);
        if (span) {
          flush(p);
          const inner = inline(ctx, p + span.k, span.close, inLink);
          const wrap = span.k === 3 ? node("strong", [node("em", inner)])
            : node(ch === "~" ? "del" : span.k === 2 ? "strong" : "em", inner);
          out.push(wrap);
          p = span.close + span.k;
          text = p;
          continue;
        }
        p += n;
        continue;
      }

      p += 1;
    }
    flush(b);
    return out;
  }

  // [text](http(s) url "optional title"): anything else is not a link and stays text as written
  function linkAt(v, p, b) {
    let depth = 0, q = p;
    for (; q < b; q += 1) {
      if (v[q] === "\\") { q += 1; continue; }
      if (v[q] === "[") depth += 1;
      else if (v[q] === "]" && --depth === 0) break;
    }
    if (q >= b || v[q + 1] !== "(") return null;
    const m = /^\(\s*<?([^\s<>()]+)>?(?:\s+("[^"]*"|'[^']*'))?\s*\)/.exec(v.slice(q + 1, b));
    if (!m || !SAFE_URL.test(m[1]) || q === p + 1) return null;
    return { textEnd: q, href: m[1], end: q + 1 + m[0].length };
  }

  // an opening run of * _ ~ at p (length n) and its closing run of the same length, or null
  function emphasisAt(v, p, n, b) {
    const ch = v[p];
    if (ch === "~" && n !== 2) return null;
    const k = ch === "~" ? 2 : Math.min(n, 3);
    if (n !== k || isSpace(v[p + n])) return null;
    if (ch === "_" && isWordChar(v[p - 1])) return null;  // snake_case_names are not emphasis
    let q = p + n;
    while (q < b) {
      if (v[q] === "`") {  // a code span inside is opaque
        const m = runLength(v, q, b);
        const close = v.indexOf("`".repeat(m), q + m);
        q = close >= 0 && close < b ? close + m : q + m;
        continue;
      }
      if (v[q] === "\\") { q += 2; continue; }
      if (v[q] === ch) {
        const m = runLength(v, q, b);
        if (m === k && !isSpace(v[q - 1]) && q > p + n && !(ch === "_" && isWordChar(v[q + m]))) {
          return { k, close: q };
        }
        q += m;
        continue;
      }
      q += 1;
    }
    return null;
  }

  // ------------------------------------------------------------------ output

  function parse(src) {
    return parseBlocks(src, splitLines(src));
  }

  // Python counts highlight offsets in code points, JavaScript strings in UTF-16 units: they differ after
  // any character outside the BMP (emoji, rare Han), so spans are moved to UTF-16 offsets first.
  function toUtf16Spans(src, spans) {
    if (!spans || !spans.length) return [];
    const at = [0];
    for (const c of src) at.push(at[at.length - 1] + c.length);
    const pos = (i) => at[Math.min(i, at.length - 1)];
    return spans.map((s) => Object.assign({}, s, { start: pos(s.start), end: pos(s.end) }));
  }

  // element attributes the tree may carry, each checked again here
  function setAttr(el, name, value) {
    if (name === "href") {
      if (!SAFE_URL.test(value)) return;
      el.setAttribute("href", value);
      el.setAttribute("target", "_blank");
      el.setAttribute("rel", "noopener noreferrer nofollow");
    } else if (name === "start" && /^\d+$/.test(value)) el.setAttribute("start", value);
    else if (name === "align" && /^(left|right|center)$/.test(value)) el.style.textAlign = value;
    else if (name === "data-lang") el.setAttribute("data-lang", value);
  }

  const TAGS = new Set(["p", "h1", "h2", "h3", "h4", "h5", "h6", "hr", "pre", "code", "blockquote", "ul", "ol",
    "li", "table", "thead", "tbody", "tr", "th", "td", "a", "strong", "em", "del"]);

  // mark(kind, term, text) builds the element for a highlighted piece of text (the inspector's <mark>)
  function toDom(doc, src, spans, mark) {
    const hl = toUtf16Spans(src, spans);
    function text(parent, l) {
      if (l.start === null || !hl.length) { parent.append(doc.createTextNode(l.text)); return; }
      const end = l.start + l.text.length;
      let pos = l.start;
      for (const s of hl) {
        if (s.end <= pos || s.start >= end || s.start >= s.end) continue;
        const a = Math.max(s.start, pos), b = Math.min(s.end, end);
        if (a > pos) parent.append(doc.createTextNode(src.slice(pos, a)));
        parent.append(mark(s.kind, s.term, src.slice(a, b)));
        pos = b;
      }
      if (pos < end) parent.append(doc.createTextNode(src.slice(pos, end)));
    }
    function build(parent, n) {
      if (n.tag === undefined) { text(parent, n); return; }
      if (!TAGS.has(n.tag)) return;
      const el = doc.createElement(n.tag);
      for (const [k, val] of Object.entries(n.attrs)) setAttr(el, k, val);
      for (const c of n.children) build(el, c);
      parent.append(el);
    }
    const frag = doc.createDocumentFragment();
    for (const n of parse(src)) build(frag, n);
    return frag;
  }

  const ESC = { "&": "&amp;", "<": "&lt;", ">": "&gt;", "\"": "&quot;", "'": "&#39;" };
  const escape = (s) => String(s).replace(/[&<>"']/g, (c) => ESC[c]);

  // the tree as escaped HTML text: for the tests (and any caller without a DOM), never fed to innerHTML
  function toHTML(tree) {
    return tree.map((n) => {
      if (n.tag === undefined) return escape(n.text);
      const attrs = Object.entries(n.attrs).map(([k, val]) => " " + k + "=\"" + escape(val) + "\"").join("");
      return n.tag === "hr" ? "<hr>" : "<" + n.tag + attrs + ">" + toHTML(n.children) + "</" + n.tag + ">";
    }).join("");
  }

  return { parse, toDom, toHTML, toUtf16Spans };
});
