"""Build eval/tune_ko_tech (TUNING set): Korean queries -> Korean Kubernetes docs.

Cuts the pages below with build.passages (same method as en2ko_tech), writes corpus.jsonl, then
queries.jsonl / qrels.tsv from Q below (queries and judgments written by hand) and meta.json.
Run from this folder: python3 build_tune_ko_tech.py
"""
import collections
import hashlib
import json
import os
import subprocess
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import build  # noqa: E402  (passages(), the en2ko_tech cutter; build.py itself unchanged)
import re  # noqa: E402

G = build.G
COMMIT = build.COMMIT
OUT = os.path.join(os.path.dirname(os.path.abspath(__file__)), '..', '..', 'tune_ko_tech')
# Korean pages used by neither en2ko_tech nor ko2en_tech (nor Korean twins of ko2en_tech's English pages).
PAGES = [
    'concepts/architecture/nodes.md',
    'concepts/workloads/controllers/garbage-collection.md',
    'concepts/workloads/pods/pod-topology-spread-constraints.md',
    'concepts/storage/storage-classes.md',
    'concepts/storage/volume-snapshots.md',
    'concepts/configuration/organize-cluster-access-kubeconfig.md',
    'concepts/cluster-administration/logging.md',
    'reference/kubectl/cheatsheet.md',
    'concepts/scheduling-eviction/pod-priority-preemption.md',
    'concepts/scheduling-eviction/node-pressure-eviction.md',
    'concepts/scheduling-eviction/pod-overhead.md',
    'concepts/overview/kubernetes-api.md',
    'concepts/containers/runtime-class.md',
]


