"""Ctrl-C during a build: the progress bar stops, the vectors embedded so far are kept, the lock goes, one line says
what is published, exit 130."""

from __future__ import annotations

import fcntl
import json
import os
import pty
import random
import re
import signal
import struct
import subprocess
import sys
import termios
import threading
import time
from pathlib import Path

import numpy as np
import pytest

from hanrag.config import Config
from hanrag.embed import load_embedder
from hanrag.embed.cache import CachingEmbedder
from hanrag.index import store
from hanrag.index.cache import CACHE_DIR, EmbeddingCache
from hanrag.index.snapshot import open_snapshot
from hanrag.pipeline import build_from_chunks
from hanrag.pipeline.vectors import EMBED_CALL
from hanrag.records import Chunk

ROOT = Path(__file__).resolve().parents[2]
WORDS = ["pod", "node", "restart", "deploy", "rollback", "배포", "장애", "로그", "서버", "설정", "index", "query",
         "甲木", "오행", "kubectl", "token", "롤백", "재시작"]
ANSI = re.compile(r"\x1b\[[0-9;?]*[A-Za-z]")


def write_corpus(root: Path, n_chunks: int, first: int = 0) -> None:
    """``n_chunks`` sections of distinct text, eight to a file, from file number ``first`` on."""
    rng = random.Random(first)
    root.mkdir(parents=True, exist_ok=True)
    for f in range(first, first + n_chunks // 8):
        sections = [f"## part {s}\n\n문서 {f}-{s}: " + " ".join(rng.choice(WORDS) for _ in range(12)) + "."
                    for s in range(8)]
        (root / f"doc{f:04d}.md").write_text(
            f"---\nsource: https://example.org/{f}\n---\n# doc {f}\n\n" + "\n\n".join(sections) + "\n",
            encoding="utf-8")


def ctrl_c_build(corpus: Path, index: Path, cwd: Path, after: int) -> tuple[int, str, str, int]:
    """``hanrag build`` with its progress bar on a terminal, sent SIGINT (what Ctrl-C sends to the foreground process
    group) once the bar shows at least ``after`` vectors embedded.

    Returns (exit code, what the terminal showed, stdout, the embedded count the bar showed)."""
    master, slave = pty.openpty()
    fcntl.ioctl(slave, termios.TIOCSWINSZ, struct.pack("HHHH", 50, 200, 0, 0))  # one line per progress frame
    env = {**os.environ, "TERM": "xterm-256color", "COLUMNS": "200",
           "PYTHONPATH": os.pathsep.join([str(ROOT), *filter(None, [os.environ.get("PYTHONPATH")])])}
    for name in ("NO_COLOR", "FORCE_COLOR", "TTY_COMPATIBLE", "TTY_INTERACTIVE"):
        env.pop(name, None)
    proc = subprocess.Popen(
        [sys.executable, "-m", "hanrag", "build", str(corpus), "--index", str(index)],
        stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=slave, cwd=cwd, env=env, start_new_session=True,
        # Ctrl-C's default action, as on a terminal: a test run started in the background (`pytest &`, nohup) inherits
        # SIGINT ignored, and Python then never raises KeyboardInterrupt: the build ran to its end and the test failed
        preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL),
    )
    os.close(slave)
    shown: list[bytes] = []

    def read() -> None:
        while True:
            try:
                data = os.read(master, 65536)
            except OSError:  # EIO: the child closed the terminal
                return
            if not data:
                return
            shown.append(data)

    reader = threading.Thread(target=read, daemon=True)
    reader.start()
    seen, deadline = 0, time.monotonic() + 600
    try:
        while proc.poll() is None and time.monotonic() < deadline:
            tail = ANSI.sub("", b"".join(shown)[-4000:].decode("utf-8", "replace"))
            counts = re.findall(r"embedding\S*[^\r\n]*?(\d+)/\d+", tail)
            if counts and int(counts[-1]) >= after:
                seen = int(counts[-1])
                os.killpg(proc.pid, signal.SIGINT)
                break
            time.sleep(0.05)
        out, _ = proc.communicate(timeout=300)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
        reader.join(30)
        os.close(master)
    assert seen, "the build ended before it had embedded a first call of texts:\n" + b"".join(shown).decode(
        "utf-8", "replace")[-3000:]
    return proc.returncode, b"".join(shown).decode("utf-8", "replace"), out.decode("utf-8", "replace"), seen


