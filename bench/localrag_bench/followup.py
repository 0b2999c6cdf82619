"""Follow-up benchmark: two-turn conversations built from MuSiQue's question decompositions.

For a 2-hop question, turn 1 asks the first sub-question and turn 2 the second, with
``#1`` replaced by a referring word picked by the type of the turn-1 answer ("they" for
a person or group, "that place" for a place, "it" otherwise). Recall@k of the turn-2
gold paragraph is measured for (a) turn 2 alone, (b) turn 2 in the conversation (the
resolver's query, turn-1 answer = its gold answer, so only follow-up resolution is
measured), (c) the oracle (``#1`` replaced by the gold answer), and (d) turn 2 in the
conversation after the model's own turn-1 answer.

``run_session_check`` asks a set's questions one after another in one session against
asking each alone: self-contained questions must be left alone.
"""

from __future__ import annotations

import datetime as _dt
import json
import os
import re
import time
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any, Callable, Sequence

from localrag.api import Assistant, Index
from localrag_bench.data import Dataset, default_work_dir, doc_id_of
from localrag_bench.metrics import dedupe, mean, recall_at_k
from localrag_bench.runner import prepare_index
from localrag.conversation.records import Resolution
from localrag.records import Turn
from localrag.conversation.resolve import resolve_rules
from localrag.conversation.rewrite import resolve_llm

RESOLVERS = ("rules", "llm")
_PERSONISH = re.compile(r"\b(?:author|father|mother|spouse|child|sibling|director|producer|performer|composer|"
                        r"screenwriter|creator|lyrics by|founded by|founder|cast member|president|leader|singer|"
                        r"writer|actor|actress|player|king|queen)\b", re.I)
_PLACEISH = re.compile(r"\b(?:country|located|location|place of birth|place of death|birthplace|city|town|state|"
                       r"county|capital|headquarters|continent|body of water|territor|region|province|where|"
                       r"jurisdiction|licensed to broadcast to|mouth of the watercourse|shares border)\w*", re.I)
_FORMS = {"person": ("they", "them", "their"), "place": ("that place", "that place", "that place's"),
          "thing": ("it", "it", "its")}
_SUBJECT_BEFORE = re.compile(r"(?:^|\b(?:is|was|were|are|did|does|do|has|had|have|when|where|who|what|which|how|"
                             r"why|director|the)\s*)$", re.I)


@dataclass(frozen=True)
class FollowUp:
    id: str
    turn1: str
    turn1_answer: str  # gold
    turn2: str  # with the referring word
    oracle: str  # with the gold answer
    referring: str  # "it" | "they" | "that place"
    answer_type: str  # "person" | "place" | "thing"
    gold_doc: int  # the turn-2 gold paragraph
    turn1_gold_doc: int


def answer_type(turn1: str) -> str:
    """The kind of thing turn 1 asks for, from its wording alone (not from the resolver's rules)."""
    relation = turn1.split(">>", 1)[1] if ">>" in turn1 else ""
    if re.search(r"\bwho(?:m|se)?\b", turn1, re.I) or (relation and _PERSONISH.search(relation)):
        return "person"
    if _PLACEISH.search(relation or turn1):
        return "place"
    return "thing"


_KB_TEMPLATES = {
    "located in the administrative territorial entity": "Where is {x} located?",
    "location": "Where is {x} located?",
    "country": "What country is {x} in?",
    "place of birth": "Where was {x} born?",
    "place of death": "Where did {x} die?",
    "shares border with": "What borders {x}?",
    "located in or next to body of water": "What body of water is {x} next to?",
    "languages spoken, written or signed": "What language did {x} speak?",
    "instance of": "What kind of thing is {x}?",
    "member of sports team": "What team did {x} play for?",
    "country of citizenship": "What country is {x} a citizen of?",
    "employer": "Where did {x} work?",
    "educated at": "Where was {x} educated?",
    "spouse": "Who is the spouse of {x}?",
}


def render_kb(question: str) -> str:
    """MuSiQue's 'X >> relation' sub-questions as plain questions."""
    if ">>" not in question:
        return " ".join(question.split())
    subject, relation = (p.strip() for p in question.split(">>", 1))
    if relation in _KB_TEMPLATES:
        return _KB_TEMPLATES[relation].format(x=subject)
    if relation.endswith(" by"):
        return f"What is {subject} {relation}?"
    return f"What is the {relation} of {subject}?"


def _refer(text: str, kind: str) -> str:
    """``#1`` replaced by the referring word, in the grammatical form its position needs."""
    subject, obj, possessive = _FORMS[kind]

    def form(m: re.Match) -> str:
        if m.group(1):
            return possessive
        return subject if _SUBJECT_BEFORE.search(text[:m.start()]) else obj

    return re.sub(r"#1(\s*'s\b)?", form, text)


