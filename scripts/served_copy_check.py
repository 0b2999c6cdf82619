#!/usr/bin/env python
"""A short answer through llama-cpp-python's own server, `answer.pick = model` against `copy`.

Starts the server on 127.0.0.1 with the given GGUF, answers one question over the first five
HotpotQA-100 passages twice with each pick, and prints the number of allowed answers, the answer
and the seconds, or the error a pick ends in (docs/benchmarks.md "Answers: who picks the short answer"):

    .venv/bin/python scripts/served_copy_check.py models/qwen2.5-coder-0.5b.gguf
"""

from __future__ import annotations

import argparse
import json
import time
from pathlib import Path

from localrag.answer.flow import compose
from localrag.config import AnswerSettings, LLMSettings
from localrag.embed import default_embedder
from localrag.llm.openai_compat import OpenAICompatLLM
from localrag.records import Passage, Retrieval, ScoredPassage, Trace
from localrag_bench.served import ServerProcess


def first_passages(corpus: Path, n: int) -> list[Passage]:
    with corpus.open(encoding="utf-8") as f:
        rows = [json.loads(line) for _, line in zip(range(n), f)]
    return [Passage(id=i, doc_id=i, path=f"p{i}.md", title=r.get("title", ""), ordinal=0, heading="", text=r["text"],
                    sha256=f"h{i}", start_line=1, end_line=1) for i, r in enumerate(rows, start=1)]


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("model", type=Path, help="a GGUF file")
    ap.add_argument("--corpus", type=Path, default=Path("../shared/data/hotpotqa100/corpus.jsonl"))
    ap.add_argument("--log", type=Path, default=Path("served-copy-check.log"), help="the server's log")
    args = ap.parse_args()
    if not args.model.is_file() or not args.corpus.is_file():
        raise SystemExit(f"error: {args.model if not args.model.is_file() else args.corpus} is not a file")
    passages = first_passages(args.corpus, 5)
    question = f"Who or what is {passages[0].title}?"
    retrieval = Retrieval(question, [ScoredPassage(p, 1.0, "dense") for p in passages], Trace("dense"))
    server = ServerProcess(args.model, args.log, threads=2)
    server.start()
    try:
        embedder = default_embedder()
        llm = OpenAICompatLLM(LLMSettings(url=server.url, timeout_s=120.0, retries=0))
        for pick in ("model", "copy", "model", "copy"):
            started = time.perf_counter()
            settings = AnswerSettings(pick=pick, abstain_below=0, abstain_unnamed_below=0)
            try:
                out = compose(lambda: llm, embedder, question, retrieval, settings, n_passages=5, max_tokens=48,
                              since=started, emit=lambda event: None)
                print(f"{pick}: {len(out.choices)} allowed, {out.span!r}, {time.perf_counter() - started:.2f} s")
            except Exception as exc:  # the server's failure is the finding: print it, try the next
                print(f"{pick}: failed after {time.perf_counter() - started:.2f} s: {str(exc)[:200]}")
    finally:
        server.stop()


if __name__ == "__main__":
    main()
