"""A real OpenAI-compatible server for tests: llama-cpp-python's own, with the bundled GGUF, on
127.0.0.1 only (tests/test_openai_backend.py, tests/test_served_build.py)."""

from __future__ import annotations

import http.client
import socket
import subprocess
import sys
import time
from pathlib import Path

from localrag.config import LLMSettings


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class ServerProcess:
    """llama-cpp-python's OpenAI-compatible server on 127.0.0.1; always killed at the end."""

    def __init__(self, model: Path, log_path: Path, port: int | None = None):
        self.model, self.log_path = model, log_path
        self.port = port or free_port()
        self.proc: subprocess.Popen | None = None

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}/v1"

    def start(self, timeout_s: float = 90.0) -> None:
        cmd = [sys.executable, "-m", "llama_cpp.server", "--model", str(self.model), "--host", "127.0.0.1",
               "--port", str(self.port), "--n_ctx", "2048", "--n_threads", "1", "--n_threads_batch", "1",
               "--verbose", "False"]  # one thread: on a shared, busy machine two spin-waiting threads crawl
        with self.log_path.open("ab") as log:
            self.proc = subprocess.Popen(cmd, stdout=log, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL)
        deadline = time.monotonic() + timeout_s
        while time.monotonic() < deadline:
            if self.proc.poll() is not None:
                raise RuntimeError(f"the server exited with {self.proc.returncode}: {self.log_path.read_text()[-2000:]}")
            try:
                conn = http.client.HTTPConnection("127.0.0.1", self.port, timeout=2)
                conn.request("GET", "/v1/models")
                if conn.getresponse().status == 200:
                    conn.close()
                    return
                conn.close()
            except OSError:
                pass
            time.sleep(0.25)
        self.stop()
        raise RuntimeError(f"the server did not become ready in {timeout_s} s")

    def stop(self) -> None:
        if self.proc is not None and self.proc.poll() is None:
            self.proc.kill()
            self.proc.wait(timeout=30)
        self.proc = None


def llm_settings(url: str, **kw) -> LLMSettings:
    base = {"url": url, "timeout_s": 60.0, "retries": 2, "retry_backoff_s": 0.05}
    base.update(kw)
    return LLMSettings(**base)
