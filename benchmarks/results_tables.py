"""The quality tables of docs/evaluation.md, rendered from the committed result files (nothing is measured here).

    python benchmarks/results_tables.py > /tmp/tables.md

Each table names the files it reads; `hanrag default, before this release` is the same run on the commit the
``-before`` file names.
"""

from __future__ import annotations

import json
from pathlib import Path

RESULTS = Path(__file__).resolve().parent / "results"
ROWS = ("bm25", "dense", "hanrag default")


def table(title: str, now: str, before: str, part: str, metric: str) -> str:
    after, old = (json.loads((RESULTS / f).read_text()) for f in (now, before))
    sets = list(after[part]["hanrag default"])
    lines = [f"{title}, {metric}:", f"`{now}` ({after['commit'][:7]}), before: `{before}` ({old['commit'][:7]})", "",
             "| | " + " | ".join(sets) + " |", "| --- |" + " ---: |" * len(sets)]
    for name, data, row in [*((r, after, r) for r in ROWS), ("hanrag default, before this release", old,
                                                               "hanrag default")]:
        lines.append(f"| {name} | " + " | ".join(f"{data[part][row][s][metric]:.3f}".lstrip("0") for s in sets) + " |")
    return "\n".join(lines) + "\n"


def main() -> None:
    for metric in ("ndcg@10", "mrr@10"):
        print(table("Each set alone", "quality-channels-after.json", "quality-channels-before.json", "standalone",
                    metric))
    for metric in ("ndcg@10", "mrr@10"):
        print(table("MIXED, one index of every corpus, the first 300 queries of a set", "quality-mixed-after.json",
                    "quality-mixed-before.json", "mixed", metric))


if __name__ == "__main__":
    main()
