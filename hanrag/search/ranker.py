"""The learned ranking stage: the evidence each candidate carries, and boosted trees that weigh it.

The rule table (:mod:`hanrag.search.presets`) weighs two numbers per candidate — its normalised BM25 and its
calibrated cosine — by the query's rule. A candidate carries more: how much of the query its BM25 covers in the
query's own words and through expansions (lexicon, glossary, corpus links, translations, readings), its raw
cosine against the best in the pool, whether it is in the query's language, where each retriever ranked it, its
length. :func:`candidate_features` computes them from the searcher's own state
(:meth:`hanrag.search.searcher.Searcher.ranking_features`), so ``benchmarks/fit.py --records`` records what a
search computes and ``benchmarks/fit_ranker.py`` trains on it.

:class:`TreeRanker` is such a model: LambdaMART trees (trained with LightGBM, stored as JSON by
:func:`from_lightgbm`, evaluated here with numpy alone) started from the rule table's score, so they learn
corrections to the table. ``search.ranker`` names it (``lambdamart``, bundled in ``hanrag/rankers/``, the default:
the fitting protocol prefers it to the rule table, docs/evaluation.md); it reorders the rule table's head
(:func:`hanrag.search.ranking.learned_ranking`), the query language's candidates keeping the table's order among
themselves when the model says so (:func:`keep_language_order`; the bundled model does not), and says per hit what
each feature added (``--explain``).
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from hanrag.bundled import RANKER_DIR
from hanrag.language import (
    CLASS_LETTER,
    CLASS_SCRIPT,
    CLASS_SPACE,
    CLASS_SYMBOL,
    LANG_SCRIPT,
    bmp_classes,
    script_share,
    symbol_share,
)

FEATURES = (
    "rule_fused",  # the rule table's fused score: the model corrects the table rather than replacing it
    "bm25_norm",  # min-max BM25 over the pool
    "dense_calibrated",  # cosine above the language's background (fusion.calibrated_cosine)
    "dense_gap",  # raw cosine minus the pool's best
    "own_share",  # BM25 of the query's own tokens over the query's ceiling
    "expansion_share",  # BM25 of every expansion (lexicon, glossary, links, translations) over the same ceiling
    "same_language",  # 1 when the chunk is in the query's language
    "bm25_rank",  # 1 / (1 + rank) in the BM25 list, tied scores sharing a rank (0 when BM25 did not retrieve it)
    "dense_rank",  # 1 / (1 + rank) in the dense list
    "log_length",  # log of the chunk's characters over 512
    "centring",  # what the cross-lingual centring added to the cosine (its language's offset times its script weight)
    "script_share",  # share of the chunk's letters in the query language's script (a Korean page of commands: low)
    "symbol_share",  # share of the chunk's non-space characters that are ASCII symbols or digits (code, config)
    # the second encoder's cosine (embedder.cross_lingual_weight) minus the pool's best: the language-agnostic
    # encoder's say on its own, which the blended cosine mixes with the main one's (0 without a second encoder)
    "second_gap",
)


TIE = 1e-6  # relative: scores this close are tied (two backends compute BM25 to about this precision)


def _rank_feature(ids: Sequence[str], retrieved: Mapping[str, float]) -> np.ndarray:
    """1 / (1 + rank), the rank counting the scores above this one's: tied scores share a rank, so the feature does
    not depend on how a backend orders ties (the embedded index by row, Milvus by chunk id)."""
    scores = np.sort(np.fromiter(retrieved.values(), dtype=np.float64, count=len(retrieved)))
    out = np.zeros(len(ids), dtype=np.float64)
    for i, c in enumerate(ids):
        if c in retrieved:
            v = float(retrieved[c])
            above = len(scores) - int(np.searchsorted(scores, v + TIE * max(1.0, abs(v)), side="right"))
            out[i] = 1.0 / (1.0 + above)
    return out


def candidate_features(ids: Sequence[str], rule_fused: np.ndarray, bm25_norm: np.ndarray, dense_norm: np.ndarray,
                       dense_raw: np.ndarray,
                       own: np.ndarray, expansion: np.ndarray, ceiling: float, same_language: np.ndarray,
                       bm25_list: Mapping[str, float], dense_list: Mapping[str, float],
                       lengths: np.ndarray, centring: np.ndarray | None = None,
                       dense_best: float | None = None, script_share: np.ndarray | None = None,
                       symbol_share: np.ndarray | None = None, second: np.ndarray | None = None,
                       second_best: float | None = None) -> np.ndarray:
    """The (candidates × :data:`FEATURES`) matrix; NaN scores (a retriever that gave none) count as 0.
    ``dense_best``: the pool's best cosine when ``ids`` are part of the pool (default: the best of ``dense_raw``);
    ``script_share``, ``symbol_share``: the chunks' :func:`hanrag.language.script_share` in the query language's
    script and :func:`hanrag.language.symbol_share` (:func:`text_shape`; default 0); ``second``, ``second_best``:
    the second encoder's cosines and the pool's best of them, as ``dense_raw`` and ``dense_best`` (default 0)."""
    scale = ceiling if ceiling > 0 else 1.0
    cols = [
        np.nan_to_num(rule_fused), np.nan_to_num(bm25_norm), np.nan_to_num(dense_norm),
        _gap(dense_raw, dense_best, len(ids)),
        np.nan_to_num(own) / scale, np.nan_to_num(expansion) / scale,
        np.asarray(same_language, dtype=np.float64),
        _rank_feature(ids, bm25_list), _rank_feature(ids, dense_list),
        np.log(np.maximum(np.asarray(lengths, dtype=np.float64), 1.0) / 512.0),
        np.zeros(len(ids)) if centring is None else np.asarray(centring, dtype=np.float64),
        np.zeros(len(ids)) if script_share is None else np.asarray(script_share, dtype=np.float64),
        np.zeros(len(ids)) if symbol_share is None else np.asarray(symbol_share, dtype=np.float64),
        _gap(second, second_best, len(ids)),
    ]
    return np.column_stack(cols).astype(np.float64)


def _gap(values: np.ndarray | None, best: float | None, n: int) -> np.ndarray:
    """Each cosine minus ``best`` (default: the best of ``values``); a missing cosine reads -1, no cosines 0."""
    if values is None:
        return np.zeros(n)
    vals = np.asarray(values, dtype=np.float64)
    top = best if best is not None else np.nanmax(vals) if np.isfinite(vals).any() else 0.0
    return np.nan_to_num(vals - top, nan=-1.0)


def text_shape(texts: Sequence[str], lang: str) -> tuple[np.ndarray, np.ndarray]:
    """Each text's share of letters in ``lang``'s script (:func:`hanrag.language.script_share`) and its share of
    ASCII symbols (:func:`hanrag.language.symbol_share`): what a passage is made of, which BM25 and the cosine do not
    say (a Korean cheat sheet of kubectl commands is Korean by its tag, English and symbols by its letters).

    One table lookup per character over all the texts at once (the same counts as the regexes, a fraction of
    their time on the search path); a text beyond the Basic Multilingual Plane is counted by the regexes."""
    script = LANG_SCRIPT.get(lang, "latin")
    n = len(texts)
    if n == 0:
        return np.zeros(0), np.zeros(0)
    points = np.frombuffer("".join(texts).encode("utf-32-le", "surrogatepass"), dtype="<u4")
    lengths = np.fromiter(map(len, texts), dtype=np.int64, count=n)
    ends = np.cumsum(lengths)
    starts = ends - lengths
    wide = points >= 0x10000
    classes = np.frombuffer(bmp_classes(), dtype=np.uint8)[np.where(wide, 0, points)]

    def count(bit: int) -> np.ndarray:
        run = np.concatenate(([0], np.cumsum((classes & bit) != 0)))
        return (run[ends] - run[starts]).astype(np.float64)

    letters, own, symbols = count(CLASS_LETTER), count(CLASS_SCRIPT[script]), count(CLASS_SYMBOL)
    non_space = lengths - count(CLASS_SPACE)
    scripts = np.divide(own, letters, out=np.zeros(n), where=letters > 0).clip(max=1.0)
    shares = np.divide(symbols, non_space, out=np.zeros(n), where=non_space > 0)
    if wide.any():
        run = np.concatenate(([0], np.cumsum(wide)))
        for i in np.flatnonzero(run[ends] > run[starts]):
            scripts[i], shares[i] = script_share(texts[i], script), symbol_share(texts[i])
    return scripts, shares


def keep_language_order(scores: np.ndarray, rule: np.ndarray, same: np.ndarray) -> np.ndarray:
    """``scores`` with the query-language candidates' scores handed out again in the rule table's order: the
    highest of their learned scores to the one the table ranks first, and so on. Where other-language candidates
    sit among them is the model's; the order among the query's own language stays the table's. The trees' evidence
    is what crosses languages (translations, links, centred cosines); within the query's own language BM25 and the
    cosine already speak directly, and trees trained mostly on cross-language sets reorder neighbouring pages there
    on noise (tune_ko_tech, docs/evaluation.md)."""
    idx = np.flatnonzero(same)
    out = np.array(scores, dtype=np.float64, copy=True)
    if len(idx) > 1:
        out[idx[np.argsort(-np.asarray(rule)[idx], kind="stable")]] = np.sort(out[idx])[::-1]
    return out


# -- the model: boosted trees read from JSON, evaluated with numpy ---------------------------------------------------

MODEL_FORMAT = "hanrag-trees/1"
BUNDLED = {"lambdamart": "lambdamart.json"}  # search.ranker names shipped in hanrag/rankers/
_MISSING = {"None": 0, "Zero": 1, "NaN": 2}  # LightGBM's missing_type per split


class RankerError(ValueError):
    """A ranker model that cannot be used: its file, and what is wrong with it."""


@dataclass(frozen=True)
class TreeRanker:
    """Regression trees whose summed leaves correct the rule table: a candidate scores ``rule_scale · rule_fused
    + Σ trees`` (the trees were trained from that start: LightGBM's ``init_score``). Every tree's nodes are laid out
    in one set of arrays, children after their parent, so an evaluation walks all trees of all candidates at once.

    ``value`` holds a leaf's output and, for a split, the output the node would have as a leaf (LightGBM's
    ``internal_value``): the walk from a tree's root to its leaf credits each split's feature with the change in
    value, so the per-feature contributions and the roots' values sum exactly to the score (Saabas' attribution)."""

    source: str  # the file read, or "bundled:<name>"
    features: tuple[str, ...]
    rule_scale: float
    head: int  # candidates it reorders: the rule table's first ``head``, as it was trained
    roots: np.ndarray  # node index of each tree's root
    feature: np.ndarray  # a split's feature column; -1 for a leaf
    threshold: np.ndarray
    left: np.ndarray  # child node indices (a leaf's are its own)
    right: np.ndarray
    value: np.ndarray
    missing: np.ndarray  # 0: a NaN is 0; 1: a 0 or NaN goes the default way; 2: a NaN goes the default way
    default_left: np.ndarray
    trained: Mapping[str, object] = field(default_factory=dict)  # how it was trained (command, commit, sets)
    # the query language's candidates keep the rule table's order among themselves (keep_language_order): how the
    # trees were run when the fitting protocol chose them; a model file without the key was written when every
    # model ran that way
    keep_language_order: bool = True

    def _walk(self, X: np.ndarray, contributions: np.ndarray | None) -> np.ndarray:
        """Each candidate's leaf in each tree (candidates × trees); adds each split's change of value to
        ``contributions[candidate, feature]`` when given."""
        n = X.shape[0]
        node = np.broadcast_to(self.roots, (n, len(self.roots))).copy()
        rows = np.repeat(np.arange(n), len(self.roots)).reshape(n, -1)
        plain = not self.missing.any()  # every split reads a NaN as 0 (LightGBM's default): no per-node routing
        if plain:
            X = np.where(np.isnan(X), 0.0, X)
        while True:
            feat = self.feature[node]
            inner = feat >= 0
            if not inner.any():
                return node
            x = X[rows, np.maximum(feat, 0)]
            if plain:
                go_left = x <= self.threshold[node]
            else:
                kind = self.missing[node]
                nan = np.isnan(x)
                default = (kind == 2) & nan | (kind == 1) & (nan | (np.abs(x) <= 1e-35))
                x = np.where(nan & (kind == 0), 0.0, x)
                go_left = np.where(default, self.default_left[node], x <= self.threshold[node])
            nxt = np.where(inner, np.where(go_left, self.left[node], self.right[node]), node)
            if contributions is not None:
                np.add.at(contributions, (rows[inner], feat[inner]), self.value[nxt[inner]] - self.value[node[inner]])
            node = nxt

    def predict(self, X: np.ndarray) -> np.ndarray:
        """The trees' sum per candidate (without the rule table's part)."""
        X = np.asarray(X, dtype=np.float64)
        return self.value[self._walk(X, None)].sum(axis=1)

    def score(self, X: np.ndarray) -> np.ndarray:
        """The ranking score: the rule table's fused score, scaled as in training, plus the trees."""
        X = np.asarray(X, dtype=np.float64)
        return self.rule_scale * X[:, self.features.index("rule_fused")] + self.predict(X)

    def contributions(self, X: np.ndarray) -> tuple[np.ndarray, float]:
        """Per candidate and feature, what the trees credit the feature with, and the trees' base (the roots'
        values): ``base + contributions.sum(axis=1) == predict(X)``."""
        X = np.asarray(X, dtype=np.float64)
        out = np.zeros(X.shape, dtype=np.float64)
        self._walk(X, out)
        return out, float(self.value[self.roots].sum())


