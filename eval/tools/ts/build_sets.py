"""Build eval/tune_ko2en_ts and eval/tune_en2ko_ts (TUNING sets) from snapshots of the TypeScript handbook.

* tune_ko2en_ts: Korean queries (q_ko2en.Q) -> passages of the ENGLISH pages pages.PAGES_A
  (microsoft/TypeScript-Website, packages/documentation/copy/en)
* tune_en2ko_ts: English queries (q_en2ko.Q) -> passages of the KOREAN pages pages.PAGES_B
  (microsoft/TypeScript-Website-Localizations, docs/documentation/ko)
The two page lists share no page, so merging both corpora into one index puts no translated twin of a target there.
Passages are cut by cut.py; queries and judgments were written by hand (see q_*.py). Needs the two snapshots at the
paths in pages.py (bare git directories). Run from this folder: python3 build_sets.py
"""
import collections
import hashlib
import json
import os
import subprocess
import sys
from urllib.parse import quote

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import corpus
import pages as P
import q_en2ko
import q_ko2en

EVAL = os.path.join(os.path.dirname(os.path.abspath(__file__)), '..', '..')
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


def git(gdir, *args):
    return subprocess.run(['git', '--git-dir=' + gdir, *args], capture_output=True, check=True).stdout


def commit_date(gdir, commit):
    return git(gdir, 'log', '-1', '--format=%cI (%s)', commit).decode().strip()


def build(name, lang, qlang, qprefix, Q, desc, task):
    gdir, commit, repo, plist = ((P.EN_GIT, P.EN_COMMIT, P.EN_REPO, P.PAGES_A) if lang == 'en'
                                 else (P.KO_GIT, P.KO_COMMIT, P.KO_REPO, P.PAGES_B))
    out = os.path.join(EVAL, name)
    os.makedirs(out, exist_ok=True)
    docs = corpus.corpus(lang)
    ids = {d['doc_id'] for d in docs}
    assert len(ids) == len(docs)
    with open(f'{out}/corpus.jsonl', 'w', encoding='utf-8') as f:
        for d in docs:
            f.write(json.dumps(d, ensure_ascii=False) + '\n')
    qs, qrels = [], []
    for i, (text, kind, g2, g1) in enumerate(Q, 1):
        qid = f'{qprefix}-q{i:03d}'
        qs.append(dict(qid=qid, text=text, lang=qlang, kind=kind))
        seen = set()
        for grade, ds in ((2, g2), (1, g1)):
            for n in ds.split():
                did = f'ts-{lang}-{n}'
                assert did in ids, (qid, did)
                assert did not in seen, (qid, did)
                qrels.append((qid, did, grade))
                seen.add(did)
    assert len({q['text'] for q in qs}) == len(qs), 'duplicate query text'
    with open(f'{out}/queries.jsonl', 'w', encoding='utf-8') as f:
        for q in qs:
            f.write(json.dumps(q, ensure_ascii=False) + '\n')
    with open(f'{out}/qrels.tsv', 'w', encoding='utf-8') as f:
        f.write('qid\tdoc_id\trelevance\n')
        for r in qrels:
            f.write('\t'.join(map(str, r)) + '\n')
    files = []
    for page in plist:
        path = P.path(page, lang)
        data = git(gdir, 'show', f'{commit}:{path}')
        files.append(dict(path=path, git_blob=git(gdir, 'rev-parse', f'{commit}:{path}').decode().strip(),
                          sha256=hashlib.sha256(data).hexdigest(),
                          n_passages=sum(1 for d in docs if d['source'].endswith('/' + quote(path)))))

    def sha(fn):
        return hashlib.sha256(open(f'{out}/{fn}', 'rb').read()).hexdigest()

    other = 'tune_en2ko_ts' if lang == 'en' else 'tune_ko2en_ts'
    kinds = collections.Counter(q['kind'] for q in qs)
    grades = collections.Counter(r[2] for r in qrels)
    meta = dict(
        name=name,
        purpose=("TUNING set: hanrag's fitting script (benchmarks/fit.py) may choose parameters on it (not a "
                 "held-out evaluation set); added after the held-out figures of earlier releases had been seen, "
                 "written before any retrieval system ran on it"),
        lang=f'{qlang} query -> {lang} doc',
        task=task,
        origin=f'github.com/{repo}@{commit}', origin_repository=f'https://github.com/{repo}',
        commit=commit, commit_date=commit_date(gdir, commit),
        commit_note='read from a local snapshot (bare git directory) of the repository whose HEAD is this commit; '
                    'source URLs point at the file at this commit',
        source_files=files,
        disjointness=(f'No page is shared with {other}: {name} uses only '
                      + ('English pages of set A' if lang == 'en' else 'Korean pages of set B')
                      + ' (eval/tools/ts/pages.py); the other set uses the other page list in the other language, '
                        'so a merged index holds no translated twin of any target passage. No Kubernetes, no '
                        'Python, no React and no Vue documentation.'),
        license=LICENSE,
        passage_preparation=PREP,
        query_writing=desc,
        relevance='2 = the passage the query was written from (exactly one per query); 1 = another passage that also '
                  'answers it or substantially helps',
        n_docs=len(docs), n_queries=len(qs), n_queries_by_kind=dict(sorted(kinds.items())), n_qrels=len(qrels),
        n_qrels_by_grade={str(k): v for k, v in sorted(grades.items())},
        checksums=dict(corpus_jsonl=sha('corpus.jsonl'), queries_jsonl=sha('queries.jsonl'),
                       qrels_tsv=sha('qrels.tsv')),
        created=CREATED)
    with open(f'{out}/meta.json', 'w', encoding='utf-8') as f:
        json.dump(meta, f, ensure_ascii=False, indent=2)
        f.write('\n')
    print(name, 'pages', len(plist), 'docs', len(docs), 'queries', len(qs), 'qrels', len(qrels), dict(grades),
          dict(kinds))


def main():
    build('tune_ko2en_ts', 'en', 'ko', 'tsko2en', q_ko2en.Q,
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
    build('tune_en2ko_ts', 'ko', 'en', 'tsen2ko', q_en2ko.Q,
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
