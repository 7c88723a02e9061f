import json,sys,hashlib,subprocess,collections
sys.path.insert(0,'.')
G='/work/.mirror/yyyoungha+website/repo'; COMMIT='078c5bb01382ce561e5813062c107c356748b98d'
import q_en,j_en,q_ko,j_ko
def build(setname, lang, qlang, Q, J, desc):
    out=f'/work/main/eval/{setname}'; import os; os.makedirs(out,exist_ok=True)
    mp=json.load(open(f'{lang}_map.json'))
    corpus=[json.loads(l) for l in open(f'{lang}_corpus.jsonl')]
    ids={c['doc_id'] for c in corpus}
    with open(f'{out}/corpus.jsonl','w',encoding='utf-8') as f:
        for c in corpus: f.write(json.dumps(dict(doc_id=c['doc_id'],text=c['text'],source=c['source'],title=c['title']),ensure_ascii=False)+'\n')
    qrels=[]; qs=[]
    prefix='ko2en' if setname.startswith('ko2en') else 'en2ko'
    for i,(q,t,rx) in enumerate(Q):
        qid=f'{prefix}-q{i+1:03d}'
        qs.append(dict(qid=qid,text=q,lang=qlang))
        g2,g1=J[i]; seen=set()
        for d in g2.split():
            nd=mp[f'k8s-{lang}-{d}']; assert nd in ids; qrels.append((qid,nd,2)); seen.add(nd)
        for d in g1.split():
            nd=mp[f'k8s-{lang}-{d}']; assert nd in ids
            if nd not in seen: qrels.append((qid,nd,1)); seen.add(nd)
    assert len({q['text'] for q in qs})==len(qs)
    with open(f'{out}/queries.jsonl','w',encoding='utf-8') as f:
        for q in qs: f.write(json.dumps(q,ensure_ascii=False)+'\n')
    with open(f'{out}/qrels.tsv','w') as f:
        f.write('qid\tdoc_id\trelevance\n')
        for r in qrels: f.write('\t'.join(map(str,r))+'\n')
    paths=sorted({c['source'].split(COMMIT+'/')[1] for c in corpus})
    files=[]
    for p in paths:
        blob=subprocess.run(['git','--git-dir='+G,'rev-parse',f'{COMMIT}:{p}'],capture_output=True,text=True).stdout.strip()
        data=subprocess.run(['git','--git-dir='+G,'show',f'{COMMIT}:{p}'],capture_output=True).stdout
        files.append(dict(path=p,git_blob=blob,sha256=hashlib.sha256(data).hexdigest(),n_passages=sum(1 for c in corpus if c['source'].endswith('/'+p))))
    def sha(fn): return hashlib.sha256(open(f'{out}/{fn}','rb').read()).hexdigest()
    n_rel=collections.Counter(r[2] for r in qrels)
    meta=dict(name=setname, lang=f'{qlang} query -> {lang} doc', task=desc,
      origin=f'github.com/kubernetes/website@{COMMIT}', origin_repository='https://github.com/kubernetes/website',
      commit=COMMIT, commit_date='2022-03-18T03:01:15-07:00 (merge of kubernetes/website PR #32343 by Kubernetes Prow Robot)',
      commit_note='read from a snapshot of the fork yyyoungha/website whose HEAD is this upstream kubernetes/website commit (the upstream snapshot exceeded the 500 MiB fetch limit); source URLs point at kubernetes/website',
      source_files=files,
      license='CC BY 4.0 (Kubernetes documentation, kubernetes/website LICENSE: Creative Commons Attribution 4.0 International); attribution: The Kubernetes Authors',
      passage_preparation='Hugo front matter removed (title kept); {{< glossary_tooltip text=... >}} replaced by its text; all other {{< ... >}} / {{% ... %}} shortcodes and HTML comments/tags removed; Markdown kept; split at ## and ### headings, then paragraph/code-block boundaries greedily packed into passages of 200-1200 characters (over-long blocks split at line/sentence breaks); passages outside 200-1200 chars dropped; "What\'s next" sections and pure link-list passages dropped. title = page title + " — " + ## heading (+ " > " + ### heading).',
      query_writing=('Queries written by hand (by an AI assistant acting as annotator, not by any retrieval system) in natural '+('Korean as a Korean engineer would ask: mix of short keyword queries with Korean transliterations (디플로이먼트, 파드, 인그레스...) and full questions; some include English field names (maxSurge, startingDeadlineSeconds) as Korean engineers type them' if qlang=='ko' else 'English, short keyword queries and how-to questions, some with Kubernetes field names')+
        '. Each query was written from one target passage (relevance 2); other passages were found by regex-grepping the corpus for the query\'s key terms (English field names and '+('English' if lang=='en' else 'Korean/English')+' terms), reading the hits, and marking those that also answer the query (relevance 1). No retrieval system was run to choose or judge queries. Judgments are not exhaustive: unjudged docs are treated as non-relevant.'),
      relevance='2 = the passage the query was written from (best answer; a few queries have 2-3 co-best passages); 1 = also answers or substantially helps',
      n_docs=len(corpus), n_queries=len(qs), n_qrels=len(qrels), n_qrels_by_grade={str(k):v for k,v in sorted(n_rel.items())},
      checksums=dict(corpus_jsonl=sha('corpus.jsonl'),queries_jsonl=sha('queries.jsonl'),qrels_tsv=sha('qrels.tsv')),
      created='2026-11-30')
    json.dump(meta,open(f'{out}/meta.json','w'),ensure_ascii=False,indent=2)
    print(setname,'docs',len(corpus),'queries',len(qs),'qrels',len(qrels),dict(n_rel))
build('ko2en_tech','en','ko',q_en.Q,j_en.J,'ko technical question -> en Kubernetes documentation passage (cross-lingual)')
build('en2ko_tech','ko','en',q_ko.Q,j_ko.J,'en technical question -> ko Kubernetes documentation passage (cross-lingual)')
