"""Warming an open index before the server reports ready: every lazy load a first query would pay.

What a search loads on first use: Kiwi (its model, and more on the first analysis), jieba's dictionary,
the Hanja reading table, the English -> Chinese dictionary of cross-script translation, the embedder's
first batch, the reranker, OpenCC for highlights. One search per script (Korean, Chinese, English, and
a mixed one) runs the whole pipeline with explanations, so each is loaded here rather than by a user's
first query. A server answers queries in any script, so all of them are warmed whatever the corpus holds.
"""

from __future__ import annotations

import gc
import time
from typing import Any

WARM_QUERIES = (
    "검색 색인을 다시 만드는 방법",
    "如何重建全文检索索引",
    "how to rebuild the search index",
    "甲木 일간의 용신 configuration",
)


def warm_index(index: Any) -> float:
    """Run the warm-up searches on ``index`` (a :class:`hanrag.api.Index`); the seconds it took."""
    from hanrag.server.output import highlights

    t0 = time.perf_counter()
    cfg = index.config
    if cfg.search.xling_translate_weight > 0:
        from hanrag.text.cedict import en_zh_dictionary

        en_zh_dictionary()  # parsed once per process; a weak English query needs it
    if cfg.search.link_weight > 0 and "hanja" in cfg.search.link_channels:
        from hanrag.text.cedict import hangul_en_dictionary

        hangul_en_dictionary()  # a Korean query's Sino-Korean words link through it
    for query in WARM_QUERIES:
        for mode in ("hybrid", "bm25", "dense"):
            index.search_result(query, top_k=10, mode=mode, explain=True)
    highlights("全文檢索 Search", ("全文", "search"), ())  # OpenCC, loaded by the first explained hit
    # the loads above leave millions of long-lived objects (dictionaries, tables); collected and frozen here,
    # they are never traversed again, so no early query pays a full collection over them (seen: 45 ms vs 11)
    gc.collect()
    gc.freeze()
    return time.perf_counter() - t0
