"""A text's vector does not depend on its batch, so an incremental build equals a clean one (issue 30, finding 7).

The default onnx embedder used to run windows in padded batches, and ONNX Runtime's dynamic int8
quantisation takes one activation scale over the whole batch: the same text moved by up to .01 with
other batch-mates, and an index built in steps (or resumed after a kill) differed from a clean build.
"""

from __future__ import annotations

import random
import subprocess
import sys
import textwrap
from pathlib import Path

import numpy as np
import pytest

from hanrag.config import Config
from hanrag.embed import load_embedder
from hanrag.index.snapshot import open_snapshot
from hanrag.pipeline import build_index

ROOT = Path(__file__).resolve().parents[1]
PROBE = "롤백은 kubectl rollout undo deployment/web 로 한다. Rollbacks keep the previous ReplicaSet."
MATES = [
    "짧다.",
    "甲木參天，脫胎要火。春不容金，秋不容土。",
    "JWT carries signed claims about a user; rotate the signing keys regularly and keep them out of logs.",
    " ".join(["파드가 재시작을 반복하면 먼저 로그를 확인한다."] * 12),
    " ".join(["The quick brown fox jumps over the lazy dog near the riverbank at dawn."] * 60),  # > 510 tokens
]


@pytest.fixture(scope="module")
def embedder():
    return load_embedder(Config().embedder)  # the default: onnx, converted into the test cache


def test_a_vector_does_not_depend_on_its_batch(embedder):
    assert embedder.backend == "onnx"
    alone = embedder.encode_passages([PROBE])[0]
    batches = [
        [PROBE, MATES[0]],  # a shorter mate: the probe was the padded-to length
        [MATES[3], PROBE],  # a longer mate: the probe was padded
        [*MATES, PROBE],  # every length, a multi-window text included
        [MATES[4], PROBE, MATES[1], MATES[2]],
    ]
    for batch in batches:
        vecs = embedder.encode_passages(batch)
        assert np.array_equal(vecs[batch.index(PROBE)], alone), [len(t) for t in batch]
    # the mates too, alone and in any order: every row is bit-identical, not just close
    together = embedder.encode_passages(MATES)
    reversed_ = embedder.encode_passages(MATES[::-1])[::-1]
    one_by_one = np.stack([embedder.encode_passages([t])[0] for t in MATES])
    assert np.array_equal(together, one_by_one) and np.array_equal(reversed_, one_by_one)
    # queries as well (a search embeds one; an eval many)
    q = embedder.encode_queries(["롤백 방법"])[0]
    assert np.array_equal(embedder.encode_queries(["배포 장애", "롤백 방법", MATES[4]])[1], q)


# -- builds ----------------------------------------------------------------------------------------
WORDS = ["pod", "node", "restart", "deploy", "rollback", "배포", "장애", "로그", "서버", "설정", "index", "query",
         "甲木", "오행", "kubectl", "token", "롤백", "재시작", "甲木參天", "脫胎要火"]


def write_corpus(root: Path, files: range) -> None:
    """Files of four sections of different lengths (so batch-mates and padding differ between builds)."""
    root.mkdir(parents=True, exist_ok=True)
    for f in files:
        rng = random.Random(f)
        sections = [f"## part {s}\n\n문서 {f}-{s}: " + " ".join(rng.choice(WORDS) for _ in range(rng.randint(3, 60)))
                    + "." for s in range(4)]
        (root / f"doc{f:03d}.md").write_text(
            f"---\nsource: https://example.org/{f}\n---\n# doc {f}\n\n" + "\n\n".join(sections) + "\n",
            encoding="utf-8")


def config() -> Config:
    cfg = Config()
    cfg.embedder.cache = False  # only the index's own cache: no build may reuse another build's vectors
    return cfg


def vectors_by_chunk(index: Path) -> dict[str, np.ndarray]:
    snap = open_snapshot(index)
    emb = np.asarray(snap.embeddings)
    return {c.chunk_id: emb[i] for i, c in enumerate(snap.chunks)}


def assert_same_vectors(index: Path, clean: dict[str, np.ndarray]) -> None:
    got = vectors_by_chunk(index)
    assert got.keys() == clean.keys()
    differ = [cid for cid in clean if not np.array_equal(got[cid], clean[cid])]
    assert not differ, f"{len(differ)} of {len(clean)} chunks have another vector than in the clean build"


N_FILES = 8
DRIVER = textwrap.dedent(
    """
    import sys, time
    from pathlib import Path
    from hanrag.config import Config
    from hanrag.embed import load_embedder
    from hanrag.pipeline import build_index, vectors

    vectors.EMBED_CALL = 3  # several calls, a checkpoint after each: the kill comes after some vectors were kept
    vectors.CHECKPOINT_EVERY = 1
    cfg = Config()
    cfg.embedder.cache = False
    cfg.embedder.batch_size = 1
    real = load_embedder(cfg.embedder)
    calls = 0

    class Killable:
        dim, max_tokens, truncates = real.dim, real.max_tokens, real.truncates
        def encode_passages(self, texts):
            global calls
            calls += 1
            if calls == 3:
                print("AT embed", flush=True); time.sleep(60)
            return real.encode_passages(texts)
        encode_queries = staticmethod(real.encode_queries)
        count_tokens = staticmethod(real.count_tokens)
        identity = staticmethod(real.identity)

    build_index(Path(sys.argv[1]), Path(sys.argv[2]), cfg, embedder=Killable(), progress=False)
    print("DONE", flush=True)
    """
)


@pytest.fixture(scope="module")
def clean_build(tmp_path_factory) -> dict[str, np.ndarray]:
    tmp = tmp_path_factory.mktemp("clean")
    write_corpus(tmp / "corpus", range(N_FILES))
    build_index(tmp / "corpus", tmp / "index", config(), progress=False)
    return vectors_by_chunk(tmp / "index")


def test_incremental_build_equals_clean_build(tmp_path, clean_build):
    corpus, index = tmp_path / "corpus", tmp_path / "index"
    write_corpus(corpus, range(N_FILES // 2))
    build_index(corpus, index, config(), progress=False)
    write_corpus(corpus, range(N_FILES // 2, N_FILES))
    build_index(corpus, index, config(), progress=False)  # embeds only the second half
    assert_same_vectors(index, clean_build)


@pytest.mark.slow
def test_build_killed_midway_then_resumed_equals_clean_build(tmp_path, clean_build):
    corpus, index = tmp_path / "corpus", tmp_path / "index"
    write_corpus(corpus, range(N_FILES // 2))
    build_index(corpus, index, config(), progress=False)
    write_corpus(corpus, range(N_FILES // 2, N_FILES))
    (tmp_path / "driver.py").write_text(DRIVER)
    proc = subprocess.Popen([sys.executable, str(tmp_path / "driver.py"), str(corpus), str(index)],
                            stdout=subprocess.PIPE, text=True, cwd=ROOT)
    try:
        line = proc.stdout.readline()
        assert line.strip() == "AT embed", line
        proc.kill()  # SIGKILL after two calls were embedded and checkpointed
    finally:
        proc.wait(30)
    build_index(corpus, index, config(), progress=False)  # resumes from the checkpointed vectors
    assert_same_vectors(index, clean_build)
