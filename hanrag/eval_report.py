"""The reports of ``hanrag eval``: report.md (metric tables, the per-query section), report.json and chart.png.

:mod:`hanrag.eval` computes the figures; this module only renders what it hands over (data flows one way).
matplotlib is imported where a chart is drawn.
"""

from __future__ import annotations

import io
import json
from dataclasses import dataclass
from pathlib import Path

from hanrag.eval import DEFAULT_METRICS, RR_CUTOFF, PerQuery
from hanrag.fsutil import atomic_write_bytes

MOST_DIFFERENT = 10  # queries listed per set as the ones the configurations disagree on most


def _rr(rank: int | None) -> float:
    return 1.0 / rank if rank is not None and rank <= RR_CUTOFF else 0.0


def per_query_report(per_query: PerQuery, limit: int = MOST_DIFFERENT) -> dict[str, dict]:
    """set -> {"configs", "queries": qid -> {"text", "ranks", "rr_spread"}, "most_different"}.

    ``rr_spread`` is the best configuration's reciprocal rank (cut at 10, as MRR@10) minus the worst's: the
    queries where it is largest are the ones a choice of configuration wins or loses, listed first (at most
    ``limit``, none whose spread is 0) with the best and worst configurations."""
    out: dict[str, dict] = {}
    for name, queries in per_query.items():
        configs = list(dict.fromkeys(label for q in queries.values() for label in q["ranks"]))
        rows: dict[str, dict] = {}
        for qid, q in queries.items():
            rrs = {label: _rr(q["ranks"].get(label)) for label in configs}
            hi, lo = max(rrs.values(), default=0.0), min(rrs.values(), default=0.0)
            rows[qid] = {"text": q["text"], "ranks": {label: q["ranks"].get(label) for label in configs},
                         "rr_spread": round(hi - lo, 6),
                         "best": [label for label in configs if rrs[label] == hi],
                         "worst": [label for label in configs if rrs[label] == lo]}
        ordered = sorted((qid for qid in rows if rows[qid]["rr_spread"] > 0), key=lambda qid: -rows[qid]["rr_spread"])
        out[name] = {
            "configs": configs,
            "queries": {qid: {k: r[k] for k in ("text", "ranks", "rr_spread")} for qid, r in rows.items()},
            "most_different": [{"qid": qid, "text": rows[qid]["text"], "rr_spread": rows[qid]["rr_spread"],
                                "best": rows[qid]["best"], "worst": rows[qid]["worst"]} for qid in ordered[:limit]],
        }
    return out


def _cell(text: str, width: int = 40) -> str:
    """Query text as one Markdown table cell: a pipe or a newline would break the row."""
    text = " ".join(text.split())
    text = text if len(text) <= width else text[: width - 1] + "…"
    return text.replace("|", "\\|")


def _names(labels: list[str], shown: int = 3) -> str:
    return ", ".join(labels[:shown]) + (f" +{len(labels) - shown} more" if len(labels) > shown else "")


def per_query_markdown(report: dict[str, dict]) -> str:
    """The "per query" section of the report: per set, the queries the configurations disagree on most, then
    every query's rank under every configuration ("-": no relevant document in what was retrieved)."""
    lines = ["## per query", "",
             "Rank of each query's first relevant document under each configuration (\"-\": none retrieved). "
             f"Spread: the best configuration's reciprocal rank minus the worst's, cut at {RR_CUTOFF} as MRR@10.",
             ""]
    for name, rep in report.items():
        configs = rep["configs"]
        lines += [f"### {name}", "", f"most different (top {MOST_DIFFERENT} by spread)", ""]
        if rep["most_different"]:
            lines += ["| qid | query | spread | best | worst |", "| --- | --- | ---: | --- | --- |"]
            for d in rep["most_different"]:
                ranks = rep["queries"][d["qid"]]["ranks"]
                best = f"{_names(d['best'])} ({_rank(ranks[d['best'][0]])})"
                worst = f"{_names(d['worst'])} ({_rank(ranks[d['worst'][0]])})"
                lines.append(f"| {d['qid']} | {_cell(d['text'])} | {d['rr_spread']:.3f} | {best} | {worst} |")
        else:
            lines.append("every configuration ranks every query's first relevant document alike")
        lines += ["", "| qid | query | " + " | ".join(configs) + " |",
                  "| --- | --- | " + " | ".join("---:" for _ in configs) + " |"]
        for qid, q in rep["queries"].items():
            lines.append(f"| {qid} | {_cell(q['text'])} | " + " | ".join(_rank(q["ranks"][c]) for c in configs) + " |")
        lines.append("")
    return "\n".join(lines)


