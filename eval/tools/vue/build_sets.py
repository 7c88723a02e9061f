"""Build eval/tune_ko2en_vue and eval/tune_en2ko_vue (TUNING sets) from snapshots of the Vue docs.

* tune_ko2en_vue: Korean queries (q_ko2en.Q) -> passages of the ENGLISH pages pages.PAGES_A (vuejs/docs)
* tune_en2ko_vue: English queries (q_en2ko.Q) -> passages of the KOREAN pages pages.PAGES_B
  (vuejs-translations/docs-ko)
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
CC BY 4.0 (Vue documentation, LICENSE of vuejs/docs and vuejs-translations/docs-ko: "The contents of this
repository, except for all image files, are licensed under CC BY 4.0", Creative Commons Attribution 4.0
International); attribution: Copyright (c) 2019-present, Yuxi (Evan) You and Vue documentation contributors,
Korean translation by the vuejs-translations/docs-ko contributors. No image file is used.
""".split())
PREP = " ".join("""
cut by eval/tools/vue/cut.py: front matter removed; page title taken from the "# " heading; heading anchors
{#...} and HTML comments removed; page-level <script>/<style> blocks (live-demo imports) and <div
class="demo"> blocks (rendered live demos) removed; the API-preference wrappers <div class="options-api"> /
<div class="composition-api"> and every other HTML tag or Vue component (<VueSchoolLink>, <ScrimbaLink>,
<details>, <sup class="vt-badge"/> ...) removed with their text kept, never inside code fences or inline code
(both API styles are therefore kept); VitePress custom-container markers (::: tip / ::: warning / ::: details
/ ::: code-group / :::) removed, a container title kept as a line of text; links to play.vuejs.org,
sfc.vuejs.org and template-explorer.vuejs.org (URLs encoding a whole app) keep their text only; code-fence
meta ({2-4}, [npm]) removed; code fences kept with the surrounding prose. Split at ## and ### headings, then
paragraph/code-block boundaries greedily packed into passages of 200-1200 characters (over-long blocks split at
line/sentence breaks); passages outside 200-1200 characters or with under 100 characters outside code fences
dropped. Korean pages only: prose blocks left untranslated (>=150 Latin letters, <10% Hangul) dropped (none at
the pinned commit). title = page title + " — " + ## heading (+ " > " + ### heading).
""".split())


SITE = Site(pages=P, path=lambda page, lang: P.path(page), corpus=corpus.corpus, prefix='vue', tools='eval/tools/vue',
            sets=('tune_ko2en_vue', 'tune_en2ko_vue'), excluded='No Kubernetes, no Python and no React documentation.',
            license=LICENSE, prep=PREP, created=CREATED)


def main():
    build(SITE, 'tune_ko2en_vue', 'en', 'ko', 'vueko2en', q_ko2en.Q,
          " ".join("""
Queries written by hand in Korean (by an AI assistant acting as annotator) before any retrieval
system saw the set, each from reading ONE target passage (relevance 2), the way Korean engineers
search English docs: term = keywords with Korean transliterations (컴퓨티드 캐싱, 스코프드 슬롯, 트랜지션
클래스) and English identifiers (defineModel, onRenderTriggered, isCustomElement); question = how-to /
natural questions (…하려면?, …나요?); paraphrase = the situation described in other words, avoiding the
passage's terms. No sentence copied from a passage. The kind field records this. Other relevant passages
were found by regex-grepping the corpus for the key English terms and reading the hits (relevance 1). No
retrieval system and no hanrag code was run to choose or judge queries. Judgments are not exhaustive:
unjudged passages count as not relevant.
""".split()),
          'Korean technical question / keywords / paraphrase -> English Vue.js documentation passage (cross-lingual)')
    build(SITE, 'tune_en2ko_vue', 'ko', 'en', 'vueen2ko', q_en2ko.Q,
          " ".join("""
Queries written by hand in English (by an AI assistant acting as annotator) before any retrieval
system saw the set, each from reading ONE target passage (relevance 2): term = keyword queries with
Vue identifiers (defineAsyncComponent, inheritAttrs, useId, vue-tsc); question = how-to / natural
questions; paraphrase = the situation described in other words. The kind field records this. Other
relevant passages were found by regex-grepping the corpus for the key Korean terms and the English
identifiers the Korean docs keep, and reading the hits (relevance 1). No retrieval system and no
hanrag code was run to choose or judge queries. Judgments are not exhaustive: unjudged passages
count as not relevant.
""".split()),
          'English technical question / keywords / paraphrase -> Korean Vue.js documentation passage (cross-lingual)')


if __name__ == '__main__':
    main()
