"""Build eval/tune_ko2en_react and eval/tune_en2ko_react (TUNING sets) from snapshots of the React docs.

* tune_ko2en_react: Korean queries (q_ko2en.Q) -> passages of the ENGLISH pages pages.PAGES_A (reactjs/react.dev)
* tune_en2ko_react: English queries (q_en2ko.Q) -> passages of the KOREAN pages pages.PAGES_B (reactjs/ko.react.dev)
The two page lists share no page, so merging both corpora into one index puts no translated twin of a target there.
Passages are cut by cut.py; queries and judgments were written by hand (see q_*.py). Needs the two snapshots at the
paths in pages.py (bare git directories). Run from this folder: python3 build_sets.py
"""
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(1, os.path.join(os.path.dirname(os.path.abspath(__file__)), '..'))
import corpus
import pages as P
import q_en2ko
import q_ko2en
from pair_build import Site, build

CREATED = '2026-12-02'
LICENSE = " ".join("""
CC BY 4.0 (React documentation, LICENSE-DOCS.md of reactjs/react.dev and reactjs/ko.react.dev: Creative
Commons Attribution 4.0 International); attribution: Meta Platforms, Inc. and affiliates and the React
documentation contributors, Korean translation by the ko.react.dev translators
""".split())
PREP = " ".join("""
cut by eval/tools/react/cut.py: front matter removed (title kept); heading anchors {/*...*/} and MDX/HTML
comments removed; <Sandpack>/<SandpackRSC> blocks (runnable example apps) removed; <YouWillLearn>, <Recap>
and <InlineToc/> removed; <Challenges> opens a section titled as the site renders it; every other MDX
component or HTML tag removed with its text kept, never inside code fences or inline code; code-fence meta
({2-4}, [[1, 8, ...]]) removed; code fences kept with the surrounding prose. Split at ## and ### headings,
then paragraph/code-block boundaries greedily packed into passages of 200-1200 characters (over-long blocks
split at line/sentence breaks); passages outside 200-1200 characters or with under 100 characters outside
code fences dropped. Korean pages only: prose blocks left untranslated (>=150 Latin letters, <10% Hangul)
dropped (two English parameter bullets on the useLayoutEffect page). title = page title + " — " + ## heading
(+ " > " + ### heading).
""".split())


SITE = Site(pages=P, path=lambda page, lang: P.path(page), corpus=corpus.corpus, prefix='react',
            tools='eval/tools/react', sets=('tune_ko2en_react', 'tune_en2ko_react'),
            excluded='No Kubernetes and no Python documentation.', license=LICENSE, prep=PREP, created=CREATED)


def main():
    build(SITE, 'tune_ko2en_react', 'en', 'ko', 'reactko2en', q_ko2en.Q,
          " ".join("""
Queries written by hand in Korean (by an AI assistant acting as annotator) before any retrieval
system saw the set, each from reading ONE target passage (relevance 2), the way Korean engineers
search English docs: term = keywords with Korean transliterations (이펙트 클린업, 커스텀 훅, 리듀서) and English
identifiers (useEffect, flushSync, arePropsEqual); question = how-to / natural questions (…하려면?,
…나요?); paraphrase = the situation described in other words, avoiding the passage's terms. No
sentence copied from a passage. The kind field records this. Other relevant passages were found by
regex-grepping the corpus for the key English terms and reading the hits (relevance 1). No retrieval
system and no hanrag code was run to choose or judge queries. Judgments are not exhaustive: unjudged
passages count as not relevant.
""".split()),
          'Korean technical question / keywords / paraphrase -> English React documentation passage (cross-lingual)')
    build(SITE, 'tune_en2ko_react', 'ko', 'en', 'reacten2ko', q_en2ko.Q,
          " ".join("""
Queries written by hand in English (by an AI assistant acting as annotator) before any retrieval
system saw the set, each from reading ONE target passage (relevance 2): term = keyword queries with
React identifiers (useEffectEvent, getSnapshot, stopPropagation); question = how-to / natural
questions; paraphrase = the situation described in other words. The kind field records this. Other
relevant passages were found by regex-grepping the corpus for the key Korean terms and the English
identifiers the Korean docs keep, and reading the hits (relevance 1). No retrieval system and no
hanrag code was run to choose or judge queries. Judgments are not exhaustive: unjudged passages
count as not relevant.
""".split()),
          'English technical question / keywords / paraphrase -> Korean React documentation passage (cross-lingual)')


if __name__ == '__main__':
    main()
