"""Sweeps behind the answer constants, on a benchmark set's own index, no model call.

    python scripts/answer_sweeps.py evidence --data DIR [--ids FILE] [--limit N] [--strategy graph]
    python scripts/answer_sweeps.py abstain --data DIR [--ids FILE] [--limit N] [--strategy graph]
    python scripts/answer_sweeps.py abstain --notes DIR --questions FILE   (answerable questions only)
    python scripts/answer_sweeps.py candidates --data DIR [--ids FILE] [--limit N] [--strategy graph]

evidence: for each residual weight / bridge bonus / sentences per note / diversity margin, how
many questions whose recall@5 is 1 have a gold answer in the three shown sentences (the order of
localrag.answer.evidence.with_residual, then order_evidence).
candidates: with the evidence's residual weight at 0 and at its default, the span questions whose
gold answer is the ranking's first / among the kept / anywhere.
abstain: for each setting of the two rules of localrag/answer/abstain.py (best evidence cosine
below abstain_below; or fewer than a share of the question's names with a note among those
found and the cosine below abstain_unnamed_below), the share of questions abstained on,
answerable and with every asked question's gold passages dropped from the corpus (the second index is built once,
in its own cache folder, as `bench --drop-gold` does).
"""

from __future__ import annotations

import argparse
import itertools
import sys
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from localrag.answer.evidence import (  # noqa: E402
    RESIDUAL_WEIGHT, EvidenceSentence, order_evidence, path_facts, rank_evidence, with_residual)
from localrag.answer import prior  # noqa: E402
from localrag.answer.abstain import check_evidence  # noqa: E402
from localrag.answer.shape import CHOICE, YESNO, classify  # noqa: E402
from localrag.text.stopwords import NGRAM_STOPWORDS  # noqa: E402
from localrag.api import Assistant  # noqa: E402
from localrag.config import AnswerSettings  # noqa: E402
from localrag.text.normalise import title_key  # noqa: E402
from localrag.text.spans import find_spans  # noqa: E402
from localrag.records import Passage  # noqa: E402
from localrag_bench.data import BenchDataError, Dataset, Question, load_dataset  # noqa: E402
from localrag_bench.notes_set import load_notes_dataset  # noqa: E402
from localrag_bench.metrics import exact_match, recall_at_k  # noqa: E402
from localrag_bench.runner import BenchSpec, RunOptions, gold_in_evidence, open_index  # noqa: E402


@dataclass
class Asked:
    question: Question
    passages: list[Passage]
    evidence: list[EvidenceSentence]  # by cosine, best first (their score: with the default residual weight)
    recall5: float | None


def retrieve_all(dataset: Dataset, strategy: str, drop_gold: bool) -> list[Asked]:
    spec = BenchSpec(dataset, [strategy], RunOptions(drop_gold=drop_gold))
    index, _, _ = open_index(spec, [strategy])
    try:
        assistant = Assistant(index)
        out = []
        for q in dataset.questions:
            retrieval = assistant.retrieve(q.question, strategy, 10)
            passages = [sp.passage for sp in retrieval.passages[:5]]
            ranked = sorted(rank_evidence(index.embedder, q.question, passages, facts=path_facts(retrieval)),
                            key=lambda e: -e.similarity)
            docs = list(dict.fromkeys(d for d in (dataset.doc_of(sp.passage.path) for sp in retrieval.passages)
                                      if d is not None))
            out.append(Asked(q, passages, ranked, recall_at_k(docs, q.gold_doc_ids, 5)))
        return out
    finally:
        index.close()


def _shown(question: str, ranked: list[EvidenceSentence], residual: float, bridge: float, per_note: int,
           within: float) -> list[str]:
    rescored = with_residual(question, ranked, residual)
    return [e.plain for e in order_evidence(question, rescored, bridge=bridge, per_note=per_note, within=within)[:3]]