# Queries written by hand, each from reading ONE target passage (before any retrieval system saw them):
# (text, kind, relevance-2 passage, relevance-1 passages found by grepping the corpus for the key terms and reading
# the hits). Passage numbers are the NNNN of k8s-kotune-NNNN.
Q = [
    # term (short keyword queries)
    ("kubelet 노드 자체 등록 플래그", "term", "0003", "0004"),
    ("노드 컨디션 DiskPressure PIDPressure", "term", "0007", "0135"),
    ("노드 하트비트 리스 kube-node-lease", "term", "0010", ""),
    ("ownerReferences 소유자 종속 오브젝트", "term", "0023", "0024"),
    ("topologySpreadConstraints maxSkew whenUnsatisfiable", "term", "0032", "0031"),
    ("PodTopologySpread 기본 제약 조건 defaultConstraints", "term", "0038", "0037"),
    ("volumeBindingMode WaitForFirstConsumer", "term", "0047", "0048"),
    ("스토리지클래스 reclaimPolicy 기본값", "term", "0045", ""),
    ("AWS EBS 스토리지클래스 iopsPerGB 암호화", "term", "0051", ""),
    ("VolumeSnapshotContent deletionPolicy Retain", "term", "0077", "0079"),
    ("KUBECONFIG 환경 변수 구분자", "term", "0084", "0097"),
    ("사이드카 컨테이너 로그 스트리밍", "term", "0093", "0094"),
    ("kubectl 자동 완성 bash alias", "term", "0096", ""),
    ("kubectl 출력 형식 custom-columns", "term", "0112", ""),
    ("kubectl 디버깅 로그 상세 레벨 verbosity", "term", "0113", ""),
    ("프라이어리티클래스 globalDefault", "term", "0116", "0117"),
    ("PreemptionPolicy Never 비선점 우선순위", "term", "0118", "0119"),
    ("하드 축출 임계값 기본값 memory.available", "term", "0134", ""),
    ("eviction-minimum-reclaim 최소 회수량", "term", "0140", ""),
    ("oom_score_adj QoS 클래스별 값", "term", "0141", ""),
    ("파드 오버헤드 런타임클래스 podFixed", "term", "0145", "0144 0162"),
    # question (how-to / natural questions)
    ("노드 유지보수 전에 새 파드가 안 들어오게 스케줄 불가로 표시하려면?", "question", "0004", "0110"),
    ("노드가 Ready 아닌 상태로 오래 있으면 그 노드의 파드는 얼마 뒤에 축출되나요?", "question", "0008", "0011"),
    ("노드 셧다운 때 프라이어리티클래스별로 파드 종료 대기 시간을 다르게 줄 수 있나요?", "question", "0018", "0017 0019"),
    ("쿠버네티스 노드에서 스왑 메모리를 켜고 쓸 수 있나요?", "question", "0020", ""),
    ("포어그라운드 캐스케이딩 삭제는 어떤 순서로 지우나요?", "question", "0026", ""),
    ("maxSkew가 1이면 새 파드는 어느 존에 배치되나요?", "question", "0033", ""),
    ("토폴로지 분배 제약 조건을 두 개 걸었더니 파드가 Pending에서 안 넘어가요", "question", "0034", ""),
    ("PVC 용량을 늘리려면 스토리지클래스에 뭘 켜야 하나요?", "question", "0046", ""),
    ("WaitForFirstConsumer인데 nodeName을 지정하면 왜 PVC가 pending인가요?", "question", "0048", ""),
    ("NFS용 스토리지클래스는 어떻게 만드나요?", "question", "0057", "0044"),
    ("볼륨 스냅샷으로 새 PVC를 만들어 복원하려면?", "question", "0080", ""),
    ("kubectl에서 사용할 컨텍스트를 바꾸는 명령은?", "question", "0083", "0097"),
    ("재시작되기 전 컨테이너의 로그를 kubectl로 보려면?", "question", "0088", "0106"),
    ("CRI 런타임 쓸 때 컨테이너 로그 파일 최대 크기와 개수는 어디서 설정하나요?", "question", "0090", ""),
    ("kubelet이랑 컨테이너 런타임 로그는 노드 어디에 남나요?", "question", "0091", ""),
    ("파드를 재시작 횟수 순으로 정렬해서 보려면?", "question", "0099", ""),
    ("kubectl로 레플리카 수를 3개로 늘리는 방법", "question", "0104", ""),
    ("로컬 파일을 실행 중인 파드 안으로 복사하는 방법", "question", "0108", ""),
    ("선점당한 파드도 정상 종료 유예 기간을 받나요?", "question", "0124", "0123 0127"),
    ("소프트 축출 임계값과 하드 축출 임계값은 뭐가 다른가요?", "question", "0133", "0134 0130"),
    ("노드 자원이 모자랄 때 kubelet은 어떤 파드부터 내쫓나요?", "question", "0138", "0139"),
    ("특정 런타임을 지원하는 노드에만 파드가 뜨게 하려면?", "question", "0161", ""),
    ("v1beta1로 만든 오브젝트를 v1 API로 읽거나 수정할 수 있나요?", "question", "0153", ""),
    # paraphrase (describe the concept in other words)
    ("서버를 새로 갈아엎고 같은 호스트명으로 다시 붙이면 생길 수 있는 문제", "paraphrase", "0002", ""),
    ("한 구역의 서버 절반 이상이 죽었을 때 워크로드를 옮기는 속도를 늦추는 규칙", "paraphrase", "0012", ""),
    ("상위 리소스를 지울 때 딸린 하위 리소스까지 자동으로 지울지 남겨 둘지", "paraphrase", "0025", "0027"),
    ("복제본을 한데 모으는 설정과 여러 곳에 흩어 놓는 설정은 뭐가 다른가", "paraphrase", "0039", ""),
    ("동적으로 만들어지는 디스크가 특정 가용 영역에서만 생성되게 제한하고 싶다", "paraphrase", "0049", "0051 0052"),
    ("DB 작업 전에 디스크 내용을 특정 시점 그대로 떠 두는 기능", "paraphrase", "0073", ""),
    ("백업 뜨는 도중에 원본 저장 공간 요청 객체를 지워 버리면 어떻게 되나", "paraphrase", "0076", ""),
    ("접속 설정 파일 여러 개에 같은 항목이 있으면 어느 쪽 값이 쓰이나", "paraphrase", "0085", ""),
    ("서버마다 하나씩 띄운 수집기가 앱 출력을 모아 중앙 저장소로 보내는 구조", "paraphrase", "0092", ""),
    ("급한 워크로드를 올리려고 덜 중요한 것을 밀어내는 스케줄러 동작", "paraphrase", "0122", "0114"),
    ("디스크가 꽉 차면 사용자 워크로드를 죽이기 전에 안 쓰는 이미지부터 치우나", "paraphrase", "0137", "0130"),
    ("VM 기반 샌드박스가 컨테이너 요청량과 별도로 잡아먹는 자원을 스케줄링에 반영", "paraphrase", "0144", "0145 0146 0162"),
    ("보안이 중요한 작업만 하드웨어 가상화로 격리된 실행 환경에서 돌리고 싶다", "paraphrase", "0156", ""),
]


