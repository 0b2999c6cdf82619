"""From retrieved passages to what the user sees: evidence first, then an answer by question shape.

1. evidence: the best sentences of the top passages (no LLM), sent as an event at once;
2. weak evidence (answer/abstain.py: a best sentence below ``answer.abstain_below``, or below
   ``answer.abstain_unnamed_below`` with no note about the things the question names): "not in
   your notes", no model call;
3. short questions: the model picks one of the candidate spans (grammar / guided decoding);
4. open questions (or ``answer.mode = "free"``): free text with citations, unsupported
   sentences listed.
"""

from __future__ import annotations

import re
import time
from dataclasses import dataclass, field
from typing import Callable, Sequence

from localrag.answer import (
    ABSTAIN_TEXT, Citation, build_citations, checked_reply, prompt_passages,
)
from localrag.answer.abstain import MentionCount, WordsStarting, check_evidence
from localrag.answer.compare import NoteLookup
from localrag.answer.evidence import (EvidenceSentence, favour_specific, path_facts, prefer_language, rank_evidence,
                                     split_units)
from localrag.answer.injection import followed_instruction, without_instructions
from localrag.answer.events import AnswerStarted, AskEvent, EvidenceReady, FirstToken
from localrag.answer.shape import CHOICE, OPEN, YESNO, Shape, classify
from localrag.answer.spans import NOT_IN_NOTES, Choices, build_choices, sentence_for, with_copied_spans
from localrag.config import AnswerSettings
from localrag.embed import Embedder
from localrag.llm.base import LLM, LLMError, Message, TokenSink
from localrag.llm.prompts import PromptPassage, answer_messages, copy_answer_messages, short_span_messages
from localrag.llm.prompts_chat import question_with_resolution, with_history
from localrag.text.spans import clean_markup
from localrag.language import is_english
from localrag.records import Passage, Retrieval
from localrag.text.sentences import ANSWER_SENTENCE_END

NoteLinks = Callable[[str, str], list[Passage]]  # a sentence and its note's path -> the passages of the notes it links to

SHORT_MAX_TOKENS = 48
_CITE = re.compile(r"\[(\d{1,3})\]")


@dataclass
class Composed:
    text: str
    citations: list[Citation]
    evidence: list[EvidenceSentence]
    shape: Shape
    mode: str  # "short" | "open" | "free"
    notes: list[str] = field(default_factory=list)
    span: str = ""  # the short answer as the grammar admitted it
    span_sentence: EvidenceSentence | None = None
    abstained: bool = False
    abstain_reason: str = ""
    choices: Choices | None = None
    unsupported: list[str] = field(default_factory=list)
    decided: str = ""  # how the notes' dates decided a comparison without the model ("" = not decided so)
    picked_by: str = ""  # a short answer's: "dates" | "ranking" (no model call) | "model"
    overridden: str = ""  # the reply replaced because it followed an instruction found in the notes
    evidence_ms: float = 0.0  # since the question was asked
    first_token_ms: float | None = None
    answer_ms: float = 0.0  # the answer step alone (model call included)


class _FirstToken:
    """Wraps the token sink: notes when the first token arrives and tells the event sink once."""

    def __init__(self, sink: TokenSink | None, emit: Callable[[AskEvent], None], since: float):
        self.sink, self.emit, self.since = sink, emit, since
        self.ms: float | None = None

    def __call__(self, token: str) -> None:
        if self.ms is None and token:
            self.ms = (time.perf_counter() - self.since) * 1000
            self.emit(FirstToken(elapsed_s=self.ms / 1000))
        if self.sink is not None:
            self.sink(token)


def unsupported_sentences(text: str, limit: int) -> list[str]:
    """Sentences of an open answer that carry no valid [n] citation."""
    out = []
    for sentence in ANSWER_SENTENCE_END.split(text.strip()):
        valid = [int(n) for n in _CITE.findall(sentence) if 1 <= int(n) <= limit]
        if sentence.strip() and not valid:
            out.append(sentence.strip())
    return out