def count_candidates(asked: list[Asked]) -> None:
    """Span questions whose gold answer is the ranking's first, among the kept choices, among all candidates."""
    settings = AnswerSettings()
    print("| evidence residual | span questions | gold first | among the kept | anywhere |")
    print("|---:|---:|---:|---:|---:|")
    for residual in [0.0, RESIDUAL_WEIGHT]:
        first = kept = anywhere = spans = 0
        for a in asked:
            shape = classify(a.question.question)
            if not shape.short or shape.qtype in (CHOICE, YESNO):
                continue
            spans += 1
            evidence = order_evidence(a.question.question, with_residual(a.question.question, a.evidence, residual))
            found = prior.candidates(a.question.question, evidence, span_sentences=settings.span_sentences,
                                     ngram_sentences=settings.ngram_sentences, max_ngram=settings.max_ngram,
                                     ngram_stop=NGRAM_STOPWORDS)
            texts = [c.text for c in prior.rank(a.question.question, shape, found, evidence)]
            hits = [bool(exact_match(t, a.question.answers)) for t in texts]
            first += bool(hits[:1] and hits[0])
            kept += any(hits[:settings.max_choices])
            anywhere += any(hits)
        print(f"| {residual:g} | {spans} | {first} | {kept} | {anywhere} |")


def sweep_evidence(asked: list[Asked]) -> None:
    full = [a for a in asked if a.recall5 == 1.0]
    print(f"{len(full)} of {len(asked)} questions have recall@5 = 1")
    print("| residual | bridge | per note | within | gold in the 3 shown (R@5 = 1) |\n|---:|---:|---:|---:|---:|")
    for residual, bridge, per_note, within in itertools.product([0.0, 0.1, 0.2, 0.3, 0.4, 0.5], [0.0, 0.3], [1, 2],
                                                                [0.1, 9.0]):
        hits = [gold_in_evidence(_shown(a.question.question, a.evidence, residual, bridge, per_note, within),
                                 a.question.answers) for a in full]
        scored = [h for h in hits if h is not None]
        print(f"| {residual:g} | {bridge:g} | {per_note} | {within:g} | {sum(scored)}/{len(scored)} = "
              f"{sum(scored) / max(len(scored), 1):.3f} |")


def sweep_abstain(answerable: list[Asked], dropped: list[Asked] | None) -> None:
    """Rule 1 (cosine < abstain_below) OR rule 2 (share of the question's names with a note below
    ``about``, and cosine < unnamed_below) of answer/abstain.py, replayed on both indexes."""
    print("| abstain_below | names with a note below | abstain_unnamed_below | answerable abstained | gold dropped abstained |")
    print("|---:|---:|---:|---:|---:|")
    for below, about, unnamed in itertools.product([0.35, 0.4, 0.45], [0.01, 0.5, 0.67],
                                                   [0.0, 0.55, 0.6, 0.65, 0.7, 0.75, 0.8, 1.0]):
        settings = AnswerSettings(abstain_below=below, abstain_unnamed_below=unnamed)

        def share(asked: list[Asked]) -> float:
            weak = [check_evidence(a.question.question, a.passages, max((e.similarity for e in a.evidence), default=None),
                                   settings, min_share_about=about).weak for a in asked]
            return sum(weak) / max(len(weak), 1)

        gone = "–" if dropped is None else f"{share(dropped):.2f}"
        print(f"| {below:g} | {about:g} | {unnamed:g} | {share(answerable):.2f} | {gone} |")


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("what", choices=("evidence", "abstain", "candidates"))
    ap.add_argument("--data", help="a benchmark set (corpus.jsonl, questions.jsonl)")
    ap.add_argument("--notes", help="or a notes folder, with --questions (abstain: answerable questions only)")
    ap.add_argument("--questions")
    ap.add_argument("--ids")
    ap.add_argument("--limit", type=int)
    ap.add_argument("--strategy", default="graph")
    args = ap.parse_args()
    if bool(args.data) == bool(args.notes) or bool(args.notes) != bool(args.questions):
        ap.error("give --data DIR, or --notes DIR with --questions FILE")
    try:
        dataset = (load_notes_dataset(args.notes, args.questions, args.ids, args.limit) if args.notes
                   else load_dataset(args.data, args.ids, args.limit))
    except BenchDataError as exc:
        ap.error(str(exc))
    asked = retrieve_all(dataset, args.strategy, drop_gold=False)
    if args.what == "evidence":
        sweep_evidence(asked)
    elif args.what == "candidates":
        count_candidates(asked)
    else:
        sweep_abstain(asked, None if args.notes else retrieve_all(dataset, args.strategy, drop_gold=True))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