def _rank(rank: int | None) -> str:
    return "-" if rank is None else str(rank)


def markdown_report(results: dict[str, dict[str, dict[str, float]]], title: str = "hanrag eval",
                    per_query: PerQuery | None = None) -> str:
    """The metric tables (one per metric), then the "per query" section when ``per_query`` is given."""
    sets = list(dict.fromkeys(s for row in results.values() for s in row))
    lines = [f"# {title}", ""]
    for metric in DEFAULT_METRICS:
        lines += [
            f"## {metric}",
            "",
            "| config | " + " | ".join(sets) + " | mean |",
            "| --- | " + " | ".join("---:" for _ in sets) + " | ---: |",
        ]
        for label, row in results.items():
            vals = [row[s][metric] for s in sets if s in row]
            cells = [f"{row[s][metric]:.3f}" if s in row else "—" for s in sets]
            mean = sum(vals) / len(vals) if vals else float("nan")
            lines.append(f"| {label} | " + " | ".join(cells) + f" | {mean:.3f} |")
        lines.append("")
    if per_query:
        lines.append(per_query_markdown(per_query_report(per_query)))
    return "\n".join(lines)


def write_report(
    results: dict[str, dict[str, dict[str, float]]],
    out_dir: str | Path,
    title: str = "hanrag eval",
    extra: dict | None = None,
    *,
    per_query: PerQuery | None = None,
    chart_all: bool = False,
) -> dict[str, Path]:
    """report.md, report.json and chart.png (nDCG@10 per set and config) in ``out_dir``; atomic writes.

    ``per_query`` (filled by :func:`run_ablations`) adds the "per query" section and key. The chart draws the
    rows :func:`chart_rows` picks, or every row with ``chart_all``."""
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    paths = {"markdown": out / "report.md", "json": out / "report.json", "chart": out / "chart.png"}
    atomic_write_bytes(paths["markdown"], markdown_report(results, title, per_query).encode())
    payload = {"title": title, "metrics": list(DEFAULT_METRICS), "results": results, **(extra or {})}
    if per_query is not None:
        payload["per_query"] = per_query_report(per_query)
    atomic_write_bytes(paths["json"], json.dumps(payload, indent=2, ensure_ascii=False).encode())
    atomic_write_bytes(paths["chart"], _chart(results, title, all_rows=chart_all))
    return paths


BASELINE = "bm25"  # the row the chart measures every other configuration against
# drawn on every default chart when present: the two retrievers alone and what a user runs
KEY_ROWS = (BASELINE, "dense", "hanrag default", "+rerank")
CHART_ROWS = 6  # the default chart's rows at most, the baseline included: beyond that no bar group reads


@dataclass(frozen=True)
class ChartSeries:
    label: str
    values: tuple[float, ...]  # per set: nDCG@10 minus the baseline's (or nDCG@10 itself without one)
    colour: tuple[float, ...]


def chart_palette(n: int) -> list[tuple[float, ...]]:
    """``n`` distinct colours, the most distinct first: tab10, then tab20's light shades (its dark ones are
    tab10's), then hsv steps. A chart of a few rows never gets two shades of one hue."""
    from matplotlib import colormaps

    tab20 = colormaps["tab20"].colors
    palette = [tuple(c) for c in colormaps["tab10"].colors] + [tuple(c) for c in tab20[1::2]]
    extra = n - len(palette)
    if extra > 0:
        palette += [tuple(colormaps["hsv"](i / (extra + 1))[:3]) for i in range(extra)]
    return palette[:n]


def chart_rows(results: dict[str, dict[str, dict[str, float]]], metric: str = "ndcg@10",
               limit: int = CHART_ROWS) -> list[str]:
    """The rows a default chart draws, in the results' order: :data:`KEY_ROWS`, then per set the best of the
    other rows (when it is not picked already), up to ``limit``. Fifteen ablation rows side by side are
    unreadable; the question a chart answers is how the default does against the retrievers and the best
    alternative."""
    sets = list(dict.fromkeys(s for row in results.values() for s in row))
    picked = [label for label in KEY_ROWS if label in results]
    others = [label for label in results if label not in KEY_ROWS]
    for s in sets:
        scored = [(results[label][s][metric], label) for label in others
                  if s in results[label] and results[label][s][metric] == results[label][s][metric]]
        if scored:
            best = max(scored, key=lambda pair: pair[0])[1]  # max keeps the first row of a tie
            if best not in picked:
                picked.append(best)
    keep = set(picked[:limit])
    return [label for label in results if label in keep]


