"""The cross-lingual stage (hybrid searches): widen the candidates beyond the query's own words and script.

In order: the query's corpus links (오토베큠 -> autovacuum) are added to the BM25 query; the rule is re-selected on
the lexical evidence in any script; when the query's own language has weak lexical evidence, other languages
compete: the other names the corpus glossary gives its terms (활성 프로브 = liveness probe) and dictionary
translations for English queries (:mod:`hanrag.search.xling`) join the BM25 query, and each language's dense pool
is drawn and centred on its own mean (with strong own-language evidence, a share of that centring, all of it for a
language whose own passages match the query lexically). Every step that changes the candidates returns new
:class:`Candidates`.
"""

from __future__ import annotations

import dataclasses
import functools
import time
from collections.abc import Callable, Mapping, Sequence
from typing import TYPE_CHECKING

import numpy as np

from hanrag.backends.base import IndexBackend
from hanrag.config import Config
from hanrag.language import script_share
from hanrag.records import Chunk, Filters, QueryPlan
from hanrag.search.candidates import Candidates, Request
from hanrag.search.evidence import Evidence
from hanrag.search.plan import QueryPlanner
from hanrag.search.retrieve import dense_workers

if TYPE_CHECKING:
    from hanrag.search.searcher import StageTimes

LANGS = ("ko", "zh", "en")

Extra = dict[str, tuple[float, str]]  # expansion tokens to add to a query: token -> (weight, origin)


def with_lang(filters: Filters | None, lang: str) -> Filters:
    """``filters`` narrowed to one language (a filter that already excludes it matches nothing)."""
    base = filters or Filters()
    if base.lang and lang not in base.lang:
        return Filters(lang=("__none__",))  # the user's filter already excludes this language
    return Filters(lang=(lang,), tier=base.tier, provenance=base.provenance, source_glob=base.source_glob,
                   labels=base.labels)


# the script a language's text is written in (English is left out: its code and names are Latin script too)
SCRIPT_OF = {"ko": "hangul", "zh": "cjk"}
SCRIPT_SHARES_KEPT = 200_000  # chunks whose script share a Widener keeps (a few MB)


def script_weights(chunks: Mapping[str, Chunk], own: str, known: dict[str, float] | None = None) -> dict[str, float]:
    """Per candidate of another Korean or Chinese language: its share of letters in its language's script over the
    mean share of that language's candidates (``search.xling_centring_by_script``): a code-heavy Korean chunk is
    less Korean to the encoder than a prose one, and takes less of its language's centring. ``known``: shares by
    chunk id already counted (a chunk id is its content's hash), read and filled."""
    known = {} if known is None else known
    shares: dict[str, dict[str, float]] = {}
    for cid, chunk in chunks.items():
        script = SCRIPT_OF.get(chunk.lang)
        if script is not None and chunk.lang != own:
            share = known.get(cid)  # one read: another search may clear ``known`` between a test and a read
            if share is None:
                share = known[cid] = script_share(chunk.text, script)
            shares.setdefault(chunk.lang, {})[cid] = share
    out: dict[str, float] = {}
    for by_chunk in shares.values():
        mean = sum(by_chunk.values()) / len(by_chunk)
        if mean > 0:
            out.update({cid: share / mean for cid, share in by_chunk.items()})
    return out