def compose(llm_factory: Callable[[], LLM], embedder: Embedder, question: str, retrieval: Retrieval,
            settings: AnswerSettings, *, n_passages: int, max_tokens: int, since: float,
            emit: Callable[[AskEvent], None], mode: str | None = None, short_prompt: bool = False,
            on_token: TokenSink | None = None, history: Sequence[Message] = (),
            lookup: NoteLookup | None = None, links: NoteLinks | None = None,
            mentions: MentionCount | None = None, words_starting: WordsStarting | None = None,
            asked_as: str = "") -> Composed:
    """The answer for ``question`` (``since``: perf_counter when it was asked, for elapsed times;
    ``asked_as``: the words the user asked when ``question`` is what a follow-up was resolved to: the
    model reads both, the rules (evidence, shape, candidates) only the resolved question;
    ``history``: earlier turns of a conversation, placed before the passages of an open answer;
    ``lookup``: a note by its title, for the notes a comparison question names; ``links``: the
    passages of the notes a sentence links to; ``mentions``: how many passages of the folder say a name;
    ``words_starting``: the folder's words that start with a prefix, to tell a misspelt name)."""
    passages = [sp.passage for sp in retrieval.passages[:n_passages]]
    prompt_question = question_with_resolution(asked_as, question) if asked_as else question
    facts = path_facts(retrieval)
    # which notes' links are followed, and whether a linked note joins, is decided on closeness to the
    # question alone: a year in the best sentence must not bring in the notes it links to
    evidence = rank_evidence(embedder, question, passages, facts=facts)
    linked = _linked(passages, evidence, links) if links is not None else []
    if linked:
        with_linked = rank_evidence(embedder, question, passages + linked, facts=facts)
        if _closer(with_linked, evidence):
            passages, evidence = passages + linked, with_linked
    evidence = favour_specific(question, prefer_language(question, evidence, settings.evidence_other_language),
                               settings.evidence_specific)
    evidence_ms = (time.perf_counter() - since) * 1000
    english = is_english(question)
    check = check_evidence(question, passages, max((e.similarity for e in evidence), default=None), settings,
                           common=mentions, english=english, starting=words_starting)
    emit(EvidenceReady(elapsed_s=evidence_ms / 1000, weak=check.weak,
                       quotes=tuple(f"{e.location}  {e.text}" for e in evidence[:settings.evidence_shown])))
    # the shapes, spans and comparisons are English rules: another language's question is quoted an answer
    shape = classify(question) if english else Shape("open", OPEN)
    mode = mode or settings.mode
    kind = "free" if mode == "free" else ("short" if shape.short else "open")
    started = time.perf_counter()
    out = Composed("", [], evidence, shape, kind, evidence_ms=evidence_ms)
    if not english:
        out.notes.append("answer: the question is not in English, and the answer rules are: the evidence "
                         "that answers is quoted")
    if check.weak and mode != "free":
        _abstain(out, passages, check.reason)
    elif (settings.writer == "quote" or not english) and mode != "free":
        first = _FirstToken(on_token, emit, since)
        _quote(out, question, settings, passages, first, emit, since, lookup)
        out.first_token_ms = first.ms
    else:
        first = _FirstToken(on_token, emit, since)
        if kind == "short":
            _short(out, llm_factory, question, prompt_question, settings, passages, first, emit, since, lookup)
        else:
            llm = llm_factory()
            emit(AnswerStarted(elapsed_s=time.perf_counter() - since, shape=kind, choices=0))
            given = prompt_passages(retrieval, n_passages)
            reply = llm.chat(with_history(answer_messages(prompt_question, given, short=short_prompt), history), max_tokens=max_tokens,
                             phase="answer", on_token=first)
            out.text, out.notes = checked_reply(reply.text, reply.finish_reason, max_tokens, len(given))
            out.citations = build_citations(out.text if out.text.strip() else "", passages)
            if kind == "open":
                out.unsupported = unsupported_sentences(out.text, len(given))
        out.first_token_ms = first.ms
    _unless_it_obeyed(out, question, passages)
    out.answer_ms = (time.perf_counter() - started) * 1000
    return out


LINKS_FOLLOWED_FROM = 3  # the best evidence units whose links bring their notes into the evidence
LINKED_PASSAGES = 6  # at most this many passages of linked notes join it


def _linked(passages: list[Passage], evidence: Sequence[EvidenceSentence], links: NoteLinks) -> list[Passage]:
    """The passages of the notes the best evidence links to, not given already.

    A note answers through its links ("the signature bake is the [rye and plum loaf](rye-and-plum-loaf.md)"):
    the sentence that names the next note is the best evidence, and what the question asks is in the
    note it links to, which retrieval ranks low because the question never names it.
    """
    given = {p.id for p in passages}
    out: list[Passage] = []
    for e in evidence[:LINKS_FOLLOWED_FROM]:
        for p in links(e.text, e.passage.path):
            if p.id not in given and len(out) < LINKED_PASSAGES:
                given.add(p.id)
                out.append(p)
    return out


