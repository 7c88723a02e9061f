"""Source diversity: later hits from an already-seen source are damped.

Applied after rerank, in score order: the n-th hit of the same source is
multiplied by ``factors[n-1]`` (1.0, 0.95, 0.90, then 0.85 for every later one
by default), so one long document cannot fill the whole result page.
"""

from __future__ import annotations

from collections.abc import Sequence

DEFAULT_FACTORS = (1.0, 0.95, 0.90, 0.85)


def diversity_factors(sources: Sequence[str], factors: Sequence[float] = DEFAULT_FACTORS) -> list[float]:
    """Multiplicative factor per hit, for hits already sorted best first.

    The last factor repeats for every further hit of a source. An empty source
    ("" = unknown) is never penalised: unrelated chunks without a source must not
    count as one source.
    """
    if not factors:
        return [1.0] * len(sources)
    seen: dict[str, int] = {}
    out = []
    for src in sources:
        if not src:
            out.append(1.0)
            continue
        n = seen.get(src, 0)
        seen[src] = n + 1
        out.append(float(factors[min(n, len(factors) - 1)]))
    return out


def apply_diversity(
    scores: Sequence[float], sources: Sequence[str], factors: Sequence[float] = DEFAULT_FACTORS
) -> tuple[list[int], list[float], list[float]]:
    """Penalise repeated sources and re-sort.

    ``scores`` and ``sources`` are aligned, best first. Returns (new order as indices
    into the input, penalty per input position, penalised score per input position).
    Penalties are assigned in the input order (the pre-diversity ranking) so a hit's
    penalty does not depend on hits it later overtakes.
    """
    pen = diversity_factors(sources, factors)
    final = [s * p if s >= 0 else s / p for s, p in zip(scores, pen, strict=True)]
    order = sorted(range(len(final)), key=lambda i: (-final[i], i))
    return order, pen, final
