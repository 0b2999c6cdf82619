"""llama-cpp-python's own OpenAI-compatible server on 127.0.0.1, started and always stopped: the served
backend's real counterpart for scripts/bench_served.py and the served tests (tests/served_helpers.py)."""

from __future__ import annotations

import http.client
import socket
import subprocess
import sys
import time
from pathlib import Path


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class ServerProcess:
    """llama-cpp-python's OpenAI-compatible server on 127.0.0.1; ``stop()`` kills it.

    One thread by default: on a shared, busy machine two spin-waiting threads crawl.
    """

    def __init__(self, model: Path, log_path: Path, port: int | None = None, *, threads: int = 1, n_ctx: int = 2048):
        self.model, self.log_path = model, log_path
        self.port = port or free_port()
        self.threads, self.n_ctx = threads, n_ctx
        self.proc: subprocess.Popen | None = None

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}/v1"

    def command(self) -> list[str]:
        return [sys.executable, "-m", "llama_cpp.server", "--model", str(self.model), "--host", "127.0.0.1",
                "--port", str(self.port), "--n_ctx", str(self.n_ctx), "--n_threads", str(self.threads),
                "--n_threads_batch", str(self.threads), "--verbose", "False"]

    def start(self, timeout_s: float = 90.0) -> None:
        """Start the server and wait until it lists its models; RuntimeError (with the log's tail) if it cannot."""
        with self.log_path.open("ab") as log:
            self.proc = subprocess.Popen(self.command(), stdout=log, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL)
        deadline = time.monotonic() + timeout_s
        while time.monotonic() < deadline:
            if self.proc.poll() is not None:
                raise RuntimeError(f"the server exited with {self.proc.returncode}: {self.log_path.read_text()[-2000:]}")
            if self._ready():
                return
            time.sleep(0.25)
        self.stop()
        raise RuntimeError(f"the server did not become ready in {timeout_s} s")

    def _ready(self) -> bool:
        try:
            conn = http.client.HTTPConnection("127.0.0.1", self.port, timeout=2)
            try:
                conn.request("GET", "/v1/models")
                return conn.getresponse().status == 200
            finally:
                conn.close()
        except OSError:
            return False

    def stop(self) -> None:
        if self.proc is not None and self.proc.poll() is None:
            self.proc.kill()
            self.proc.wait(timeout=30)
        self.proc = None
