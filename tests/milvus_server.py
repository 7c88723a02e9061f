"""The real Milvus server for tests and benchmarks, from the milvus-lite 2.5.1 wheel.

milvus-lite 2.5.1 ships the Milvus server binary (``milvus_lite/lib/milvus``) and the
shared libraries it needs next to it. Run as ``milvus DB_FILE HOST:PORT LOG_LEVEL`` it
serves the ordinary gRPC API on a TCP port, so hanrag connects by URI exactly as it
would to a Milvus cluster (no ``milvus_lite`` Python shim in the code path).

``MilvusServer`` is a context manager; ``milvus_uri`` is a pytest session fixture that
yields ``http://127.0.0.1:PORT`` and skips cleanly when the binary is missing.
"""

from __future__ import annotations

import importlib.util
import os
import signal
import socket
import subprocess
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path

import pytest


def find_milvus_binary() -> Path | None:
    """The server binary inside the installed milvus-lite wheel, or None."""
    # find_spec, not import: milvus_lite/__init__.py needs pkg_resources (setuptools<80)
    spec = importlib.util.find_spec("milvus_lite")
    if spec is None or not spec.submodule_search_locations:
        return None
    binary = Path(next(iter(spec.submodule_search_locations))) / "lib" / "milvus"
    return binary if binary.is_file() and os.access(binary, os.X_OK) else None


def free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _port_open(port: int) -> bool:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.settimeout(0.2)
        return s.connect_ex(("127.0.0.1", port)) == 0


class MilvusServer:
    """One Milvus server process on a free loopback port, data in a temp folder."""

    def __init__(self, data_dir: str | Path | None = None, start_timeout_s: float = 30.0) -> None:
        binary = find_milvus_binary()
        if binary is None:
            raise FileNotFoundError("milvus-lite 2.5.1 server binary not found (pip install 'milvus-lite==2.5.1')")
        self.binary = binary
        self._own_dir = data_dir is None
        self.data_dir = Path(data_dir) if data_dir else Path(tempfile.mkdtemp(prefix="hanrag-milvus-"))
        self.start_timeout_s = start_timeout_s
        self.port = 0
        self.proc: subprocess.Popen[bytes] | None = None

    @property
    def uri(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def start(self) -> str:
        self.port = free_port()
        lib = str(self.binary.parent)
        env = dict(os.environ)
        env["LD_LIBRARY_PATH"] = lib + (":" + env["LD_LIBRARY_PATH"] if env.get("LD_LIBRARY_PATH") else "")
        log = open(self.data_dir / "milvus.log", "ab")
        self.proc = subprocess.Popen(
            [str(self.binary), str(self.data_dir / "milvus.db"), f"127.0.0.1:{self.port}", "ERROR"],
            cwd=self.data_dir,
            env=env,
            stdout=log,
            stderr=subprocess.STDOUT,
        )
        log.close()
        deadline = time.monotonic() + self.start_timeout_s
        while time.monotonic() < deadline:
            if self.proc.poll() is not None:
                raise RuntimeError(f"milvus server exited with {self.proc.returncode}; see {self.data_dir}/milvus.log")
            if _port_open(self.port):
                return self.uri
            time.sleep(0.1)
        self.stop()
        raise TimeoutError(f"milvus server did not listen on {self.uri} within {self.start_timeout_s:.0f} s")

    def alive(self) -> bool:
        return self.proc is not None and self.proc.poll() is None

    def stop(self) -> None:
        if self.proc is not None and self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
            try:
                self.proc.wait(timeout=10)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait(timeout=5)
        self.proc = None

    def __enter__(self) -> MilvusServer:
        self.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop()
        if self._own_dir:
            import shutil

            shutil.rmtree(self.data_dir, ignore_errors=True)


@pytest.fixture(scope="session")
def milvus_server() -> Iterator[MilvusServer]:
    if find_milvus_binary() is None:
        pytest.skip("milvus-lite 2.5.1 server binary not installed")
    if importlib.util.find_spec("pymilvus") is None:
        pytest.skip("pymilvus not installed")
    with MilvusServer() as server:
        yield server


@pytest.fixture(scope="session")
def milvus_uri(milvus_server: MilvusServer) -> str:
    """``http://127.0.0.1:PORT`` of a running Milvus server (session-wide)."""
    return milvus_server.uri
