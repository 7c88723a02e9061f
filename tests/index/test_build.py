"""Builds: incremental re-embedding, deletions, truncation report, model mismatch, SIGKILL, concurrent readers."""

from __future__ import annotations

import subprocess
import sys
import textwrap
import threading
from pathlib import Path

import numpy as np
import pytest

from fixtures.tiny_models import make_tiny_bert
from hanrag.config import Config
from hanrag.embed import EmbedderMismatchError, SentenceTransformerEmbedder, check_embedder, load_embedder
from hanrag.index import store
from hanrag.index.snapshot import open_snapshot
from hanrag.pipeline import build_from_chunks, build_index
from hanrag.records import Chunk

DOCS = {
    "k8s.md": (
        "https://kubernetes.io/docs",
        ["파드가 재시작을 반복하면 먼저 로그를 확인한다.", "롤백은 kubectl rollout undo 로 한다."],
    ),
    "saju.md": ("https://example.org/saju", ["甲木은 양의 나무로 큰 나무를 뜻한다.", "오행은 목화토금수 다섯 가지다."]),
    "jwt.md": ("https://jwt.io", ["JWT carries signed claims about a user.", "Rotate signing keys regularly."]),
}


def write_corpus(root: Path, docs=DOCS) -> None:
    root.mkdir(parents=True, exist_ok=True)
    for name, (src, sections) in docs.items():
        body = "\n\n".join(f"## 절 {i}\n\n{s}" for i, s in enumerate(sections))
        (root / name).write_text(f"---\ntitle: {name}\nsource: {src}\n---\n# {name}\n\n{body}\n", encoding="utf-8")


class CountingEmbedder:
    """The real embedder, counting the texts it is asked to embed."""

    def __init__(self, inner):
        self.inner = inner
        self.dim, self.max_tokens, self.truncates = inner.dim, inner.max_tokens, inner.truncates
        self.passages: list[str] = []
        self.calls: list[int] = []  # texts per encode_passages call

    def encode_passages(self, texts):
        self.passages.extend(texts)
        self.calls.append(len(texts))
        return self.inner.encode_passages(texts)

    def encode_queries(self, texts):
        return self.inner.encode_queries(texts)

    def count_tokens(self, text):
        return self.inner.count_tokens(text)

    def identity(self):
        return self.inner.identity()


def test_incremental_edit_and_delete(tmp_path):
    corpus, index = tmp_path / "corpus", tmp_path / "index"
    write_corpus(corpus)
    cfg = Config()
    emb = CountingEmbedder(load_embedder(cfg.embedder))
    first = build_index(corpus, index, cfg, embedder=emb, progress=False)
    assert first.chunks >= 6 and first.added == first.chunks and first.embedded == len(emb.passages)
    n_first = len(emb.passages)

    emb.passages.clear()
    same = build_index(corpus, index, cfg, embedder=emb, progress=False)
    assert emb.passages == [] and same.reused == same.chunks and same.embedded == 0

    # edit one section of one file: only that chunk is re-embedded
    text = (corpus / "jwt.md").read_text(encoding="utf-8")
    (corpus / "jwt.md").write_text(text.replace("Rotate signing keys regularly.", "Rotate keys every 90 days."))
    edit = build_index(corpus, index, cfg, embedder=emb, progress=False)
    assert len(emb.passages) == 1 and "90 days" in emb.passages[0]
    # the edited chunk replaces its old version: changed, not also removed
    assert edit.changed == 1 and edit.removed == 0 and edit.added == 0 and edit.reused == first.chunks - 1
    snap = open_snapshot(index)
    assert any("90 days" in c.text for c in snap.chunks) and not any("regularly" in c.text for c in snap.chunks)

    # delete one file: its chunks disappear, nothing embedded
    emb.passages.clear()
    n_saju = sum(1 for c in snap.chunks if c.doc_id == "saju.md")
    (corpus / "saju.md").unlink()
    gone = build_index(corpus, index, cfg, embedder=emb, progress=False)
    assert emb.passages == [] and gone.removed == n_saju and gone.chunks == first.chunks - n_saju
    snap = open_snapshot(index)
    assert not any(c.doc_id == "saju.md" for c in snap.chunks)
    assert snap.embeddings.shape[0] == len(snap.chunks)
    assert n_first >= 6


def test_model_mismatch_refused(tmp_path):
    corpus, index = tmp_path / "corpus", tmp_path / "index"
    write_corpus(corpus)
    build_index(corpus, index, Config(), progress=False)
    manifest = open_snapshot(index).manifest
    tiny = SentenceTransformerEmbedder(str(make_tiny_bert(tmp_path / "bert", 64)), 32)
    with pytest.raises(EmbedderMismatchError, match="built with another embedder"):
        check_embedder(manifest, tiny)