def from_lightgbm(dump: Mapping, features: Sequence[str], rule_scale: float, head: int,
                  trained: Mapping[str, object] | None = None, keep_language_order: bool = True) -> dict:
    """A LightGBM model (``Booster.dump_model()``) as hanrag's JSON model (:data:`MODEL_FORMAT`): for each tree its
    nodes in pre-order, children after their parent. Numerical splits only (hanrag's features are numbers).
    ``keep_language_order``: whether a search runs the trees with the query language's order kept
    (:func:`keep_language_order`)."""
    names = list(dump.get("feature_names", features))
    if names != list(features):
        raise RankerError(f"the LightGBM model's features {names} are not hanrag's {list(features)}")
    trees = []
    for info in dump["tree_info"]:
        t: dict[str, list] = {k: [] for k in ("feature", "threshold", "left", "right", "value", "missing",
                                             "default_left")}

        def add(node: Mapping, t=t) -> int:
            i = len(t["feature"])
            for k in t:
                t[k].append(None)
            if "leaf_value" in node:
                t["feature"][i], t["threshold"][i], t["left"][i], t["right"][i] = -1, 0.0, i, i
                t["value"][i], t["missing"][i], t["default_left"][i] = float(node["leaf_value"]), 0, False
                return i
            if node.get("decision_type", "<=") != "<=":
                raise RankerError(f"split {node.get('decision_type')!r}: only numerical splits (<=) are read")
            t["feature"][i], t["threshold"][i] = int(node["split_feature"]), float(node["threshold"])
            t["value"][i], t["missing"][i] = float(node["internal_value"]), _MISSING[node.get("missing_type", "None")]
            t["default_left"][i] = bool(node.get("default_left", True))
            t["left"][i] = add(node["left_child"])
            t["right"][i] = add(node["right_child"])
            return i

        add(info["tree_structure"])
        trees.append(t)
    return {"format": MODEL_FORMAT, "features": list(features), "rule_scale": float(rule_scale), "head": int(head),
            "keep_language_order": bool(keep_language_order), "trained": dict(trained or {}), "trees": trees}