def build_followups(dataset: Dataset, raw_questions: dict[str, dict]) -> list[FollowUp]:
    """The set's 2-hop questions whose second sub-question refers to the first answer."""
    corpus = {p.doc_id: f"{p.title} {p.text}".lower() for p in dataset.corpus}
    out: list[FollowUp] = []
    for q in dataset.questions:
        steps = raw_questions.get(q.id, {}).get("question_decomposition") or []
        if len(steps) != 2 or "#1" not in steps[1]["question"] or len(q.gold_doc_ids) != 2:
            continue
        first, second = steps
        answer2 = str(second["answer"]).lower()
        holding = [d for d in q.gold_doc_ids if answer2 in corpus.get(d, "")]
        if len(holding) != 1:
            continue
        kind = answer_type(first["question"])
        template = render_kb(second["question"])
        turn2 = _refer(template, kind)
        oracle = template.replace("#1 's", f"{first['answer']}'s").replace("#1's", f"{first['answer']}'s")
        oracle = oracle.replace("#1", str(first["answer"]))
        other = next(d for d in q.gold_doc_ids if d != holding[0])
        out.append(FollowUp(q.id, render_kb(first["question"]), str(first["answer"]), " ".join(turn2.split()),
                            " ".join(oracle.split()), _FORMS[kind][0], kind, holding[0], other))
    return out


def read_raw_questions(folder: Path) -> dict[str, dict]:
    rows = {}
    with (folder / "questions.jsonl").open(encoding="utf-8") as fh:
        for line in fh:
            if line.strip():
                row = json.loads(line)
                rows[str(row["id"])] = row
    return rows


@dataclass
class FollowUpRecord:
    id: str
    answer_type: str
    turn1: str
    turn2: str
    oracle: str
    queries: dict[str, str] = field(default_factory=dict)  # condition -> what was searched for
    methods: dict[str, str] = field(default_factory=dict)  # condition -> resolver method used
    recall: dict[str, dict[str, float]] = field(default_factory=dict)  # condition -> {"2": r, "5": r}
    own_answer: str = ""
    rewrite_calls: int = 0
    rewrite_tokens: int = 0
    error: str = ""


@dataclass
class FollowUpResult:
    dataset: str
    strategy: str
    resolver: str
    model: str
    conversations: int
    command: str
    created: str
    means: dict[str, dict[str, float]]
    load: list[float]
    seconds: float
    cpu_seconds: float
    records: list[FollowUpRecord]
    notes: list[str] = field(default_factory=list)

    def write(self, path: Path) -> None:
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(json.dumps(asdict(self), indent=1, ensure_ascii=False) + "\n", encoding="utf-8")


Retriever = Callable[[str], list[int]]
KS = (2, 5)


def _retriever(assistant: Assistant, strategy: str, depth: int) -> Retriever:
    def ranked(query: str) -> list[int]:
        retrieval = assistant.retrieve(query, strategy, depth)
        return dedupe(doc_id_of(sp.passage.path) for sp in retrieval.passages)
    return ranked


def _recall(ranked: Sequence[int], gold: int) -> dict[str, float]:
    return {str(k): float(recall_at_k(ranked, [gold], k) or 0.0) for k in KS}


def _resolve(resolver: str, question: str, history: list[Turn], assistant: Assistant) -> Resolution:
    if resolver == "llm":
        return resolve_llm(question, history, assistant.llm(), assistant.index.store.cache)
    return resolve_rules(question, history)


def own_turn1_answer(assistant: Assistant, question: str, strategy: str, depth: int) -> str:
    """The model's own chat answer to turn 1 (the normal answer prompt, as in a session)."""
    return assistant.ask(question, strategy=strategy, k=depth).text


def run_followup(assistant: Assistant, followups: Sequence[FollowUp], *, strategy: str = "hybrid",
                 resolver: str = "rules", own_answer: bool = False, depth: int = 10,
                 on_record: Callable[[FollowUpRecord], None] | None = None) -> list[FollowUpRecord]:
    ranked = _retriever(assistant, strategy, depth)
    records = []
    for f in followups:
        rec = FollowUpRecord(f.id, f.answer_type, f.turn1, f.turn2, f.oracle)
        try:
            _measure(rec, f, assistant, ranked, resolver, own_answer, strategy, depth)
        except Exception as exc:  # one failure is recorded, never the end of the run
            rec.error = f"{type(exc).__name__}: {exc}"[:300]
        records.append(rec)
        if on_record is not None:
            on_record(rec)
    return records


def _measure(rec: FollowUpRecord, f: FollowUp, assistant: Assistant, ranked: Retriever, resolver: str,
             own_answer: bool, strategy: str, depth: int) -> None:
    calls_before = _rewrite_calls(assistant)
    conditions: dict[str, tuple[str, str]] = {"alone": (f.turn2, "unchanged"), "oracle": (f.oracle, "oracle")}
    gold_turn = Turn(0, 1, f.turn1, f.turn1, f.turn1_answer)
    r = _resolve(resolver, f.turn2, [gold_turn], assistant)
    conditions["conversation"] = (r.query, r.method)
    if own_answer:
        rec.own_answer = own_turn1_answer(assistant, f.turn1, strategy, depth)
        own = _resolve(resolver, f.turn2, [Turn(0, 1, f.turn1, f.turn1, rec.own_answer)], assistant)
        conditions["own_answer"] = (own.query, own.method)
    for name, (query, method) in conditions.items():
        rec.queries[name] = query
        rec.methods[name] = method
        rec.recall[name] = _recall(ranked(query), f.gold_doc)
    calls = _rewrite_calls(assistant)[len(calls_before):] if resolver == "llm" else []
    rec.rewrite_calls = len(calls)
    rec.rewrite_tokens = sum(c for c in calls)