def test_truncation_report_on_tiny_model(tmp_path):
    tiny = SentenceTransformerEmbedder(str(make_tiny_bert(tmp_path / "bert", 64)), max_seq_length=16)
    short = " ".join("a" * 10)  # 10 tokens + 2 specials = 12 <= 16
    long_ = " ".join("b" * 30)  # 32 tokens: 16 cut
    texts = [short, short + " c", long_, long_ + " d e"]  # counts 12, 13, 32, 34
    chunks = [Chunk(chunk_id=f"c{i}", doc_id=f"d{i}", text=t, start=0, end=len(t), lang="en")
              for i, t in enumerate(texts)]
    cfg = Config()
    cfg.index.dedup = False
    report = build_from_chunks(chunks, tmp_path / "ix", cfg, embedder=tiny, progress=False)
    tok = report.tokens
    assert tok["over_max"] == 2 and tok["max"] == 34 and tok["max_tokens"] == 16 and tok["truncates"]
    assert tok["cut_share"] == pytest.approx((16 + 18) / (32 + 34), abs=1e-4)
    assert report.warnings and "2 chunks exceed" in report.warnings[0] and "cut" in report.warnings[0]
    assert any("WARNING" in line for line in report.summary_lines())
    manifest = open_snapshot(tmp_path / "ix").manifest
    assert manifest["tokens"]["over_max"] == 2 and manifest["warnings"] == list(report.warnings)


def test_near_duplicates_folded(tmp_path):
    corpus, index = tmp_path / "corpus", tmp_path / "index"
    docs = dict(DOCS)
    docs["copy.md"] = ("https://mirror.example/k8s", DOCS["k8s.md"][1])
    write_corpus(corpus, docs)
    report = build_index(corpus, index, Config(), progress=False)
    assert report.dedup["duplicates"] >= 1
    from hanrag.backends.embedded import EmbeddedBackend

    b = EmbeddedBackend.open(index)
    q = load_embedder(Config().embedder).encode_queries(["파드 재시작 로그 확인"])[0]
    hits = b.dense_search(q, 10)
    ids = [h[0] for h in hits]
    dups = {c.chunk_id for c, d in zip(b.snapshot.chunks, b.snapshot.dup_of, strict=True) if d >= 0}
    assert not dups & set(ids)  # duplicates are never returned on their own
    also = b.duplicates_of(ids)
    assert any("https://mirror.example/k8s" in v or "https://kubernetes.io/docs" in v for v in also.values())
    # a folded chunk stays reachable by its id and through its document
    folded = sorted(dups)
    assert [c.chunk_id for c in b.get_chunks(folded)] == folded
    doc = b.get_chunks(folded[:1])[0].doc_id
    assert folded[0] in {c.chunk_id for c in b.doc_chunks(doc)}
    # the summary names the folded file and how to undo the fold
    lines = "\n".join(report.summary_lines())
    assert "copy.md" in lines and "dedup_exclude" in lines
    assert report.to_dict()["dedup"]["folded"][0]["jaccard"] >= Config().index.dedup_threshold
    # undo: the path is excluded from folding
    cfg = Config()
    cfg.index.dedup_exclude = ["copy.md"]
    assert build_index(corpus, index, cfg, progress=False).dedup["duplicates"] == 0


DRIVER = textwrap.dedent(
    """
    import sys, time
    from pathlib import Path
    from hanrag.config import Config
    from hanrag.embed import load_embedder
    from hanrag.index import store
    from hanrag.pipeline import build_index

    stage = sys.argv[3]
    real = load_embedder(Config().embedder)

    class Slow:
        dim, max_tokens, truncates = real.dim, real.max_tokens, real.truncates
        def encode_passages(self, texts):
            if stage == "embed":
                print("AT embed", flush=True); time.sleep(30)
            return real.encode_passages(texts)
        encode_queries = staticmethod(real.encode_queries)
        count_tokens = staticmethod(real.count_tokens)
        identity = staticmethod(real.identity)

    orig_publish = store.SnapshotWriter.publish
    def publish(self, manifest):
        if stage == "before-publish":
            print("AT before-publish", flush=True); time.sleep(30)
        return orig_publish(self, manifest)
    store.SnapshotWriter.publish = publish
    orig_write = store.atomic_write_bytes
    def write(path, data):
        if stage == "before-pointer" and path.name == "CURRENT":
            print("AT before-pointer", flush=True); time.sleep(30)
        return orig_write(path, data)
    store.atomic_write_bytes = write
    build_index(Path(sys.argv[1]), Path(sys.argv[2]), Config(), embedder=Slow(), progress=False)
    print("DONE", flush=True)
    """
)


