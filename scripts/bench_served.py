"""Graph-extraction throughput: in process vs served with 1, 2, 4 requests in flight.

    .venv/bin/python scripts/bench_served.py --passages 40 --concurrency 1,2,4

Each passage goes through localrag's real extraction (localrag.kg.extract.extract_passage:
the kg prompt, the candidate-span JSON schema, grounding, one repair retry), exactly as the
graph builder calls it, minus the store. Starts llama-cpp-python's OpenAI-compatible server
on 127.0.0.1 (a free port) with the same model and --n_threads, runs the served
configurations through localrag's served backend with N requests in flight
(localrag.llm.concurrent.in_flight), and prints a Markdown table. Configurations are
interleaved in rounds so a change in the machine's load hits them alike. The server is
always stopped at the end.
"""

from __future__ import annotations

import argparse
import json
import os
import signal
import statistics
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from localrag.config import LLMSettings  # noqa: E402
from localrag.llm.base import LLM, LLMError  # noqa: E402
from localrag.llm.concurrent import in_flight  # noqa: E402
from localrag.llm.discovery import bundled_model  # noqa: E402
from localrag.kg.extract import ExtractorOptions, extract_passage  # noqa: E402
from localrag.llm.llamacpp import LlamaCppLLM  # noqa: E402
from localrag.llm.openai_compat import OpenAICompatLLM  # noqa: E402
from localrag_bench.served import ServerProcess  # noqa: E402

CORPUS = REPO.parent / "shared" / "data" / "2wiki" / "dev" / "corpus.jsonl"


@dataclass
class Row:
    backend: str
    concurrency: int
    passages: int
    seconds: float
    parsed: int  # passages whose model reply was accepted (grounded triples)
    failed: int  # calls that raised (server errors)
    completion_tokens: int
    latencies_ms: list[float]
    calls: int = 0

    @property
    def per_min(self) -> float:
        return self.passages / self.seconds * 60

    def markdown(self, baseline: float) -> str:
        p50 = statistics.median(self.latencies_ms) if self.latencies_ms else 0.0
        return (f"| {self.backend} | {self.concurrency} | {self.passages} | {self.calls} | {self.seconds:.1f} | "
                f"{self.per_min:.1f} | {self.per_min / baseline:.2f}× | {self.completion_tokens / self.seconds:.1f} | "
                f"{p50:.0f} | {self.parsed}/{self.passages} | {self.failed} |")


def load_passages(path: Path, n: int) -> list[tuple[str, str]]:
    out = []
    with path.open(encoding="utf-8") as fh:
        for line in fh:
            row = json.loads(line)
            if len(row["text"].split()) >= 20:
                out.append((row["title"], row["text"]))
            if len(out) == n:
                break
    return out


