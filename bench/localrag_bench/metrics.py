"""Retrieval and answer metrics, computed as HippoRAG 2 / NeuroPath compute them.

- recall@k = |gold doc ids ∩ top-k retrieved doc ids| / |gold doc ids|, where the
  retrieved list is first deduplicated in rank order (a document split into several
  passages counts once, at its best rank);
- EM / F1 with SQuAD normalisation (lowercase, strip punctuation and articles,
  collapse spaces), the maximum over the gold answer and its aliases. As in the
  HotpotQA evaluator, a yes/no/noanswer prediction or gold scores F1 = 0 unless the
  two are equal.
"""

from __future__ import annotations

import re
import string
from collections import Counter
from typing import Iterable, Sequence, TypeVar

import numpy as np

T = TypeVar("T")

_ARTICLES = re.compile(r"\b(a|an|the)\b", re.UNICODE)
_PUNCT = set(string.punctuation)
_SPECIAL = {"yes", "no", "noanswer"}


def dedupe(ranked: Iterable[T | None]) -> list[T]:
    """Items in first-seen order; ``None`` (a passage from no known document) is dropped."""
    seen: set = set()
    out: list[T] = []
    for item in ranked:
        if item is None or item in seen:
            continue
        seen.add(item)
        out.append(item)
    return out


def recall_at_k(retrieved: Sequence[int], gold: Iterable[int], k: int) -> float | None:
    """Share of gold ids among the first ``k`` distinct retrieved ids; None when there is no gold."""
    gold_set = set(gold)
    if not gold_set:
        return None
    top = set(dedupe(retrieved)[:k])
    return len(gold_set & top) / len(gold_set)


def normalize_answer(text: str) -> str:
    text = text.lower()
    text = "".join(ch for ch in text if ch not in _PUNCT)
    text = _ARTICLES.sub(" ", text)
    return " ".join(text.split())


def _em_one(prediction: str, gold: str) -> float:
    return float(normalize_answer(prediction) == normalize_answer(gold))


def _f1_one(prediction: str, gold: str) -> float:
    pred_norm, gold_norm = normalize_answer(prediction), normalize_answer(gold)
    if (pred_norm in _SPECIAL or gold_norm in _SPECIAL) and pred_norm != gold_norm:
        return 0.0
    pred_tokens, gold_tokens = pred_norm.split(), gold_norm.split()
    common = Counter(pred_tokens) & Counter(gold_tokens)
    same = sum(common.values())
    if same == 0:
        return 0.0
    precision = same / len(pred_tokens)
    recall = same / len(gold_tokens)
    return 2 * precision * recall / (precision + recall)


def exact_match(prediction: str, answers: Sequence[str]) -> float:
    return max((_em_one(prediction, a) for a in answers), default=0.0)


def f1_score(prediction: str, answers: Sequence[str]) -> float:
    return max((_f1_one(prediction, a) for a in answers), default=0.0)


def mean(values: Iterable[float | None]) -> float | None:
    """Mean of the values that are not None (None when there are none)."""
    kept = [v for v in values if v is not None]
    return sum(kept) / len(kept) if kept else None


def percentile(values: Sequence[float], q: float) -> float:
    """The q-th percentile (0-100, linear interpolation); 0.0 for no values."""
    if not values:
        return 0.0
    return float(np.percentile(np.asarray(values, dtype=np.float64), q))