def show_precleaned(path):
    """build.show plus two cuts build.py lacks (these pages have them, en2ko_tech's mostly did not):
    Mermaid diagrams ({{<mermaid>}} ... {{< /mermaid >}}) are dropped rather than left as bare graph source,
    and the "What's next" section (## {{% heading "whatsnext" %}} to the end) is dropped rather than glued
    onto the last passage as a link list."""
    md = _show(path)
    md = re.sub(r'\{\{<\s*mermaid\s*>\}\}.*?\{\{<\s*/mermaid\s*>\}\}', '', md, flags=re.S)
    m = re.search(r'^##\s*\{\{%\s*heading\s+"whatsnext"\s*%\}\}.*', md, flags=re.M | re.S)
    return md[:m.start()] if m else md


_show = build.show
build.show = show_precleaned


def corpus():
    out = []
    for p in PAGES:
        for x in build.passages(f'content/ko/docs/{p}'):
            out.append(dict(doc_id=f'k8s-kotune-{len(out):04d}', text=x['text'],
                            source=f'https://github.com/kubernetes/website/blob/{COMMIT}/{x["path"]}', title=x['title']))
    return out


def git(*args):
    return subprocess.run(['git', '--git-dir=' + G, *args], capture_output=True, check=True).stdout


def main():
    os.makedirs(OUT, exist_ok=True)
    docs = corpus()
    with open(f'{OUT}/corpus.jsonl', 'w', encoding='utf-8') as f:
        for c in docs:
            f.write(json.dumps(c, ensure_ascii=False) + '\n')
    if len(sys.argv) > 1 and sys.argv[1] == '--corpus-only':
        print('docs', len(docs))
        return
    ids = {c['doc_id'] for c in docs}
    qs, qrels = [], []
    for i, (text, kind, g2, g1) in enumerate(Q):
        qid = f'kotune-q{i + 1:03d}'
        qs.append(dict(qid=qid, text=text, lang='ko', kind=kind))
        assert len(g2.split()) == 1, (qid, g2)
        seen = set()
        for grade, ds in ((2, g2), (1, g1)):
            for d in ds.split():
                did = f'k8s-kotune-{d}'
                assert did in ids, (qid, did)
                if did not in seen:
                    qrels.append((qid, did, grade))
                    seen.add(did)
    assert len({q['text'] for q in qs}) == len(qs), 'duplicate query text'
    with open(f'{OUT}/queries.jsonl', 'w', encoding='utf-8') as f:
        for q in qs:
            f.write(json.dumps(q, ensure_ascii=False) + '\n')
    with open(f'{OUT}/qrels.tsv', 'w', encoding='utf-8') as f:
        f.write('qid\tdoc_id\trelevance\n')
        for r in qrels:
            f.write('\t'.join(map(str, r)) + '\n')
    files = []
    for p in PAGES:
        path = f'content/ko/docs/{p}'
        data = git('show', f'{COMMIT}:{path}')
        files.append(dict(path=path, git_blob=git('rev-parse', f'{COMMIT}:{path}').decode().strip(),
                          sha256=hashlib.sha256(data).hexdigest(),
                          n_passages=sum(1 for c in docs if c['source'].endswith('/' + path))))

    def sha(fn):
        return hashlib.sha256(open(f'{OUT}/{fn}', 'rb').read()).hexdigest()

    kinds = collections.Counter(q['kind'] for q in qs)
    grades = collections.Counter(r[2] for r in qrels)
    meta = dict(
        name='tune_ko_tech',
        purpose='TUNING set: hanrag\'s fitting script (benchmarks/fit.py) may choose parameters on it (not a held-out evaluation set)',
        lang='ko query -> ko doc',
        task='Korean technical question / keywords / paraphrase -> Korean Kubernetes documentation passage (monolingual, company-wiki style)',
        origin=f'github.com/kubernetes/website@{COMMIT}', origin_repository='https://github.com/kubernetes/website',
        commit=COMMIT, commit_date='2022-03-18T03:01:15-07:00 (merge of kubernetes/website PR #32343 by Kubernetes Prow Robot)',
        commit_note='read from a snapshot of the fork yyyoungha/website whose HEAD is this upstream kubernetes/website commit (the upstream snapshot exceeded the 500 MiB fetch limit); source URLs point at kubernetes/website',
        source_files=files,
        disjointness='No page is shared with eval/en2ko_tech (Korean pages) or eval/ko2en_tech (English pages): none of these content/ko paths is in en2ko_tech, and none of their content/en twins is in ko2en_tech.',
        license='CC BY 4.0 (Kubernetes documentation, kubernetes/website LICENSE: Creative Commons Attribution 4.0 International); attribution: The Kubernetes Authors',
        passage_preparation='Same cutter as en2ko_tech (eval/tools/k8s/build.py passages()): Hugo front matter removed (title kept); {{< glossary_tooltip text=... >}} replaced by its text; all other {{< ... >}} / {{% ... %}} shortcodes and HTML comments/tags removed; Markdown kept; split at ## and ### headings, then paragraph/code-block boundaries greedily packed into passages of 200-1200 characters (over-long blocks split at line/sentence breaks); passages outside 200-1200 chars dropped; "What\'s next" sections (## {{% heading "whatsnext" %}} to the end of the page) and Mermaid diagrams ({{<mermaid>}}...{{< /mermaid >}}) dropped before cutting (show_precleaned; build.py itself unchanged). title = page title + " — " + ## heading (+ " > " + ### heading).',
        query_writing=('Queries written by hand in Korean (by an AI assistant acting as annotator) before any retrieval system saw them, '
                       'each from reading ONE target passage (relevance 2), the way Korean engineers search a company wiki: '
                       'term = short keyword queries, question = how-to / natural questions, paraphrase = the concept described in other '
                       'Korean words, avoiding the passage\'s own terms. Korean transliterations (파드, 노드, 스토리지클래스) and English '
                       'identifiers (kubectl, PriorityClass) as Korean docs write them. The kind field records this. '
                       'Other relevant passages were found by regex-grepping the corpus for the query\'s key terms and reading the hits (relevance 1). '
                       'No retrieval system and no hanrag code was run to choose or judge queries. Judgments are not exhaustive: unjudged docs are treated as non-relevant.'),
        relevance='2 = the passage the query was written from (exactly one per query); 1 = another passage that also answers it or substantially helps',
        n_docs=len(docs), n_queries=len(qs), n_queries_by_kind=dict(sorted(kinds.items())), n_qrels=len(qrels),
        n_qrels_by_grade={str(k): v for k, v in sorted(grades.items())},
        checksums=dict(corpus_jsonl=sha('corpus.jsonl'), queries_jsonl=sha('queries.jsonl'), qrels_tsv=sha('qrels.tsv')),
        created='2026-11-30')
    with open(f'{OUT}/meta.json', 'w', encoding='utf-8') as f:
        json.dump(meta, f, ensure_ascii=False, indent=2)
        f.write('\n')
    print('tune_ko_tech docs', len(docs), 'queries', len(qs), 'qrels', len(qrels), dict(grades), dict(kinds))


if __name__ == '__main__':
    main()
