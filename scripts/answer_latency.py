"""Time to evidence, first answer token and complete answer over examples/questions.jsonl.

One command prints the figures (p50 / p95 over the 12 questions, wall and CPU seconds, load
average): the model is loaded and the embedder warmed before the first question, as in the
TUI after start-up, so each figure is "after Enter".

    PYTHONPATH=$PWD python scripts/answer_latency.py [--strategy hybrid] [--threads 2] [--out FILE.json]
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from localrag.answer import short_answer  # noqa: E402
from localrag.api import Assistant, Index  # noqa: E402
from localrag_bench.metrics import exact_match, percentile  # noqa: E402
from localrag.config import load_settings  # noqa: E402


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--strategy", default="hybrid")
    ap.add_argument("--threads", type=int, default=0, help="llm.n_threads (0 = all cores)")
    ap.add_argument("--model", default="", help="GGUF (default: discovery, the bundled SmolLM2)")
    ap.add_argument("--mode", default="", choices=("", "shape", "free"), help="answer.mode (default: the setting)")
    ap.add_argument("--pick", default="", choices=("", "auto", "model", "likelihood", "ranking", "copy"),
                    help="answer.pick (default: the setting)")
    ap.add_argument("--out", help="write the per-question figures as JSON")
    args = ap.parse_args()
    questions = [json.loads(line) for line in (ROOT / "examples" / "questions.jsonl").read_text().splitlines() if line]
    with tempfile.TemporaryDirectory() as tmp:
        settings = load_settings(ROOT / "examples" / "notes", {"db": str(Path(tmp) / "index.db"),
                                                              "llm.n_threads": args.threads, "llm.model": args.model}
                                 | ({"answer.mode": args.mode} if args.mode else {})
                                 | ({"answer.pick": args.pick} if args.pick else {}))
        index = Index(settings)
        index.sync()
        assistant = Assistant(index)
        assistant.llm()  # loaded before the first question, as the TUI does at start-up
        index.embedder.encode_one("warm up")
        assistant.ask("What is this folder about?", strategy=args.strategy, on_token=lambda t: None)
        load_before = os.getloadavg()
        rows = []
        for q in questions:
            cpu0, wall0 = time.process_time(), time.perf_counter()
            answer = assistant.ask(q["question"], strategy=args.strategy, on_token=lambda t: None)
            rows.append({"id": q["id"], "question": q["question"], "mode": answer.mode, "answer": answer.text,
                         "em": exact_match(answer.span or short_answer(answer.text), q["answers"]), "abstained": answer.abstained,
                         "evidence_s": (answer.evidence_ms or 0) / 1000,
                         "first_token_s": None if answer.first_token_ms is None else answer.first_token_ms / 1000,
                         "total_s": time.perf_counter() - wall0, "cpu_s": time.process_time() - cpu0})
        index.close()
    print(f"{len(rows)} questions, {args.strategy}, model {assistant.model_source}, llm.n_threads={args.threads or 'all'}, "
          f"answer.mode={settings.answer.mode}, answer.pick={settings.answer.pick} -> {assistant.resolve_pick()}")
    for key in ("evidence_s", "first_token_s", "total_s", "cpu_s"):
        values = [r[key] for r in rows if r[key] is not None]
        print(f"  {key:14} p50 {percentile(values, 50):6.2f}  p95 {percentile(values, 95):6.2f}  (n={len(values)})")
    short = [r for r in rows if r["mode"] == "short"]
    print(f"  short answers {len(short)}/{len(rows)}: total p50 {percentile([r['total_s'] for r in short], 50):.2f} s, "
          f"p95 {percentile([r['total_s'] for r in short], 95):.2f} s; EM {sum(r['em'] for r in rows) / len(rows):.2f}; "
          f"abstained {sum(r['abstained'] for r in rows)}")
    print(f"  load average {load_before[0]:.2f} before, {os.getloadavg()[0]:.2f} after, on {os.cpu_count()} CPUs")
    if args.out:
        Path(args.out).write_text(json.dumps(rows, indent=1, ensure_ascii=False) + "\n", encoding="utf-8")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