def _closer(with_linked: Sequence[EvidenceSentence], given: Sequence[EvidenceSentence]) -> bool:
    """Whether a linked note holds the best evidence: its unit ranks first and is closer to the question
    (cosine) than the given passages' first. Only then does it join, so a note that is merely linked
    never pushes the given passages' best down."""
    if not with_linked or not given:
        return bool(with_linked)
    top = with_linked[0]
    return top.passage.id not in {e.passage.id for e in given} and top.similarity > given[0].similarity


def _unless_it_obeyed(out: Composed, question: str, passages: list) -> None:
    """A reply that follows an instruction found in the passages (answer/injection.py) instead of
    answering is replaced by the best evidence that is no instruction: notes are data."""
    if out.abstained or out.picked_by in ("quote", "dates"):
        return
    followed = followed_instruction(out.text, question, passages)
    if followed is None:
        return
    out.overridden = out.text
    out.notes.append(f"answer: the model's reply followed an instruction in passage [{followed.number}] "
                     f"({' '.join(followed.instruction.split())[:80]!r}); the evidence is quoted instead")
    out.evidence = without_instructions(out.evidence)
    out.unsupported, out.picked_by = [], "quote"
    if not out.evidence:
        _abstain(out, passages, "the passages hold instructions to the model, and no other evidence")
        return
    _cite_sentence(out, "", out.evidence[0], passages)


def _abstain(out: Composed, passages: list, reason: str) -> None:
    out.abstained, out.abstain_reason = True, reason
    out.text = ABSTAIN_TEXT
    out.span = NOT_IN_NOTES if out.mode == "short" else ""
    out.citations = [Citation(i, p, cited=False) for i, p in enumerate(passages, start=1)]


def _choices(question: str, out: Composed, settings: AnswerSettings, passages: list, lookup: NoteLookup | None,
             offer_abstain: bool) -> Choices:
    return build_choices(question, out.shape, out.evidence, passages, lookup, span_sentences=settings.span_sentences,
                         ngram_sentences=settings.ngram_sentences, max_ngram=settings.max_ngram,
                         max_choices=settings.max_choices, offer_abstain=offer_abstain)


def _decided_or_unknown(out: Composed, choices: Choices, settings: AnswerSettings, passages: list,
                        first: _FirstToken) -> bool:
    """A comparison the notes' dates decide is answered from them; one whose options no note knows
    abstains. True when either settled the answer."""
    if choices.decision is not None and settings.decide_comparisons:
        decision = choices.decision
        first(decision.answer)
        out.decided, out.picked_by = decision.detail, "dates"
        out.notes.append(f"answer: decided from the notes without the model ({decision.detail})")
        _give(out, decision.answer, choices, passages, decision.passage)
        return True
    if choices.unknown_options and settings.offer_abstain:
        _abstain(out, passages, "the notes mention none of the options the question names")
        return True
    return False


def _quote(out: Composed, question: str, settings: AnswerSettings, passages: list, first: _FirstToken,
           emit: Callable[[AskEvent], None], since: float, lookup: NoteLookup | None) -> None:
    """``answer.writer = quote``: the answer is the best evidence unit (a sentence, a list item with
    its code line, a table row), quoted with its citation; for a short question the best-ranked
    candidate span inside it is marked as the short answer. No model call: what is shown is what
    the note says."""
    choices = _choices(question, out, settings, passages, lookup, offer_abstain=False) if out.mode == "short" else None
    out.choices = choices
    if choices is not None and _decided_or_unknown(out, choices, settings, passages, first):
        return
    emit(AnswerStarted(elapsed_s=time.perf_counter() - since, shape="quote", choices=len(choices or ())))
    # notes are data: a unit that holds an instruction to the model is evidence, never the answer
    best, span = _answering_unit(without_instructions(out.evidence)[:settings.evidence_shown], choices)
    if best is None:
        _abstain(out, passages, "no sentence of the passages to quote" if not out.evidence
                 else "the passages hold instructions to the model, and no other evidence")
        return
    first(span or best.plain)
    out.picked_by = "quote"
    out.notes.append("answer: the evidence that answers, quoted from the note (answer.writer = quote)")
    _cite_sentence(out, span, best, passages)


