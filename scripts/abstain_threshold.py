"""Choose answer.abstain_below on dev records (issue 14): replay the threshold offline.

Reads `bench --answer` results of answerable questions and `bench --answer --drop-gold`
results, and for each threshold t prints what abstaining below t (no model call) would
give: the share of drop-gold questions answered "not in your notes" (target >= 0.70), the
extra share of answerable questions abstained on (target <= 0.10) and their EM. Exact,
since a question under the threshold is abstained on before the model is asked.

    python scripts/abstain_threshold.py --answerable A.json [B.json ...] --dropped D.json [...]
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path


def _records(paths: list[str]) -> list[dict]:
    out = []
    for p in paths:
        out += [r for r in json.loads(Path(p).read_text())["records"] if r.get("answer_mode") and not r.get("error")]
    return out


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--answerable", nargs="+", required=True)
    ap.add_argument("--dropped", nargs="+", required=True)
    args = ap.parse_args()
    ok, dropped = _records(args.answerable), _records(args.dropped)
    base_abstain = sum(r["abstained"] for r in ok) / len(ok)
    print(f"{len(ok)} answerable, {len(dropped)} with gold dropped; without a threshold: answerable abstained "
          f"{base_abstain:.2f}, EM {sum(r['em'] for r in ok) / len(ok):.3f}; dropped abstained "
          f"{sum(r['abstained'] for r in dropped) / len(dropped):.2f}")
    print("| t | dropped: not in your notes | answerable: abstained | extra vs no threshold | answerable EM |")
    print("|---:|---:|---:|---:|---:|")
    for t in [x / 100 for x in range(30, 80, 2)]:
        def below(r: dict) -> bool:
            return r.get("evidence_score") is not None and r["evidence_score"] < t
        d = sum(r["abstained"] or below(r) for r in dropped) / len(dropped)
        a = sum(r["abstained"] or below(r) for r in ok) / len(ok)
        em = sum(0.0 if below(r) else r["em"] for r in ok) / len(ok)
        print(f"| {t:.2f} | {d:.2f} | {a:.2f} | {a - base_abstain:+.2f} | {em:.3f} |")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