def cli_json(*args: str, cwd: Path) -> dict:
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(ROOT), *filter(None, [os.environ.get("PYTHONPATH")])])}
    r = subprocess.run([sys.executable, "-m", "hanrag", *args, "--json"], capture_output=True, text=True, cwd=cwd,
                       env=env, timeout=600)
    assert r.returncode == 0, r.stderr
    return json.loads(r.stdout)


def check_interrupted(rc: int, terminal: str, stdout: str, message: str) -> None:
    assert rc == 130, terminal
    assert "Traceback" not in terminal and stdout == ""
    lines = [ln for ln in ANSI.sub("", terminal.replace("\r", "\n")).split("\n") if ln.strip()]
    assert lines[-1] == message and sum(ln.startswith("interrupted:") for ln in lines) == 1, lines[-3:]
    # the bar was stopped before the message: its last frame is marked, then the cursor comes back
    assert "(interrupted)" in lines[-2], lines[-2]
    assert terminal.rfind("\x1b[?25h") < terminal.rfind("interrupted: "), terminal[-500:]


@pytest.mark.slow
def test_ctrl_c_mid_embedding(tmp_path):
    corpus, index = tmp_path / "corpus", tmp_path / "index"
    n = 6 * EMBED_CALL  # a few calls of texts: the interrupt lands while most are still to embed
    write_corpus(corpus, n)

    # a first build: nothing was published, and the folder is left with the cache only (no .build.lock)
    rc, terminal, stdout, seen = ctrl_c_build(corpus, index, tmp_path, after=EMBED_CALL)
    check_interrupted(rc, terminal, stdout, "interrupted: no index was published")
    assert sorted(p.name for p in index.iterdir()) == [CACHE_DIR]

    # the next build embeds only what the interrupted one had not
    report = cli_json("build", str(corpus), "--index", str(index), cwd=tmp_path)
    assert report["distinct_texts"] == report["chunks"] == n
    assert report["from_index_cache"] >= seen and report["newly_embedded"] <= n - seen
    assert report["from_index_cache"] + report["from_machine_cache"] + report["newly_embedded"] == n
    first = report["snapshot"]

    # a rebuild: the previous snapshot stays current and searchable, its lock file stays
    write_corpus(corpus, n, first=n // 8)
    rc, terminal, stdout, seen = ctrl_c_build(corpus, index, tmp_path, after=EMBED_CALL)
    check_interrupted(rc, terminal, stdout, "interrupted: the previous snapshot is still current")
    snap = open_snapshot(index)  # verifies every checksum
    assert snap.name == first and len(snap.chunks) == n
    from hanrag.backends.embedded import EmbeddedBackend

    embedder = load_embedder(Config().embedder)
    hits = EmbeddedBackend(snap).dense_search(embedder.encode_queries(["서버 배포 롤백"])[0], 3)
    assert len(hits) == 3
    assert (index / store.LOCK).is_file()
    assert not [p.name for p in store.snapshots_dir(index).iterdir() if p.name != first]  # no half-written one
    # the new texts embedded before the interrupt are in the index's cache for the next build
    cache = EmbeddingCache(index / CACHE_DIR, embedder.identity(), embedder.dim)
    assert len(cache.index) >= n + seen


class Interrupted:
    """The real embedder; Ctrl-C arrives during its second call."""

    def __init__(self, inner) -> None:
        self.inner, self.calls = inner, 0
        self.dim, self.max_tokens, self.truncates = inner.dim, inner.max_tokens, inner.truncates

    def encode_passages(self, texts):
        self.calls += 1
        if self.calls == 2:
            raise KeyboardInterrupt
        return self.inner.encode_passages(texts)

    def count_tokens(self, text):
        return self.inner.count_tokens(text)

    def identity(self):
        return self.inner.identity()


def chunks(n: int) -> list[Chunk]:
    return [Chunk(chunk_id=f"c{i}", doc_id=f"d{i}", text=f"문서 {i}번: 배포 {i}회 뒤 롤백 절차 {i * 7}단계", start=0,
                  end=20, lang="ko") for i in range(n)]


def test_an_interrupted_build_saves_both_caches_and_the_next_embeds_the_rest(tmp_path):
    cfg = Config()
    cfg.embedder.cache = False
    real = load_embedder(cfg.embedder)
    index, machine = tmp_path / "index", tmp_path / "machine"
    docs = chunks(EMBED_CALL + 40)
    with pytest.raises(KeyboardInterrupt):
        build_from_chunks(docs, index, cfg, embedder=CachingEmbedder(Interrupted(real), machine), progress=False)
    # the first call's vectors are in the index's cache (no checkpoint was due yet) and in the machine cache
    assert len(EmbeddingCache(index / CACHE_DIR, real.identity(), real.dim).index) == EMBED_CALL
    assert len(CachingEmbedder(real, machine).missing([c.text for c in docs])) == 40
    assert sorted(p.name for p in index.iterdir()) == [CACHE_DIR]  # no lock file, no empty snapshots/

    again = CachingEmbedder(Interrupted(real), machine)
    again.inner.calls = 2  # no interrupt this time
    report = build_from_chunks(docs, index, cfg, embedder=again, progress=False)
    assert (report.from_index_cache, report.from_machine_cache, report.newly_embedded) == (EMBED_CALL, 0, 40)
    assert again.inner.calls == 3 and report.embedded == 40


def test_a_failed_first_build_removes_only_what_it_made(tmp_path):
    # an index folder that held a user's file: the file and the folder stay
    index = tmp_path / "index"
    index.mkdir()
    (index / "notes.txt").write_text("mine", encoding="utf-8")
    with pytest.raises(KeyboardInterrupt), store.build_lock(index):
        store.SnapshotWriter(index).abort()
        raise KeyboardInterrupt
    assert sorted(p.name for p in index.iterdir()) == ["notes.txt"]
    # a folder the build made, left empty: gone
    with pytest.raises(KeyboardInterrupt), store.build_lock(tmp_path / "new"):
        raise KeyboardInterrupt
    assert not (tmp_path / "new").exists()
    # a lock file that was there before: kept
    (tmp_path / "old").mkdir()
    (tmp_path / "old" / store.LOCK).touch()
    with pytest.raises(RuntimeError), store.build_lock(tmp_path / "old"):
        raise RuntimeError("boom")
    assert (tmp_path / "old" / store.LOCK).exists()


def test_an_interrupted_rebuild_keeps_the_lock_file_and_the_snapshot(tmp_path):
    index = tmp_path / "index"
    cfg = Config()
    build_from_chunks(chunks(3), index, cfg, progress=False)
    before = store.published_snapshot(index)
    with pytest.raises(KeyboardInterrupt):
        build_from_chunks(chunks(EMBED_CALL + 5), index, cfg, embedder=Interrupted(load_embedder(cfg.embedder)),
                          progress=False)
    assert (index / store.LOCK).is_file() and store.published_snapshot(index) == before
    assert open_snapshot(index).name == before


def test_the_lock_holds_across_a_removed_lock_file(tmp_path, monkeypatch):
    """An interrupted first build removes its lock file while holding it; a build that opened that file just before
    must not take the lock on the removed file (a third would lock the new one: two builds at once)."""
    index = tmp_path / "index"
    index.mkdir()
    (index / store.LOCK).touch()
    real_flock, removed = fcntl.flock, []

    def flock(fd, op):
        if not removed:  # the interrupted build removes the file between this build's open and its flock
            removed.append(True)
            os.unlink(index / store.LOCK)
        return real_flock(fd, op)

    monkeypatch.setattr(fcntl, "flock", flock)
    with store.build_lock(index):
        assert removed and (index / store.LOCK).exists()
        with pytest.raises(store.IndexBuildError, match="another build"), store.build_lock(index):
            pass


def test_a_cut_short_add_is_dropped_before_saving(tmp_path):
    """What an EmbeddingCache.add interrupted between its lines leaves (rows past the index) is never saved."""
    ident = {"model": "test", "dim": 4}
    c = EmbeddingCache(tmp_path, ident, 4)
    c.add(["a", "b"], np.ones((2, 4), np.float32), [1, 2])
    c._blocks.append(np.zeros((3, 4), np.float32))  # the state an add cut short by Ctrl-C leaves
    c.keys.extend(["x", "y"])
    c.save()
    again = EmbeddingCache(tmp_path, ident, 4)
    assert again.keys == ["a", "b"] and again.vectors.shape == (2, 4)
    c.add(["z"], np.full((1, 4), 2, np.float32), [3])
    assert c.get("z")[0].tolist() == [2, 2, 2, 2] and c.keys == ["a", "b", "z"]