@pytest.mark.slow
@pytest.mark.parametrize("stage", ["embed", "before-publish", "before-pointer"])
def test_sigkill_mid_build_keeps_old_snapshot(tmp_path, stage):
    corpus, index = tmp_path / "corpus", tmp_path / "index"
    write_corpus(corpus)
    old = build_index(corpus, index, Config(), progress=False)
    (corpus / "new.md").write_text("---\nsource: https://new.example\n---\n# new\n\n새 문서 내용.\n", encoding="utf-8")
    (tmp_path / "driver.py").write_text(DRIVER)
    proc = subprocess.Popen(
        [sys.executable, str(tmp_path / "driver.py"), str(corpus), str(index), stage],
        stdout=subprocess.PIPE, text=True, cwd=Path(__file__).resolve().parents[2],
    )
    try:
        line = proc.stdout.readline()
        assert line.strip() == f"AT {stage}", line
        proc.kill()  # SIGKILL
    finally:
        proc.wait(30)
    snap = open_snapshot(index)  # still the old, complete, verified snapshot
    assert snap.name == old.snapshot and len(snap.chunks) == old.chunks
    q = load_embedder(Config().embedder).encode_queries(["롤백"])[0]
    from hanrag.backends.embedded import EmbeddedBackend

    assert EmbeddedBackend(snap).dense_search(q, 1)
    leftovers = [p.name for p in store.snapshots_dir(index).iterdir() if p.name != old.snapshot]
    if stage != "embed":
        assert leftovers  # the killed build left a half-written or unpublished snapshot behind ...
    again = build_index(corpus, index, Config(), progress=False)
    names = [p.name for p in store.snapshots_dir(index).iterdir()]
    assert not [n for n in names if n.startswith(".")]  # ... which the next build cleaned up
    assert again.chunks == old.chunks + 1 and open_snapshot(index).name == again.snapshot


def test_concurrent_reader_sees_complete_snapshots(tmp_path):
    corpus, index = tmp_path / "corpus", tmp_path / "index"
    write_corpus(corpus)
    cfg = Config()
    cfg.index.keep_snapshots = 1  # the old snapshot is deleted right after each switch
    emb = load_embedder(cfg.embedder)
    build_index(corpus, index, cfg, embedder=emb, progress=False)
    done = threading.Event()
    errors: list[BaseException] = []

    def builder():
        try:
            for i in range(4):
                (corpus / "extra.md").write_text(
                    "---\nsource: https://e.example\n---\n# e\n\n" + "추가 문단.\n\n" * (i + 1) + f"v{i}\n",
                    encoding="utf-8",
                )
                build_index(corpus, index, cfg, embedder=emb, progress=False)
        except BaseException as exc:
            errors.append(exc)
        finally:
            done.set()

    t = threading.Thread(target=builder)
    t.start()
    opened = 0
    while not done.is_set() or opened < 3:
        snap = open_snapshot(index)  # verifies every checksum
        assert snap.embeddings.shape[0] == len(snap.chunks) == snap.manifest["counts"]["chunks"]
        assert np.isfinite(np.asarray(snap.embeddings)).all()
        opened += 1
    t.join()
    assert not errors, errors
    assert opened >= 3


def test_doctor_reports_problems_with_fixes(tmp_path):
    from hanrag.doctor import diagnose

    bert = make_tiny_bert(tmp_path / "bert", 64)
    cfg = Config()
    cfg.embedder.backend, cfg.embedder.model, cfg.embedder.max_seq_length = "sentence-transformers", str(bert), 8
    long_text = " ".join("a" * 20)
    chunks = [Chunk(chunk_id="c0", doc_id="d0", text=long_text, start=0, end=len(long_text), lang="en")]
    build_from_chunks(chunks, tmp_path / "ix", cfg, progress=False)
    cfg.lexicon.paths = ["saju", "missing/lexicon.tsv"]
    cfg.search.rerank.model = str(tmp_path / "no-reranker")
    codes = {p.code: p for p in diagnose(tmp_path / "ix", cfg)}
    assert {"chunks-over-max-tokens", "max-seq-length-low", "lexicon-missing", "reranker-unloadable"} <= set(codes)
    assert all(p.fix for p in codes.values())
    assert "embedder-mismatch" not in codes
    other = Config()  # the default embedder: not the model the index was built with
    codes = {p.code for p in diagnose(tmp_path / "ix", other)}
    assert "embedder-mismatch" in codes and "lexicon-missing" not in codes
    assert {p.code for p in diagnose(tmp_path / "absent", other)} >= {"index-unreadable"}