def chart_series(results: dict[str, dict[str, dict[str, float]]], metric: str = "ndcg@10", *,
                 all_rows: bool = False) -> tuple[list[str], dict[str, float] | None, list[ChartSeries]]:
    """(sets, the baseline's score per set or None, one series per other configuration, each its own colour).

    Ablation rows differ by a few hundredths on a 0-1 scale: plotted as they are every bar looks the same,
    so the chart shows each configuration's difference to BM25 (the baseline's own score is in the set's
    label). The rows are :func:`chart_rows`' pick, or all of them with ``all_rows``."""
    import matplotlib

    matplotlib.use("Agg")

    sets = list(dict.fromkeys(s for row in results.values() for s in row))
    base = {s: results[BASELINE][s][metric] for s in sets if s in results.get(BASELINE, {})} or None
    rows = list(results) if all_rows else chart_rows(results, metric)
    labels = [label for label in rows if label != BASELINE or base is None]
    series = []
    for label, colour in zip(labels, chart_palette(len(labels)), strict=True):
        vals = tuple(results[label].get(s, {}).get(metric, float("nan")) - (base or {}).get(s, 0.0) for s in sets)
        series.append(ChartSeries(label, vals, colour))
    return sets, base, series


def chart_figure(results: dict[str, dict[str, dict[str, float]]], title: str, *,
                 all_rows: bool = False):
    """The chart as a matplotlib Figure: a bar group per set, a bar per configuration, each bar labelled with
    its value (the difference to BM25, signed, so a bar of height 0 still shows)."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    sets, base, series = chart_series(results, all_rows=all_rows)
    crowded = len(series) > CHART_ROWS  # labels turn upright and shrink, or they run into each other
    bar_in = 0.12 if crowded else 0.32  # inches per bar: a "+0.123" label fits across or up it
    fig, ax = plt.subplots(figsize=(max(7.0, bar_in / 0.8 * len(series) * len(sets) + 3), 4.8))
    width = 0.8 / max(1, len(series))
    for i, sr in enumerate(series):
        bars = ax.bar([j + i * width for j in range(len(sets))], sr.values, width, label=sr.label, color=sr.colour)
        texts = ["" if v != v else (f"{v:+.3f}" if base else f"{v:.3f}") for v in sr.values]
        ax.bar_label(bars, labels=texts, fontsize=5 if crowded else 6, padding=2, rotation=90 if crowded else 0)
    names = [f"{s}\nBM25 {base[s]:.3f}" if base and s in base else s for s in sets]
    ax.set_xticks([j + 0.4 - width / 2 for j in range(len(sets))], names, fontsize=8)
    vals = [v for sr in series for v in sr.values if v == v]
    if base:
        ax.axhline(0.0, color="black", linewidth=0.8)
        ax.set_ylabel("nDCG@10 minus BM25's")
        ax.margins(y=0.25 if crowded else 0.15)  # room above and below the bars for their labels
    else:  # no baseline row: absolute scores on an axis zoomed to them
        lo, hi = (min(vals), max(vals)) if vals else (0.0, 1.0)
        pad = max(0.01, (hi - lo) * 0.3)
        ax.set_ylim(max(0.0, lo - pad), min(1.0, hi + pad))
        ax.set_ylabel("nDCG@10")
    ax.grid(axis="y", alpha=0.3)
    shown = len(series) + (base is not None)
    if shown < len(results):
        title = f"{title}\n{shown} of {len(results)} configurations (hanrag eval --chart-all draws every one)"
    ax.set_title(title, fontsize=9)
    # outside the axes, to the right: the legend never covers a bar
    ax.legend(fontsize=7, loc="upper left", bbox_to_anchor=(1.01, 1.0), borderaxespad=0.0, frameon=False)
    fig.tight_layout()
    return fig


def _chart(results: dict[str, dict[str, dict[str, float]]], title: str, *, all_rows: bool = False) -> bytes:
    import matplotlib.pyplot as plt

    fig = chart_figure(results, title, all_rows=all_rows)
    buf = io.BytesIO()
    fig.savefig(buf, format="png", dpi=110, bbox_inches="tight")
    plt.close(fig)
    return buf.getvalue()


# -- eval corpora as indexes (hanrag eval SETS) --------------------------------------------------------
