"""Background rebuild jobs: one at a time, states kept in memory, results without absolute paths."""

from __future__ import annotations

import threading
import time
import uuid
from collections import OrderedDict
from typing import Any

from hanrag.server.output import jsonable

MAX_JOBS_KEPT = 50


def scrub_paths(value: Any, paths: dict[str, str]) -> Any:
    """``value`` with every occurrence of the given absolute paths replaced by their placeholders."""
    if isinstance(value, dict):
        return {k: scrub_paths(v, paths) for k, v in value.items() if k != "index_dir"}
    if isinstance(value, list):
        return [scrub_paths(v, paths) for v in value]
    if isinstance(value, str):
        for path, name in paths.items():
            value = value.replace(path, name)
        return value
    return value


class Jobs:
    """Background rebuilds: one at a time, their states kept in memory (newest MAX_JOBS_KEPT)."""

    def __init__(self, scrub=lambda value: value) -> None:
        self._lock = threading.Lock()
        self._jobs: OrderedDict[str, dict[str, Any]] = OrderedDict()
        self._running: str | None = None
        self._scrub = scrub  # results and errors leave the server without its absolute paths

    def get(self, job_id: str) -> dict[str, Any] | None:
        with self._lock:
            job = self._jobs.get(job_id)
            return dict(job) if job else None

    def running(self) -> str | None:
        with self._lock:
            return self._running

    def start(self, work, source: str = "files") -> dict[str, Any] | None:
        """Start ``work`` in a thread; None when a job is already running. ``work`` returns (result, swapped)."""
        with self._lock:
            if self._running is not None:
                return None
            job_id = uuid.uuid4().hex
            job = {"id": job_id, "kind": "rebuild", "source": source, "status": "queued", "created": time.time(),
                   "progress": ""}
            self._jobs[job_id] = job
            while len(self._jobs) > MAX_JOBS_KEPT:
                self._jobs.popitem(last=False)
            self._running = job_id
        thread = threading.Thread(target=self._run, args=(job_id, work), name=f"hanrag-job-{job_id[:8]}", daemon=True)
        thread.start()
        return dict(job)

    def _update(self, job_id: str, **changes: Any) -> None:
        with self._lock:
            if job_id in self._jobs:
                self._jobs[job_id].update(changes)

    def _run(self, job_id: str, work) -> None:
        started = time.time()
        self._update(job_id, status="running", started=started, progress="building")
        try:
            result, swapped = work(lambda step: self._update(job_id, progress=str(step)))
            self._update(job_id, status="succeeded", result=self._scrub(jsonable(result)), swapped=swapped,
                         progress="done")
        except Exception as exc:
            self._update(job_id, status="failed", error=self._scrub(f"{type(exc).__name__}: {exc}"),
                         progress="failed")
        finally:
            finished = time.time()
            self._update(job_id, finished=finished, elapsed_s=round(finished - started, 3))
            with self._lock:
                self._running = None