MARKED_CANDIDATES = 3  # only the ranking's best candidates are marked: its tail holds words like "still"


def _answering_unit(shown: Sequence[EvidenceSentence], choices: Choices | None) -> tuple[EvidenceSentence | None, str]:
    """The shown unit to quote and the span marked in it: for a short question the first shown unit
    that says one of the best-ranked candidates, taken in their order ("- The rye and plum loaf,
    obviously." restates the question; the next unit says cardamom); else the best unit, unmarked."""
    if not shown:
        return None, ""
    best = [t for t in (choices.texts if choices is not None else ()) if t not in (NOT_IN_NOTES, "yes", "no")]
    for text in best[:MARKED_CANDIDATES]:
        for unit in shown:
            if _says(unit, text):
                return unit, text
    return shown[0], ""


def _says(sentence: EvidenceSentence, text: str) -> bool:
    """Whether the unit says ``text``: between spaces, inside a word when longer than 3 characters, and a
    number also before punctuation ("976" in "created in 976."). Short words and letters are not looked
    for beside punctuation: "c" of "c. 1400" and "ANU" of "(ANU)" were marked before better candidates."""
    said = f" {' '.join(sentence.plain.lower().split())} "
    wanted = " ".join(text.lower().split())
    if f" {wanted} " in said or (len(wanted) > 3 and wanted in said):
        return True
    return wanted.isdigit() and re.search(rf"(?<!\w){wanted}(?!\w)", said) is not None


def _short(out: Composed, llm_factory: Callable[[], LLM], question: str, prompt_question: str,
           settings: AnswerSettings, passages: list, first: _FirstToken, emit: Callable[[AskEvent], None],
           since: float, lookup: NoteLookup | None) -> None:
    evidence = out.evidence
    # a likelihood pick never offers "not in your notes": SmolLM2 found it likeliest for 26 of 42 HotpotQA
    # span questions; the no-model rules abstain instead (docs/benchmarks.md "Answers: who picks the
    # short answer")
    choices = _choices(question, out, settings, passages, lookup,
                       offer_abstain=settings.offer_abstain and settings.pick != "likelihood")
    copying = settings.pick == "copy" and out.shape.qtype not in (YESNO, CHOICE)
    if copying:
        choices = with_copied_spans(choices, evidence, settings.copy_max_words)
    out.choices = choices
    emit(AnswerStarted(elapsed_s=time.perf_counter() - since, shape="short", choices=len(choices)))
    if _decided_or_unknown(out, choices, settings, passages, first):
        return
    ranked = [t for t in choices.texts if t != NOT_IN_NOTES]
    if settings.pick == "ranking":
        # answer.pick = ranking, or a model under answer.pick_min_params: no call
        # (docs/benchmarks.md "Answers: who picks the short answer")
        if not ranked:
            _abstain(out, passages, "no candidate span in the evidence")
            return
        first(ranked[0])
        out.picked_by = "ranking"
        out.notes.append("answer: the best-ranked span of the evidence, without the model (answer.pick)")
        _give(out, ranked[0], choices, passages)
        return
    _model_answer(out, llm_factory, prompt_question, settings, passages, choices, ranked, first, copying)


def _model_answer(out: Composed, llm_factory: Callable[[], LLM], question: str, settings: AnswerSettings,
                  passages: list, choices: Choices, ranked: list[str], first: _FirstToken, copying: bool) -> None:
    """The model's short answer under the constraint: its pick among the ranked spans and the
    quoted sentences, or (``copying``) its own words after reading the passages."""
    if copying:  # answer.pick = copy: the model's own words, each a word of the passages it reads
        messages = copy_answer_messages(question, [PromptPassage(i, p.location, p.title, p.text)
                                                   for i, p in enumerate(passages, start=1)])
        out.notes.append(f"answer: written by the model in the passages' words, a run of up to "
                         f"{settings.copy_max_words} (answer.pick = copy)")
    else:
        quotes = [e.plain for e in out.evidence[:settings.prompt_sentences]]
        messages = short_span_messages(question, quotes, ranked)
    out.picked_by = "model"
    llm = llm_factory()
    pick = _likeliest(out, llm, question, settings, choices) if settings.pick == "likelihood" else None
    if pick is not None:
        first(pick)
    else:
        reply = llm.chat(messages, choices=list(choices.texts), max_tokens=SHORT_MAX_TOKENS, phase="answer",
                         on_token=first)
        pick = _match_choice(reply.text, choices)
    if pick is None:
        out.notes.append(f"answer: the model's reply {reply.text.strip()[:60]!r} is none of the {len(choices)} "
                         "allowed spans (the server may ignore the constraint); shown as not in your notes")
        pick = NOT_IN_NOTES
    if pick == NOT_IN_NOTES:
        _abstain(out, passages, "the model chose 'not in your notes'")
        return
    _give(out, pick, choices, passages)


