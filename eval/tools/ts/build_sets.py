"""Build eval/tune_ko2en_ts and eval/tune_en2ko_ts (TUNING sets) from snapshots of the TypeScript handbook.

* tune_ko2en_ts: Korean queries (q_ko2en.Q) -> passages of the ENGLISH pages pages.PAGES_A
  (microsoft/TypeScript-Website, packages/documentation/copy/en)
* tune_en2ko_ts: English queries (q_en2ko.Q) -> passages of the KOREAN pages pages.PAGES_B
  (microsoft/TypeScript-Website-Localizations, docs/documentation/ko)
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

CREATED = '2026-12-03'
LICENSE = " ".join("""
CC BY 4.0 (TypeScript documentation: LICENSE of microsoft/TypeScript-Website and of
microsoft/TypeScript-Website-Localizations, Creative Commons Attribution 4.0 International; the code of those
repositories is under LICENSE-CODE and no tool code of theirs is used); attribution: Copyright (c) Microsoft
Corporation and the TypeScript documentation contributors, Korean translation by the TypeScript-Website-Localizations
contributors.
""".split())
PREP = " ".join("""
cut by eval/tools/ts/cut.py (the Vue cutter's scheme): front matter removed, the page title taken from its title:
field; HTML comments and tags (<blockquote class=bg-reading> ...) removed with their text kept, never inside code
fences or inline code; #### / ##### headings inside a section kept as a line of text; twoslash markup inside code
fences removed (compiler directives such as // @errors: 2345 or // @filename: a.ts, the // ---cut--- marker and the
code above it, query lines //   ^?); fence meta after the language ("ts twoslash") removed; code fences kept with
the surrounding prose. Split at ## and ### headings, then paragraph/code-block boundaries greedily packed into
passages of 200-1200 characters (over-long blocks split at line/sentence breaks); passages outside 200-1200
characters or with under 100 characters outside code fences dropped. Korean pages only: prose blocks left
untranslated (>=150 Latin letters, <10% Hangul) dropped. title = page title + " — " + ## heading (+ " > " + ###
heading).
""".split())


SITE = Site(pages=P, path=P.path, corpus=corpus.corpus, prefix='ts', tools='eval/tools/ts',
            sets=('tune_ko2en_ts', 'tune_en2ko_ts'),
            excluded='No Kubernetes, no Python, no React and no Vue documentation.',
            license=LICENSE, prep=PREP, created=CREATED)


def main():
    build(SITE, 'tune_ko2en_ts', 'en', 'ko', 'tsko2en', q_ko2en.Q,
          " ".join("""
Queries written by hand in Korean (by AI assistants acting as annotators, two of them, each over half of the
passages) before any retrieval system saw the set, each from reading ONE target passage (relevance 2), the way
Korean engineers search English docs: term = keywords with Korean terms and transliterations (타입 가드, 판별
유니언, 데코레이터, 선언 병합) and English identifiers (keyof, satisfies, tsc --build); question = how-to /
natural questions (…하려면?, …나요?); paraphrase = the situation described in other words, avoiding the
passage's terms. No sentence copied from a passage. The kind field records this. Other relevant passages were
found by regex-grepping the corpus for the key English terms and reading the hits (relevance 1). No retrieval
system and no hanrag code was run to choose or judge queries. Judgments are not exhaustive: unjudged passages
count as not relevant.
""".split()),
          'Korean technical question / keywords / paraphrase -> English TypeScript handbook passage (cross-lingual)')
    build(SITE, 'tune_en2ko_ts', 'ko', 'en', 'tsen2ko', q_en2ko.Q,
          " ".join("""
Queries written by hand in English (by AI assistants acting as annotators, two of them, each over half of the
passages) before any retrieval system saw the set, each from reading ONE target passage (relevance 2): term =
keyword queries with TypeScript identifiers (esModuleInterop, JSX.IntrinsicElements, @param); question = how-to /
natural questions; paraphrase = the situation described in other words. The kind field records this. Other
relevant passages were found by regex-grepping the corpus for the key Korean terms and the English identifiers
the Korean docs keep, and reading the hits (relevance 1). No retrieval system and no hanrag code was run to
choose or judge queries. Judgments are not exhaustive: unjudged passages count as not relevant.
""".split()),
          'English technical question / keywords / paraphrase -> Korean TypeScript handbook passage (cross-lingual)')


if __name__ == '__main__':
    main()