class Widener:
    """The cross-lingual stage over one backend (one snapshot: its glossary, sound keys and languages are read
    from the manifest once)."""

    def __init__(self, backend: IndexBackend, cfg: Config, analyzer, planner: QueryPlanner,
                 evidence: Evidence, large: Callable[[], bool] = lambda: False) -> None:
        self.backend = backend
        self.cfg = cfg
        self.analyzer = analyzer
        self.planner = planner
        self.evidence = evidence
        self._index_langs: tuple[str, ...] | None = None
        self.large = large  # a large index (Retriever.large): the per-language pools are searched side by side
        self._script_shares: dict[str, float] = {}  # chunk id -> its script share (script_weights), for this snapshot

    # -- the snapshot's side ------------------------------------------------------------------------
    @functools.cached_property
    def glossary(self):
        """The corpus glossary of the open snapshot (its manifest's ``glossary``, less ``search.glossary_exclude``)
        as a lexicon; None without one or with ``search.glossary_weight`` 0."""
        from hanrag.lexicon import Lexicon

        entries = (self.backend.manifest() or {}).get("glossary") if self.cfg.search.glossary_weight > 0 else None
        drop = {t.casefold() for t in self.cfg.search.glossary_exclude}
        clean: dict[str, list[str]] = {}
        for term, equivs in (entries.items() if isinstance(entries, dict) else ()):
            kept = [str(e) for e in equivs if str(e).casefold() not in drop] if isinstance(equivs, list) else []
            if kept and str(term).casefold() not in drop:
                clean[str(term)] = kept
        return Lexicon(clean) if clean else None

    @functools.cached_property
    def sound_keys(self) -> dict[str, dict[str, list[str]]]:
        """The open snapshot's English words and Korean loanwords by consonant key (its manifest's ``sound_keys``,
        :mod:`hanrag.index.links`); empty without them or with ``search.link_weight`` 0."""
        keys = (self.backend.manifest() or {}).get("sound_keys") if self.cfg.search.link_weight > 0 else None
        if not isinstance(keys, dict):
            return {}
        return {side: {str(k): [str(w) for w in ws] for k, ws in table.items() if isinstance(ws, list)}
                for side, table in keys.items() if isinstance(table, dict)}

    def index_langs(self) -> tuple[str, ...]:
        """Languages present in the index (from the manifest's per-language counts when given)."""
        if self._index_langs is None:
            counts = (self.backend.manifest() or {}).get("langs") or {}
            langs = tuple(lang for lang in LANGS if counts.get(lang, 0) > 0) if isinstance(counts, dict) else ()
            self._index_langs = langs or LANGS
        return self._index_langs

    def pools_wanted(self, mode: str, filters: Filters | None) -> dict[str, Filters]:
        """The per-language dense pools this stage is sure to draw for a search (language -> its filters), so that
        retrieval can draw them with the query's own search (:attr:`Request.pools`): every language's, in a hybrid
        search of an index of more than one language whose languages always compete (``search.xling_compete =
        "always"``, centred); none otherwise (the stage decides on the query's evidence and draws them itself)."""
        sc = self.cfg.search
        if (mode != "hybrid" or not sc.cross_lingual or sc.xling_compete != "always"
                or sc.xling_calibration != "center" or len(self.index_langs()) < 2):
            return {}
        return {lang: with_lang(filters, lang) for lang in self.index_langs()}

    # -- the stage ----------------------------------------------------------------------------------
    def widen(self, request: Request, cand: Candidates, times: StageTimes) -> Candidates:
        """The candidates after the cross-lingual stage (``cand`` itself when nothing changed): corpus links;
        the rule re-selected on the lexical evidence in any script; when the query's own language has weak
        lexical evidence, glossary names and translations (time counted as BM25) and each language's dense
        pool centred (time counted as dense)."""
        sc = self.cfg.search
        ev = self.evidence
        # corpus links in every query: a Korean question in a mixed collection needs the English words of its
        # answer even when Korean passages match it too (they are precise: a link lands on a word the corpus uses)
        if sc.link_weight > 0:
            cand = self.add_tokens(request, cand, self.linked, times)
        ceiling = ev.query_ceiling(cand.plan, cand.weights)
        evidence = ev.lexical_evidence(cand.plan, cand.weights, cand.bm25, cand.chunks, ceiling=ceiling)
        weak = evidence < sc.xling_min_evidence  # in any script: decides the weights
        own = ev.lexical_evidence(cand.plan, cand.weights, cand.bm25, cand.chunks, lang=cand.plan.lang,
                                  ceiling=ceiling)
        weak_own = own < sc.xling_min_evidence  # in the query's own language: other languages compete
        compete = weak_own or (sc.xling_compete == "always" and len(self.index_langs()) > 1)
        if compete and self.glossary is not None:
            cand = self.add_tokens(request, cand, self.glossed, times)
            # a glossed term's other name is lexical evidence too (measured against the query's own ceiling)
            evidence = ev.lexical_evidence(cand.plan, cand.weights, cand.bm25, cand.chunks, ceiling=ceiling)
            weak = evidence < sc.xling_min_evidence
        plan = dataclasses.replace(self.planner.replan(cand.plan, weak), lexical_evidence=round(evidence, 4))
        cand = dataclasses.replace(cand, plan=plan)
        # translations only on weak own-language evidence: their weight (6) was fitted for such queries, and added to
        # a strong English query they outweigh its own words
        if weak_own and cand.plan.lang == "en" and sc.xling_translate_weight > 0:
            cand = self.add_tokens(request, cand, self.translations, times)
            # translations that match are lexical evidence too: the rule is chosen again on the query as run
            after = ev.translated_evidence(cand.plan, cand.weights, cand.bm25)
            if weak and after >= sc.xling_min_evidence:
                plan = dataclasses.replace(self.planner.replan(cand.plan, True, translated=True),
                                           lexical_evidence=round(after, 4))
                cand = dataclasses.replace(cand, plan=plan)
        # the query's lexical evidence in each language, on the BM25 query as run (the pools below change no BM25)
        by_lang = self.evidence_by_language(cand, ceiling) if compete else {}
        if compete and sc.xling_calibration == "center" and cand.qvec is not None:
            t = time.perf_counter()
            offsets, dense, chunks = self.language_pools(request, cand.qvec, cand.plan.lang, cand.dense, cand.chunks,
                                                         cand.pools)
            # a query that competes only by xling_compete = "always" (strong own-language evidence): a share of each
            # language's centring, all of it for a language with lexical evidence of its own (Widener.share)
            shares = {lang: 1.0 if weak_own else self.share(by_lang.get(lang, 0.0)) for lang in offsets}
            offsets = {lang: off * shares[lang] for lang, off in offsets.items()}
            centring = tuple((lang, round(-offsets[lang], 4) + 0.0, shares[lang])  # + 0.0: never -0.0
                             for lang in sorted(offsets) if lang != cand.plan.lang)
            if len(self._script_shares) > SCRIPT_SHARES_KEPT:  # a bound, not an LRU: counting again is cheap
                self._script_shares.clear()
            weights = (script_weights(chunks, cand.plan.lang, self._script_shares) if sc.xling_centring_by_script
                       else {})
            cand = dataclasses.replace(cand, dense=dense, chunks=chunks, offsets=offsets, offset_weights=weights,
                                       ids=tuple(dict.fromkeys([*cand.ids, *dense])),
                                       plan=dataclasses.replace(cand.plan, language_centring=centring))
            times.dense += time.perf_counter() - t
        if compete and sc.xling_lexical_parity:
            scales = self.lexical_parity(cand.plan.lang, by_lang)
            if scales:
                cand = dataclasses.replace(cand, bm25_scales=scales, plan=dataclasses.replace(
                    cand.plan, lexical_parity=tuple((lang, round(f, 4)) for lang, f in sorted(scales.items()))))
        return cand

    def lexical_parity(self, own: str, by_lang: Mapping[str, float]) -> dict[str, float]:
        """Per other language whose passages match the query lexically (at least ``xling_min_evidence`` of the
        ceiling) but less than the query's own language ``own``: the factor that puts its best BM25 on the own
        best."""
        floor, mine = self.cfg.search.xling_min_evidence, by_lang.get(own, 0.0)
        return {lang: mine / e for lang, e in by_lang.items() if lang != own and floor <= e < mine}

    def evidence_by_language(self, cand: Candidates, ceiling: float) -> dict[str, float]:
        """The query's lexical evidence in each language of the index (:meth:`Evidence.lexical_evidence`)."""
        return {lang: self.evidence.lexical_evidence(cand.plan, cand.weights, cand.bm25, cand.chunks, lang=lang,
                                                     ceiling=ceiling) for lang in self.index_langs()}

    def share(self, evidence: float) -> float:
        """The share of a language's centring for a query with strong own-language evidence, given that language's
        own lexical evidence: ``xling_compete_share``, or all of it for a language whose own passages match the
        query lexically (``xling_compete_by_evidence``)."""
        sc = self.cfg.search
        return 1.0 if sc.xling_compete_by_evidence and evidence >= sc.xling_min_evidence else sc.xling_compete_share

    def add_tokens(self, request: Request, cand: Candidates,
                   extra_of: Callable[[QueryPlan, Mapping[str, float]], Extra], times: StageTimes) -> Candidates:
        """New candidates with the tokens ``extra_of`` gives (token -> weight, origin) added to the BM25 query and
        BM25 run again (new chunks loaded; time counted as BM25); ``cand`` itself when there is nothing to add."""
        t = time.perf_counter()
        extra = extra_of(cand.plan, cand.weights)
        if extra:
            weights = {**cand.weights, **{tok: w for tok, (w, _) in extra.items()}}
            bm25 = dict(self.backend.sparse_search(weights, request.k, request.filters))
            new = [cid for cid in bm25 if cid not in cand.chunks]
            chunks = dict(cand.chunks)
            if new:
                chunks.update(zip(new, self.backend.get_chunks(new), strict=True))
            plan = dataclasses.replace(
                cand.plan, expansions=cand.plan.expansions + tuple((tok, w) for tok, (w, _) in extra.items()),
                expansion_via=cand.plan.expansion_via + tuple((tok, via) for tok, (_, via) in extra.items()))
            cand = dataclasses.replace(cand, plan=plan, weights=weights, bm25=bm25, chunks=chunks,
                                       ids=tuple(dict.fromkeys([*cand.ids, *bm25])))
        times.bm25 += time.perf_counter() - t
        return cand

    # -- what widens the BM25 query -----------------------------------------------------------------
    def translations(self, plan: QueryPlan, weights: Mapping[str, float]) -> Extra:
        """Dictionary translations (en -> zh, and their Hangul readings) of the query's words not yet in it."""
        from hanrag.search.xling import translate_query

        sources: dict[str, str] = {}
        trans = translate_query(plan.query, self.analyzer, self.cfg.search.xling_translate_weight, sources)
        return {t: (w, f"translation:{sources[t]}") for t, w in trans.items() if t not in weights}

    def glossed(self, plan: QueryPlan, weights: Mapping[str, float]) -> Extra:
        """The other names the corpus glossary gives the query's terms, not yet in the query."""
        from hanrag.text.query import glossary_expansions

        return glossary_expansions(plan.query, plan.lang, self.analyzer, self.glossary,
                                   self.cfg.search.glossary_weight, weights)

    def linked(self, plan: QueryPlan, weights: Mapping[str, float]) -> Extra:
        """The corpus links of the query's words (오토베큠 -> autovacuum, deployment -> 디플로이먼트, 변수 -> variable)
        not yet in it; one word's links share ``search.link_weight``."""
        from hanrag.text.query import link_expansions

        sc = self.cfg.search

        def exists(tok: str) -> bool:
            return bool(self.backend.sparse_search({tok: 1.0}, 1))

        links = link_expansions(plan.query, plan.tokens, self.analyzer, self.sound_keys, sc.link_weight,
                                sc.link_channels, weights, exists)
        # as for a lexicon term (plan.promote_absent_terms): a query word no chunk holds (오토베큠 over English
        # pages) can only match through its links, which then stand in for it at its full weight
        def held(word: str) -> bool:  # an English word as the index writes it (stemmed), a Korean one as Kiwi cuts it
            if word.isascii():
                return exists(self.analyzer.english_token(word) or word)
            # a word the index holds whole needs no second Kiwi pass on the query's hot path
            return exists(word) or all(exists(t) for t in self.analyzer.analyze(word, "ko").tokens)

        absent = {word for _, via in links.values() if not held(word := via[5:].rpartition(" (")[0])}
        return {t: (min(1.0, w / sc.link_weight) if via[5:].rpartition(" (")[0] in absent else w, via)
                for t, (w, via) in links.items()}

    # -- per-language dense pools -------------------------------------------------------------------
    def language_pools(self, request: Request, qvec: np.ndarray, own: str, dense: Mapping[str, float],
                       chunks: Mapping[str, Chunk], drawn: Mapping[str, Sequence[tuple[str, float]]] | None = None
                       ) -> tuple[dict[str, float], dict[str, float], dict[str, Chunk]]:
        """Draw dense candidates per corpus language and centre each language on its own pool.

        Returns per-language offsets (pool mean minus the query language's pool mean): subtracting them puts
        every language's candidates on the same footing, so a strongly same-language-biased encoder no longer
        buries the other script; and new dense scores and chunks (``dense`` and ``chunks`` with each pool's
        new candidates added). ``drawn``: pools retrieval already drew (:attr:`Candidates.pools`), used as they are.
        """
        dense, chunks = dict(dense), dict(chunks)
        means: dict[str, float] = {}
        langs = self.index_langs()

        def pool(lang: str) -> list[tuple[str, float]]:
            return self.backend.dense_search(qvec, request.k, with_lang(request.filters, lang))

        # on a large index the pools are searched side by side (the graph walk and BLAS release the GIL): one
        # after another they tripled a hybrid search's time at 100,000 chunks (scale-100000-compete-*.json)
        drawn = drawn or {}
        if all(lang in drawn for lang in langs):
            pools = [list(drawn[lang]) for lang in langs]
        elif len(langs) > 1 and self.large():
            pools = list(dense_workers().map(pool, langs))
        else:
            pools = [pool(lang) for lang in langs]
        for lang, hits in zip(langs, pools, strict=True):
            if not hits:
                continue
            means[lang] = float(np.mean([s for _, s in hits]))
            new = [cid for cid, _ in hits if cid not in chunks]
            for cid, s in hits:
                dense.setdefault(cid, s)
            if new:
                chunks.update(zip(new, self.backend.get_chunks(new), strict=True))
        ref = means.get(own, max(means.values()) if means else 0.0)
        return {lang: m - ref for lang, m in means.items()}, dense, chunks
