"""The constants of an embedder's similarity scale (embed.SimilarityScale): the mean cosine of a
question to unrelated lines and to its best gold line, for MiniLM and multilingual-e5-small, on
the tuning half of bench_data/tldr-multilingual against random tldr and dendron lines.

    .venv/bin/python scripts/similarity_scale.py [--data-root ../shared/data]
"""

from __future__ import annotations

import argparse
import json
import random
from pathlib import Path

import numpy as np

from localrag.embed import default_embedder
from localrag.embed_e5 import E5SmallEmbedder

ROOT = Path(__file__).resolve().parents[1]
QUESTIONS = ROOT / "bench_data" / "tldr-multilingual"


def _lines(path: Path) -> list[str]:
    return [line.strip("-`> ").strip() for line in path.read_text(errors="replace").splitlines()
            if len(line.strip()) > 12 and not line.startswith("#")]


def _unrelated(data: Path, rng: random.Random) -> list[str]:
    pages = sorted((data / "tldr-pages" / "pages" / "common").glob("*.md"))
    out: list[str] = []
    for page in rng.sample(pages, 150):
        lines = _lines(page)
        out += rng.sample(lines, min(2, len(lines)))
    notes = sorted((data / "dendron-vault" / "notes").rglob("*.md"))
    for note in rng.sample(notes, 100):
        prose = [line.strip() for line in note.read_text(errors="replace").splitlines() if len(line.strip()) > 30
                 and not line.startswith(("#", "---", "id:", "title:", "desc:", "updated:", "created:"))]
        out += rng.sample(prose, min(1, len(prose)))
    return out


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--data-root", type=Path, default=ROOT.parent / "shared" / "data")
    args = ap.parse_args()
    tuning = {line.strip() for line in (QUESTIONS / "dev_ids.txt").read_text().splitlines()
              if line.strip() and not line.startswith("#")}
    questions = [q for q in map(json.loads, (QUESTIONS / "questions.jsonl").read_text().splitlines())
                 if q["id"] in tuning and q.get("gold_notes")]
    unrelated = _unrelated(args.data_root, random.Random(7))
    for name, embedder in (("minilm", default_embedder()), ("e5-small", E5SmallEmbedder(threads=1))):
        others = embedder.encode(unrelated)
        far, best = [], []
        for q in questions:
            vector = embedder.encode_one(q["question"])
            gold = [line for g in q["gold_notes"] for line in _lines(args.data_root / "tldr-pages" / g)]
            best.append(float((embedder.encode(gold) @ vector).max()))
            far += list((others @ vector).tolist())
        print(f"{name}: unrelated mean {np.mean(far):.3f}, best gold mean {np.mean(best):.3f} "
              f"({len(questions)} questions x {len(unrelated)} lines)")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