def test_the_build_hands_the_embedder_many_texts_a_call(tmp_path):
    """EMBED_CALL texts a call (not embedder.batch_size): a padding backend sorts them by length before batching."""
    from hanrag.pipeline.vectors import EMBED_CALL

    cfg = Config()
    cfg.embedder.cache = False
    emb = CountingEmbedder(load_embedder(cfg.embedder))
    chunks = [Chunk(chunk_id=f"c{i}", doc_id=f"d{i}", text=f"문서 {i}번: 배포 {i}회 뒤 롤백 절차 {i * 7}단계", start=0,
                    end=20, lang="ko") for i in range(EMBED_CALL + 40)]
    build_from_chunks(chunks, tmp_path / "ix", cfg, embedder=emb, progress=False)
    assert emb.calls == [EMBED_CALL, 40] and cfg.embedder.batch_size < EMBED_CALL


def test_a_model_that_fails_to_load_during_a_build_is_reported_and_the_index_kept(tmp_path):
    """The model loads in a thread beside tokenising: its error still ends the build, with the previous snapshot
    published and no half-written one left."""
    from hanrag.embed import EmbedderError

    corpus, index = tmp_path / "corpus", tmp_path / "index"
    write_corpus(corpus)
    build_index(corpus, index, Config(), progress=False)
    before = store.current_snapshot_dir(index)
    (corpus / "new.md").write_text("---\nsource: https://example.org/n\n---\n# 새 문서\n\n새로 쓴 문단.\n",
                                   encoding="utf-8")
    bad = Config()
    bad.embedder.backend, bad.embedder.model = "sentence-transformers", str(tmp_path / "no-such-model")
    with pytest.raises(EmbedderError, match="cannot load sentence-transformers model"):
        build_index(corpus, index, bad, progress=False)
    assert store.current_snapshot_dir(index) == before
    assert sorted(p.name for p in (index / "snapshots").iterdir()) == [before.name]
    assert open_snapshot(index).chunks  # still opens and searches as before


def test_the_summary_tells_the_machine_cache_from_the_index_cache_and_new_vectors(tmp_path):
    """A fresh index folder over texts the machine cache holds: none embedded, none "from the cache" of the index."""
    corpus = tmp_path / "corpus"
    write_corpus(corpus)
    cfg = Config()
    cfg.embedder.cache_dir = str(tmp_path / "machine")  # a machine cache of this test's own (as HANRAG_CACHE_DIR)
    first = build_index(corpus, tmp_path / "one", cfg, progress=False)
    n = first.chunks
    assert (first.from_index_cache, first.from_machine_cache, first.newly_embedded) == (0, 0, n)
    other = build_index(corpus, tmp_path / "two", cfg, progress=False)  # a fresh folder, the same machine cache
    assert (other.from_index_cache, other.from_machine_cache, other.newly_embedded) == (0, n, 0)
    line = f"{n} chunk vectors: 0 reused from the index, {n} from the machine cache, 0 newly embedded ("
    assert any(s.startswith(line) for s in other.summary_lines()), other.summary_lines()
    d = other.to_dict()
    assert d["embedded"] == n  # as before: the texts the index's own cache lacked
    assert (d["distinct_texts"], d["from_index_cache"], d["from_machine_cache"], d["newly_embedded"]) == (n, 0, n, 0)
    again = build_index(corpus, tmp_path / "two", cfg, progress=False)
    assert (again.from_index_cache, again.from_machine_cache, again.newly_embedded, again.embedded) == (n, 0, 0, 0)
    assert f"{n} chunk vectors: {n} reused from the index, 0 from the machine cache, 0 newly embedded (" in "\n".join(
        again.summary_lines())


def test_the_summary_counts_distinct_texts(tmp_path):
    """Two chunks of one text are one vector to embed: the counts add up to the distinct texts, which it names."""
    cfg = Config()
    cfg.embedder.cache = False
    rollback = "롤백은 kubectl rollout undo 로 한다."
    texts = [rollback, "JWT carries signed claims.", rollback]
    chunks = [Chunk(chunk_id=f"c{i}", doc_id=f"d{i}", text=t, start=0, end=len(t), lang="ko")
              for i, t in enumerate(texts)]
    report = build_from_chunks(chunks, tmp_path / "ix", cfg, progress=False)
    assert (report.texts, report.from_index_cache, report.from_machine_cache, report.newly_embedded) == (2, 0, 0, 2)
    assert any(s.startswith("3 chunk vectors (2 distinct texts): 0 reused from the index, 0 from the machine cache, "
                            "2 newly embedded (") for s in report.summary_lines()), report.summary_lines()
