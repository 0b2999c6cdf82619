"""Settings for the served backend in tests; the real server they talk to (llama-cpp-python's own, with the
bundled GGUF, on 127.0.0.1 only) is localrag_bench.served.ServerProcess, shared with scripts/bench_served.py."""

from __future__ import annotations

from localrag.config import LLMSettings


def llm_settings(url: str, **kw) -> LLMSettings:
    base = {"url": url, "timeout_s": 60.0, "retries": 2, "retry_backoff_s": 0.05}
    base.update(kw)
    return LLMSettings(**base)
