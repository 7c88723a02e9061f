// hanrag search inspector: plain DOM, no framework, no build step.
// Every piece of index text is inserted with textContent (never innerHTML), so a
// chunk's content can never run as markup. Chunk text is Markdown: markdown.js turns it
// into elements it builds itself (the same rule holds there).
"use strict";

(function () {
  const $ = (sel) => document.querySelector(sel);
  const form = $("#search-form");
  const results = $("#results");
  const statusEl = $("#status");
  const planEl = $("#plan");
  const keyInput = $("#apikey");

  keyInput.value = localStorage.getItem("hanrag.apikey") || "";
  keyInput.addEventListener("change", () => {
    localStorage.setItem("hanrag.apikey", keyInput.value);
    loadStats();
  });

  function el(tag, attrs, ...children) {
    const node = document.createElement(tag);
    for (const [k, v] of Object.entries(attrs || {})) {
      if (v === null || v === undefined || v === false) continue;
      if (k === "class") node.className = v;
      else if (k === "text") node.textContent = v;
      else node.setAttribute(k, v);
    }
    for (const child of children) {
      if (child === null || child === undefined) continue;
      node.append(typeof child === "string" ? document.createTextNode(child) : child);
    }
    return node;
  }

  async function api(method, path, body) {
    const headers = { "Accept": "application/json" };
    if (body !== undefined) headers["Content-Type"] = "application/json";
    if (keyInput.value) headers["X-API-Key"] = keyInput.value;
    const res = await fetch(path, { method, headers, body: body === undefined ? undefined : JSON.stringify(body) });
    let data = null;
    try { data = await res.json(); } catch (e) { data = null; }
    if (!res.ok) {
      const msg = (data && data.error) || res.statusText || "request failed";
      throw new Error(res.status + ": " + msg);
    }
    return data;
  }

  function fmt(x, digits) {
    if (x === null || x === undefined) return "–";
    return Number(x).toFixed(digits === undefined ? 3 : digits);
  }

  // chunk Markdown as elements, with highlight spans [{start, end, term, kind}] (offsets into the raw text)
  // drawn as <mark> wherever their text still shows once the Markdown markers are gone
  function rendered(text, spans) {
    return window.hanragMarkdown.toDom(document, text, spans, (kind, term, piece) =>
      el("mark", { class: kind === "expansion" ? "hl-expansion" : "hl-token", title: kind + ": " + term }, piece));
  }

  function sourceNode(source, path) {
    if (/^https?:\/\//i.test(source || "")) {
      return el("a", { class: "source", href: source, target: "_blank", rel: "noopener noreferrer" }, source);
    }
    return el("span", { class: "source" }, source || path || "");
  }

  function badges(chunk) {
    const wrap = el("span", { class: "badges" });
    wrap.append(el("span", { class: "badge lang" }, chunk.lang));
    wrap.append(el("span", { class: "badge tier tier-" + chunk.tier }, "tier " + chunk.tier));
    wrap.append(el("span", { class: "badge prov prov-" + chunk.provenance }, chunk.provenance));
    for (const label of chunk.labels || []) wrap.append(el("span", { class: "badge label" }, label));
    if (chunk.page !== null && chunk.page !== undefined) wrap.append(el("span", { class: "badge" }, "p. " + chunk.page));
    return wrap;
  }

  function explanationTable(ex) {
    const table = el("table", { class: "explain" });
    const rows = [
      ["BM25", fmt(ex.bm25_raw), fmt(ex.bm25_norm), fmt(ex.bm25_weight, 2)],
      // the cosine as fused: with what the cross-lingual centring added to it
      ["dense", fmt(ex.dense_raw) + (ex.centring ? ` (${ex.centring > 0 ? "+" : ""}${fmt(ex.centring)} centring)` : ""),
        fmt(ex.dense_norm), fmt(ex.dense_weight, 2)],
    ];
    table.append(el("thead", {}, el("tr", {}, el("th", {}, "stage"), el("th", {}, "raw"), el("th", {}, "norm"),
      el("th", {}, "weight"))));
    const tbody = el("tbody");
    for (const r of rows) tbody.append(el("tr", {}, ...r.map((c) => el("td", {}, c))));
    tbody.append(el("tr", {}, el("td", {}, "fused (" + ex.fusion + ")"), el("td", { colspan: "3" }, fmt(ex.fused))));
    // the learned ranker's correction of the fused score, per feature (largest first): fused plus these is the score
    if (ex.learned && ex.learned.length) {
      const total = ex.learned.reduce((acc, kv) => acc + kv[1], 0);
      const sign = (v) => (v > 0 ? "+" : "") + fmt(v);
      const parts = [...ex.learned].sort((a, b) => Math.abs(b[1]) - Math.abs(a[1]))
        .map(([name, v]) => el("span", { class: "learned-feature", title: name }, name + " " + sign(v)));
      const cell = el("td", { colspan: "3", class: "learned" }, sign(total) + " = ");
      parts.forEach((p, i) => { if (i) cell.append(", "); cell.append(p); });
      tbody.append(el("tr", {}, el("td", {}, "learned ranker"), cell));
    }
    tbody.append(el("tr", {}, el("td", {}, "rerank"), el("td", { colspan: "3" }, fmt(ex.rerank))));
    tbody.append(el("tr", {}, el("td", {}, "diversity penalty"), el("td", { colspan: "3" }, "× " + fmt(ex.penalty, 2))));
    tbody.append(el("tr", { class: "final" }, el("td", {}, "final"), el("td", { colspan: "3" }, fmt(ex.final))));
    table.append(tbody);
    const box = el("div", { class: "explanation" });
    box.append(el("div", { class: "rule" }, "weights chosen by rule ", el("code", { class: "rule-name" }, ex.rule),
      (ex.found_by && ex.found_by.length) ? " · found by " + ex.found_by.join(" + ") : ""));
    box.append(table);
    const terms = el("div", { class: "terms" });
    const via = Object.fromEntries(ex.matched_via || []);
    const how = (t) => (via[t] ? " (" + via[t] + ")" : "");
    for (const t of ex.matched_tokens || []) terms.append(el("span", { class: "term term-token", title: via[t] || "" }, t + how(t)));
    for (const t of ex.matched_expansions || []) terms.append(el("span", { class: "term term-expansion", title: via[t] || "" }, t + how(t)));
    if (terms.childNodes.length) box.append(el("div", {}, "matched: ", terms));
    return box;
  }

  async function toggleNeighbours(hit, li, button) {
    const existing = li.querySelector(".neighbours");
    if (existing) { existing.remove(); button.textContent = "show neighbouring chunks"; return; }
    button.disabled = true;
    try {
      const doc = await api("GET", "/documents/" + hit.chunk.doc_id.split("/").map(encodeURIComponent).join("/"));
      const chunks = doc.chunks;
      const i = chunks.findIndex((c) => c.chunk_id === hit.chunk.chunk_id);
      const box = el("div", { class: "neighbours" });
      const from = Math.max(0, i - 1), to = Math.min(chunks.length, i + 2);
      if (i < 0) box.append(el("p", { class: "muted" }, "chunk not found in its document (index changed?)"));
      for (let j = i < 0 ? 0 : from; j < (i < 0 ? chunks.length : to); j++) {
        const c = chunks[j];
        const current = c.chunk_id === hit.chunk.chunk_id;
        const part = el("div", { class: "neighbour" + (current ? " current" : "") });
        part.append(el("div", { class: "nlabel" }, (current ? "this chunk" : (j < i ? "previous" : "next")) +
          " · " + (j + 1) + "/" + chunks.length + ((c.headings || []).length ? " · " + c.headings.join(" › ") : "")));
        part.append(el("div", { class: "ntext md" }, rendered(c.text, current ? hit.highlights : [])));
        box.append(part);
      }
      li.append(box);
      button.textContent = "hide neighbouring chunks";
    } catch (err) {
      li.append(el("div", { class: "neighbours error" }, String(err.message || err)));
    } finally {
      button.disabled = false;
    }
  }

  function renderHit(hit) {
    const c = hit.chunk;
    const li = el("li", { class: "hit", "data-chunk-id": c.chunk_id });
    const head = el("div", { class: "hit-head" },
      el("span", { class: "rank" }, "#" + hit.rank),
      el("span", { class: "title" }, c.title || c.doc_id),
      badges(c),
      el("span", { class: "score", title: "final score" }, fmt(hit.score)));
    li.append(head);
    li.append(el("div", { class: "meta" }, sourceNode(c.source, c.path),
      (c.headings || []).length ? el("span", { class: "headings" }, c.headings.join(" › ")) : null));
    li.append(el("div", { class: "text md" }, rendered(c.text, hit.highlights)));
    if (hit.also_in && hit.also_in.length) {
      li.append(el("div", { class: "also" }, "also in: " + hit.also_in.join(", ")));
    }
    if (hit.explanation) li.append(explanationTable(hit.explanation));
    const button = el("button", { type: "button", class: "expand" }, "show neighbouring chunks");
    button.addEventListener("click", () => toggleNeighbours(hit, li, button));
    li.append(button);
    return li;
  }

  function renderPlan(plan) {
    planEl.replaceChildren();
    if (!plan) { planEl.hidden = true; return; }
    planEl.hidden = false;
    planEl.append(el("span", {}, "lang ", el("b", {}, plan.lang)),
      el("span", {}, "Hanja ratio ", el("b", {}, fmt(plan.hanja_ratio, 2))),
      el("span", {}, "rule ", el("code", { class: "rule-name" }, plan.rule)),
      el("span", {}, "weights bm25 ", el("b", {}, fmt(plan.bm25_weight, 2)), " / dense ", el("b", {}, fmt(plan.dense_weight, 2))));
    const toks = el("span", { class: "terms" }, "tokens ");
    for (const t of plan.tokens) toks.append(el("span", { class: "term term-token" }, t));
    planEl.append(toks);
    if (plan.expansions.length) {
      const ex = el("span", { class: "terms" }, "expansions ");
      for (const [t, w] of plan.expansions) ex.append(el("span", { class: "term term-expansion", title: "weight " + w }, t));
      planEl.append(ex);
    }
    if (plan.terms.length) planEl.append(el("span", {}, "domain terms ", el("b", {}, plan.terms.join(", "))));
    if (plan.lexical_evidence !== null && plan.lexical_evidence !== undefined) {
      planEl.append(el("span", {}, "lexical evidence ", el("b", {}, fmt(plan.lexical_evidence, 2))));
    }
    // the cross-lingual stage: what each other language's cosines got before fusion, and its share of the centring
    if (plan.language_centring && plan.language_centring.length) {
      const c = el("span", { class: "terms centring" }, "centring ");
      for (const [lang, added, share] of plan.language_centring) {
        c.append(el("span", { class: "term", title: "share " + share }, lang + " " + (added >= 0 ? "+" : "") + fmt(added, 3)));
      }
      planEl.append(c);
    }
    // the learned ranking stage: which model reordered the fused head, and how much of it
    if (plan.ranker) {
      planEl.append(el("span", { class: "ranker" }, "ranker ", el("b", {}, plan.ranker), " reordered " + plan.ranked));
    }
  }

  function splitList(value) {
    return value.split(/[,\s]+/).map((s) => s.trim()).filter(Boolean);
  }

  function requestBody() {
    const filters = {};
    const langs = [...document.querySelectorAll("input[name=lang]:checked")].map((i) => i.value);
    if (langs.length) filters.lang = langs;
    const tiers = splitList($("#tier").value).map(Number).filter((n) => Number.isInteger(n));
    if (tiers.length) filters.tier = tiers;
    if ($("#provenance").value) filters.provenance = [$("#provenance").value];
    if ($("#source").value.trim()) filters.source = $("#source").value.trim();
    const labels = splitList($("#labels").value);
    if (labels.length) filters.labels = labels;
    const body = {
      query: $("#q").value,
      top_k: Math.max(1, Math.min(100, parseInt($("#top_k").value, 10) || 10)),
      mode: document.querySelector("input[name=mode]:checked").value,
      explain: true,
    };
    if (Object.keys(filters).length) body.filters = filters;
    return body;
  }

  async function runSearch(event) {
    if (event) event.preventDefault();
    const body = requestBody();
    if (!body.query.trim()) return;
    statusEl.className = "status busy";
    statusEl.textContent = "searching…";
    try {
      const data = await api("POST", "/search", body);
      renderPlan(data.plan);
      results.replaceChildren(...data.hits.map(renderHit));
      statusEl.className = "status done";
      statusEl.textContent = data.hits.length + " hits · " + data.mode + " · " + fmt(data.took_ms, 1) + " ms";
      const url = new URL(window.location);
      url.searchParams.set("q", body.query);
      url.searchParams.set("mode", body.mode);
      history.replaceState(null, "", url);
    } catch (err) {
      results.replaceChildren();
      renderPlan(null);
      statusEl.className = "status error";
      statusEl.textContent = String(err.message || err);
    }
  }

  async function loadStats() {
    try {
      const s = await api("GET", "/stats");
      const parts = [];
      for (const key of ["chunks", "documents", "snapshot", "model"]) {
        if (s[key] !== undefined && s[key] !== null && typeof s[key] !== "object") parts.push(key + " " + s[key]);
      }
      $("#stats").textContent = parts.join(" · ");
    } catch (err) {
      $("#stats").textContent = String(err.message || err);
    }
  }

  form.addEventListener("submit", runSearch);
  for (const radio of document.querySelectorAll("input[name=mode]")) {
    radio.addEventListener("change", () => { if ($("#q").value.trim()) runSearch(); });
  }

  const params = new URLSearchParams(window.location.search);
  if (params.get("mode")) {
    const radio = document.querySelector("input[name=mode][value='" + CSS.escape(params.get("mode")) + "']");
    if (radio) radio.checked = true;
  }
  loadStats();
  if (params.get("q")) { $("#q").value = params.get("q"); runSearch(); }
})();