def _likeliest(out: Composed, llm: LLM, question: str, settings: AnswerSettings, choices: Choices) -> str | None:
    """``answer.pick = likelihood``: of the allowed answers, the one the model finds likeliest as its
    whole reply to the quoted sentences and the question (no list of candidates in the prompt: with one,
    SmolLM2 rarely chose the right span); None when the backend cannot score replies (a server)."""
    score = getattr(llm, "score_replies", None)  # RecordingLLM has it; None inside when a server cannot
    quotes = [e.plain for e in out.evidence[:settings.prompt_sentences]]
    try:
        scored = score(short_span_messages(question, quotes), list(choices.texts)) if score else None
    except LLMError as exc:
        out.notes.append(f"answer: the model could not score the {len(choices)} allowed answers ({exc}); "
                         "it picks under the grammar instead")
        return None
    if scored is None:
        out.notes.append("answer: this backend cannot score replies; the model picks under the grammar instead")
        return None
    best = max(range(len(choices.texts)), key=lambda i: scored.logprobs[i])  # ties: the ranking's order
    out.notes.append(f"answer: the model's likeliest of {len(choices)} allowed answers (answer.pick = likelihood)")
    return choices.texts[best]


def _give(out: Composed, pick: str, choices: Choices, passages: list, decided_by: Passage | None = None) -> None:
    """The short answer, its sentence and its citation (the deciding note is cited even if not retrieved)."""
    evidence = out.evidence
    if decided_by is None:
        sentence = sentence_for(pick, choices, evidence)
    else:
        sentence = next((e for e in evidence if e.passage.id == decided_by.id), None) or _opening(decided_by)
    _cite_sentence(out, pick, sentence, passages)


def _cite_sentence(out: Composed, pick: str, sentence: EvidenceSentence | None, passages: list) -> None:
    """``pick`` as the answer, ``sentence`` shown with it and cited first (added to the given passages
    when it comes from a note that was not retrieved). An empty pick: the sentence itself is the answer."""
    out.span = pick
    out.span_sentence = sentence
    given = list(passages)
    if sentence is not None and all(p.id != sentence.passage.id for p in given):
        given.append(sentence.passage)
    number = next((i for i, p in enumerate(given, start=1) if sentence is not None and p.id == sentence.passage.id),
                  None)
    head = pick or (f"“{' '.join(sentence.text.split())}”" if sentence is not None else "")
    out.text = f"{head} [{number}]" if number else head
    first_ids = [number] if number else []
    out.citations = [Citation(n, given[n - 1], n in first_ids)
                     for n in first_ids + [i for i in range(1, len(given) + 1) if i not in first_ids]]


def _opening(passage: Passage) -> EvidenceSentence | None:
    """The first sentence-like unit of a note that decided an answer but was not among the retrieved."""
    units = [u for u in split_units(passage.text) if u.kind != "heading"]
    if not units:
        return None
    unit = units[0]
    return EvidenceSentence(unit.text, " ".join(clean_markup(unit.text).split()), passage, 0,
                            passage.start_line + unit.line_offset, unit.kind, 0.0)


def _match_choice(text: str, choices: Choices) -> str | None:
    """The choice a reply is: exact, else the same words ignoring case and outer punctuation."""
    reply = " ".join(text.split()).strip()
    if reply in choices:
        return reply
    if reply.startswith("{") and '"answer"' in reply:  # a server that sent the JSON wrapper as text
        m = re.search(r'"answer"\s*:\s*"((?:[^"\\]|\\.)*)"', reply)
        reply = m.group(1) if m else reply
    key = reply.lower().strip(" .,;:!?\"'")
    return next((c for c in choices.texts if c.lower() == key), None)