def load_ranker(spec: str) -> TreeRanker | None:
    """``search.ranker``: "" (the rule table alone: None), a bundled model's name (:data:`BUNDLED`) or the path of a
    JSON model (:func:`from_lightgbm`'s format). Raises :class:`RankerError` naming the file and the problem."""
    if not spec:
        return None
    path = RANKER_DIR / BUNDLED[spec] if spec in BUNDLED else Path(spec).expanduser()
    source = f"bundled:{spec}" if spec in BUNDLED else str(path)
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        raise RankerError(f"{path}: no such ranker model (search.ranker is {spec!r}; bundled: "
                          f"{', '.join(BUNDLED)}; \"\" for the rule table alone)") from None
    except (OSError, UnicodeDecodeError, json.JSONDecodeError) as e:
        raise RankerError(f"{path}: not a readable JSON ranker model: {e}") from None
    try:
        return _ranker_from(data, source)
    except (KeyError, TypeError, ValueError) as e:
        raise RankerError(f"{path}: not a usable ranker model: {e}") from None


def _ranker_from(data: Mapping, source: str) -> TreeRanker:
    if not isinstance(data, Mapping) or data.get("format") != MODEL_FORMAT:
        raise ValueError(f"format is not {MODEL_FORMAT!r}")
    features = tuple(data["features"])
    if features != FEATURES:
        missing = sorted(set(FEATURES) ^ set(features))
        raise ValueError(f"its features are not this hanrag's ({', '.join(missing) or 'another order'}): "
                         "train it again with benchmarks/fit_ranker.py")
    cols: dict[str, list] = {k: [] for k in ("feature", "threshold", "left", "right", "value", "missing",
                                            "default_left")}
    roots = []
    for t in data["trees"]:
        base, n = len(cols["feature"]), len(t["feature"])
        if n == 0 or any(len(t[k]) != n for k in cols):
            raise ValueError("a tree's node arrays are empty or of different lengths")
        feat = [int(f) for f in t["feature"]]
        for i, f in enumerate(feat):
            if f >= len(features) or f < -1:
                raise ValueError(f"a split on feature {f}, of {len(features)}")
            kids = (int(t["left"][i]), int(t["right"][i]))
            if f >= 0 and not all(i < c < n for c in kids):
                raise ValueError("a split's children must come after it in its tree")  # so a walk always ends
        roots.append(base)
        cols["feature"] += feat
        for k in ("left", "right"):
            cols[k] += [base + int(c) for c in t[k]]
        for k in ("threshold", "value", "missing", "default_left"):
            cols[k] += list(t[k])
    if not roots:
        raise ValueError("no trees")
    value = np.array(cols["value"], dtype=np.float64)
    if not np.isfinite(value).all() or not np.isfinite(np.array(cols["threshold"], dtype=np.float64)).all():
        raise ValueError("a value or threshold is not a finite number")
    head = int(data["head"])
    if head < 1 or not np.isfinite(float(data["rule_scale"])):
        raise ValueError(f"head must be >= 1 (got {head}) and rule_scale a finite number")
    keep = data.get("keep_language_order", True)
    if not isinstance(keep, bool):
        raise ValueError(f"keep_language_order must be true or false (got {keep!r})")
    return TreeRanker(
        source=source, features=features, rule_scale=float(data["rule_scale"]), head=head,
        roots=np.array(roots, dtype=np.int64), feature=np.array(cols["feature"], dtype=np.int64),
        threshold=np.array(cols["threshold"], dtype=np.float64), left=np.array(cols["left"], dtype=np.int64),
        right=np.array(cols["right"], dtype=np.int64), value=value,
        missing=np.array(cols["missing"], dtype=np.int64), default_left=np.array(cols["default_left"], dtype=bool),
        trained=dict(data.get("trained", {})), keep_language_order=keep)
