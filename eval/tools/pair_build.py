"""One builder for the Korean/English documentation pairs (eval/tools/react, vue, ts): each pair's
build_sets.py describes its site (:class:`Site`: snapshots and pages, cutter, ids, licence, how passages were cut)
and hands its hand-written queries to :func:`build`, which writes the set's corpus.jsonl, queries.jsonl, qrels.tsv
and meta.json (provenance, counts, checksums)."""
import collections
import hashlib
import json
import os
import subprocess
from collections.abc import Callable
from dataclasses import dataclass
from urllib.parse import quote

EVAL = os.path.join(os.path.dirname(os.path.abspath(__file__)), '..')


@dataclass(frozen=True)
class Site:
    pages: object  # the pair's pages module: EN_/KO_GIT, EN_/KO_COMMIT, EN_/KO_REPO, PAGES_A / PAGES_B
    path: Callable  # (page, lang) -> the file's path in its repository
    corpus: Callable  # lang -> [dict(doc_id, text, source, title)], cut from the snapshot
    prefix: str  # doc ids are <prefix>-<lang>-NNNN
    tools: str  # the pair's folder, named in meta.json
    sets: tuple  # (the Korean-question set, the English-question set)
    excluded: str  # the documentation neither set uses, said in meta.json
    license: str
    prep: str  # how passages were cut, for meta.json
    created: str


def git(gdir, *args):
    return subprocess.run(['git', '--git-dir=' + gdir, *args], capture_output=True, check=True).stdout


def commit_date(gdir, commit):
    return git(gdir, 'log', '-1', '--format=%cI (%s)', commit).decode().strip()


def build(site, name, lang, qlang, qprefix, Q, desc, task):
    """Write eval/<name> (corpus, queries, qrels, meta.json) from ``site``'s snapshot in ``lang`` and the queries
    ``Q`` (text, kind, relevance-2 passage numbers, relevance-1 passage numbers) written in ``qlang``."""
    P = site.pages
    gdir, commit, repo, plist = ((P.EN_GIT, P.EN_COMMIT, P.EN_REPO, P.PAGES_A) if lang == 'en'
                                 else (P.KO_GIT, P.KO_COMMIT, P.KO_REPO, P.PAGES_B))
    out = os.path.join(EVAL, name)
    os.makedirs(out, exist_ok=True)
    docs = site.corpus(lang)
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
                did = f'{site.prefix}-{lang}-{n}'
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
        path = site.path(page, lang)
        data = git(gdir, 'show', f'{commit}:{path}')
        files.append(dict(path=path, git_blob=git(gdir, 'rev-parse', f'{commit}:{path}').decode().strip(),
                          sha256=hashlib.sha256(data).hexdigest(),
                          n_passages=sum(1 for d in docs if d['source'].endswith('/' + quote(path)))))

    def sha(fn):
        return hashlib.sha256(open(f'{out}/{fn}', 'rb').read()).hexdigest()

    other = site.sets[1] if lang == 'en' else site.sets[0]
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
                      + f' ({site.tools}/pages.py); the other set uses the other page list in the other language, '
                        'so a merged index holds no translated twin of any target passage. ' + site.excluded),
        license=site.license,
        passage_preparation=site.prep,
        query_writing=desc,
        relevance='2 = the passage the query was written from (exactly one per query); 1 = another passage that also '
                  'answers it or substantially helps',
        n_docs=len(docs), n_queries=len(qs), n_queries_by_kind=dict(sorted(kinds.items())), n_qrels=len(qrels),
        n_qrels_by_grade={str(k): v for k, v in sorted(grades.items())},
        checksums=dict(corpus_jsonl=sha('corpus.jsonl'), queries_jsonl=sha('queries.jsonl'),
                       qrels_tsv=sha('qrels.tsv')),
        created=site.created)
    with open(f'{out}/meta.json', 'w', encoding='utf-8') as f:
        json.dump(meta, f, ensure_ascii=False, indent=2)
        f.write('\n')
    print(name, 'pages', len(plist), 'docs', len(docs), 'queries', len(qs), 'qrels', len(qrels), dict(grades),
          dict(kinds))