def run(llm: LLM, passages: list[tuple[str, str]], concurrency: int, opts: ExtractorOptions, label: str) -> Row:
    def extract(p: tuple[str, str]):
        started = time.perf_counter()
        result = extract_passage(p[1], p[0], opts, llm)
        return result, (time.perf_counter() - started) * 1000

    started = time.perf_counter()
    row = Row(label, concurrency, len(passages), 0.0, 0, 0, 0, [])
    for _, result in in_flight(extract, passages, concurrency):
        if isinstance(result, Exception):
            row.failed += 1
            print(f"  error: {result}", file=sys.stderr)
            continue
        extraction, ms = result
        row.latencies_ms.append(ms)
        row.calls += extraction.calls
        row.completion_tokens += extraction.completion_tokens
        row.parsed += extraction.status == "llm"
    row.seconds = time.perf_counter() - started
    return row


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--passages", type=int, default=40)
    ap.add_argument("--concurrency", default="1,2,4", help="comma-separated in-flight counts for the served runs")
    ap.add_argument("--threads", type=int, default=2, help="llama.cpp threads, in process and in the server")
    ap.add_argument("--max-tokens", type=int, default=1024, help="per extraction call (index.extract_max_tokens)")
    ap.add_argument("--n-ctx", type=int, default=2048)
    ap.add_argument("--corpus", type=Path, default=CORPUS)
    ap.add_argument("--model", type=Path, default=None, help="GGUF (default: the bundled SmolLM2)")
    ap.add_argument("--url", default="", help="benchmark an already running server instead of starting one")
    ap.add_argument("--llm-model", default="", help="model name on --url (default: the first it lists)")
    ap.add_argument("--skip-in-process", action="store_true")
    ap.add_argument("--rounds", type=int, default=4, help="interleave the configurations over this many chunks")
    args = ap.parse_args()

    model = args.model or bundled_model()
    if model is None and not (args.url and args.skip_in_process):
        raise SystemExit("no model: pass --model PATH or install the bundled SmolLM2")
    passages = load_passages(args.corpus, args.passages)
    levels = [int(x) for x in args.concurrency.split(",") if x.strip()]
    settings = LLMSettings(model=str(model or ""), n_ctx=args.n_ctx, n_threads=args.threads, timeout_s=600.0)
    opts = ExtractorOptions(extractor="llm", max_tokens=args.max_tokens)
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(143))  # so `finally` stops the server
    configs: list[tuple[str, int]] = ([] if args.skip_in_process else [("in process (llama-cpp-python)", 1)]) + \
        [("served (llama_cpp.server)", c) for c in levels]
    totals: dict[tuple[str, int], Row] = {k: Row(k[0], k[1], 0, 0.0, 0, 0, 0, []) for k in configs}
    backends: dict[str, LLM] = {}
    server = None
    url = args.url
    try:
        if not args.skip_in_process:
            backends[configs[0][0]] = LlamaCppLLM(model, settings)
        if not url:
            server = ServerProcess(model, Path(tempfile.gettempdir()) / f"bench_served_{os.getpid()}.log",
                                   threads=args.threads, n_ctx=args.n_ctx)
            print("server:", " ".join(server.command()[1:]), file=sys.stderr)
            server.start(timeout_s=120)
            url = server.url
        served = OpenAICompatLLM(LLMSettings(url=url, url_model=args.llm_model, timeout_s=600.0, retries=2,
                                             seed=settings.seed))
        backends["served (llama_cpp.server)"] = served
        for llm in backends.values():
            run(llm, passages[:2], 1, opts, "warm-up")
        # rounds interleave the configurations, so a change in the machine's load hits them all alike
        size = max(1, -(-len(passages) // max(1, args.rounds)))
        for start in range(0, len(passages), size):
            chunk = passages[start:start + size]
            for key in configs:
                row = run(backends[key[0]], chunk, key[1], opts, key[0])
                total = totals[key]
                total.passages += row.passages
                total.seconds += row.seconds
                total.parsed += row.parsed
                total.failed += row.failed
                total.completion_tokens += row.completion_tokens
                total.calls += row.calls
                total.latencies_ms += row.latencies_ms
                print(f"  passages {start}-{start + len(chunk) - 1}: {key[0]}, {key[1]} in flight: "
                      f"{row.per_min:.1f}/min", file=sys.stderr, flush=True)
        form = served.response_format_form
    except (LLMError, RuntimeError) as exc:
        raise SystemExit(f"error: {exc}")
    finally:
        if server is not None:
            server.stop()
    rows = [totals[k] for k in configs]

    print(f"\nmodel {model.name if model else args.llm_model or 'first listed'}, {len(passages)} passages from {args.corpus}, prompt {opts.prompt_version()}, "
          f"max_tokens {args.max_tokens}, {args.threads} threads, {args.rounds} rounds, "
          f"served response_format: {form}\n")
    print("| backend | in flight | passages | LLM calls | seconds | passages/min | vs first row | completion tok/s | "
          "p50 ms per passage | model reply accepted | errors |")
    print("|---|---|---|---|---|---|---|---|---|---|---|")
    for row in rows:
        print(row.markdown(rows[0].per_min))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