def _rewrite_calls(assistant: Assistant) -> list[int]:
    """Token totals of the rewrite calls logged so far (from the index's call log)."""
    return assistant.index.store.calls.tokens_of_phase("rewrite")


def summarise(records: Sequence[FollowUpRecord]) -> dict[str, dict[str, float]]:
    ok = [r for r in records if not r.error]
    names = sorted({n for r in ok for n in r.recall})
    return {n: {k: round(mean([r.recall[n][k] for r in ok if n in r.recall]) or 0.0, 4) for k in map(str, KS)}
            for n in names}


# -- the long-session check ----------------------------------------------------------------

@dataclass
class SessionCheck:
    dataset: str
    strategy: str
    resolver: str
    questions: int
    changed: int  # questions the resolver rewrote in the session
    separate: dict[str, float]
    session: dict[str, float]
    changed_questions: list[dict[str, str]]
    command: str
    created: str
    load: list[float]


def run_session_check(assistant: Assistant, dataset: Dataset, *, strategy: str = "hybrid",
                      resolver: str = "rules", depth: int = 10) -> SessionCheck:
    """Every question alone vs all of them in one session (each earlier turn answered with its gold answer)."""
    ranked = _retriever(assistant, strategy, depth)
    separate: dict[str, list[float]] = {str(k): [] for k in KS}
    session: dict[str, list[float]] = {str(k): [] for k in KS}
    history: list[Turn] = []
    changed: list[dict[str, str]] = []
    for i, q in enumerate(dataset.questions):
        alone = ranked(q.question)
        r = _resolve(resolver, q.question, history[-6:], assistant)
        rewritten = r.query.strip() != q.question.strip()
        in_session = ranked(r.query) if rewritten else alone
        if rewritten:
            changed.append({"id": q.id, "question": q.question, "searched_for": r.query})
        for k in KS:
            separate[str(k)].append(float(recall_at_k(alone, q.gold_doc_ids, k) or 0.0))
            session[str(k)].append(float(recall_at_k(in_session, q.gold_doc_ids, k) or 0.0))
        history.append(Turn(0, i + 1, q.question, r.query, q.answers[0] if q.answers else ""))
    return SessionCheck(dataset.name, strategy, resolver, len(dataset.questions), len(changed),
                        {k: round(mean(v) or 0.0, 4) for k, v in separate.items()},
                        {k: round(mean(v) or 0.0, 4) for k, v in session.items()}, changed, "", _now(),
                        [round(x, 2) for x in os.getloadavg()])


def _now() -> str:
    return _dt.datetime.now(_dt.timezone.utc).isoformat(timespec="seconds")


def open_bench_index(dataset: Dataset, work: Path | None, overrides: dict[str, Any]) -> Index:
    """The data set's notes and index, in a work folder of this benchmark's own: conversations write
    sessions into the index, so the plain benchmark's shared cache is left as it is."""
    base = default_work_dir(dataset)
    work_dir = (work or base.with_name(f"followup-{base.name}")).expanduser().resolve()
    index, _ = prepare_index(dataset, work_dir, overrides)
    return index


def run_followup_bench(dataset: Dataset, *, work: Path | None = None, overrides: dict[str, Any] | None = None,
                       strategy: str = "hybrid", resolver: str = "rules", own_answer: bool = False,
                       command: str = "", on_record: Callable[[FollowUpRecord], None] | None = None
                       ) -> FollowUpResult:
    raw = read_raw_questions(dataset.folder)
    followups = build_followups(dataset, raw)
    if not followups:
        raise ValueError(f"{dataset.folder} has no 2-hop questions with a question_decomposition (MuSiQue)")
    started, cpu = time.perf_counter(), time.process_time()
    index = open_bench_index(dataset, work, overrides or {})
    try:
        assistant = Assistant(index)
        records = run_followup(assistant, followups, strategy=strategy, resolver=resolver, own_answer=own_answer,
                               on_record=on_record)
        model = assistant.llm().model_id if (resolver == "llm" or own_answer) else ""
    finally:
        index.close()
    notes = [f"{sum(1 for r in records if r.error)} conversation(s) failed"] if any(r.error for r in records) else []
    return FollowUpResult(dataset.name, strategy, resolver, model, len(records), command, _now(), summarise(records),
                          [round(x, 2) for x in os.getloadavg()], round(time.perf_counter() - started, 1),
                          round(time.process_time() - cpu, 1), records, notes)


def run_session_bench(dataset: Dataset, *, work: Path | None = None, overrides: dict[str, Any] | None = None,
                      strategy: str = "hybrid", resolver: str = "rules", command: str = "") -> SessionCheck:
    index = open_bench_index(dataset, work, overrides or {})
    try:
        check = run_session_check(Assistant(index), dataset, strategy=strategy, resolver=resolver)
    finally:
        index.close()
    check.command = command
    return check
