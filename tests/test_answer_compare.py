"""Comparison questions decided from the notes' own dates and nationalities, without a model;
and the no-model ranking of candidate spans (localrag/answer/compare.py, prior.py)."""

from __future__ import annotations

from pathlib import Path

import pytest
from scripted_llm import ScriptedLLM

from localrag.answer.compare import decide_choice, decide_same, life_date, nationality, person_of, work_date
from localrag.answer import prior
from localrag.answer.evidence import RESIDUAL_WEIGHT, EvidenceSentence, order_evidence, with_residual
from localrag.answer.prior import head_noun, question_type
from localrag.answer.record import answer_record
from localrag.answer.shape import classify
from localrag.answer.spans import build_choices
from localrag.text.stopwords import NGRAM_STOPWORDS
from localrag.api import Assistant, Index
from localrag.records import Passage


def _note(pid: int, title: str, body: str) -> Passage:
    text = f"# {title}\n\n{body}"
    return Passage(pid, pid, f"{pid}.md", title, 0, title, text, "sha", 1, 1 + text.count("\n"))


PIPER = _note(1, "The Piper", "The Piper is a 1937 British drama film directed by Ann Vale.")
HORIZON = _note(2, "Lost Horizon (1941 film)", "Lost Horizon is a 1941 American film directed by Bo Marsh.")
VALE = _note(3, "Ann Vale", "Ann Vale (16 March 1890 – 19 October 1975) was an English film director.")
MARSH = _note(4, "Bo Marsh (director)", "Bo Marsh (born 2 May 1901, died 1950) was an American director.")
NOTES = [PIPER, HORIZON, VALE, MARSH]


def _lookup(name: str) -> Passage | None:
    return next((p for p in NOTES if p.title.lower() == name.lower() or p.title.lower().startswith(name.lower() + " (")),
                None)


def test_dates_of_a_person_and_of_a_work():
    assert life_date(VALE.text, "birth") == (1890, 3, 16) and life_date(VALE.text, "death") == (1975, 10, 19)
    assert life_date(MARSH.text, "birth") == (1901, 5, 2) and life_date(MARSH.text, "death") == (1950, 0, 0)
    initial = "Dukkipati Rao, also D. Rao (27 July 1917 – 26 March 2006) was a producer."
    assert life_date(initial, "death") == (2006, 3, 26), "an initial 'D.' is not 'died'"
    assert work_date(PIPER.text) == (1937, 0, 0)


def test_a_work_comparison_is_decided_by_its_year():
    shape = classify("Which film came out earlier, The Piper or Lost Horizon (1941 Film)?")
    decision = decide_choice("Which film came out earlier, The Piper or Lost Horizon (1941 Film)?", shape.options,
                             [HORIZON, PIPER])
    assert decision is not None and decision.answer == "The Piper" and decision.passage is PIPER
    later = decide_choice("Which film came out later, The Piper or Lost Horizon (1941 Film)?", shape.options,
                          [HORIZON, PIPER])
    assert later is not None and later.answer == "Lost Horizon (1941 Film)"


def test_a_person_comparison_reads_the_note_of_the_person_the_work_names():
    question = "Which film has the director who died first, The Piper or Lost Horizon?"
    options = classify(question).options
    assert decide_choice(question, options, [PIPER, HORIZON]) is None, "the directors' notes were not retrieved"
    decision = decide_choice(question, options, [PIPER, HORIZON], _lookup)
    assert decision is not None and decision.answer == "Lost Horizon" and decision.passage is MARSH
    assert person_of("director", PIPER, [], _lookup) is VALE
    born = decide_choice("Which film has the director born later, The Piper or Lost Horizon?", options,
                         [PIPER, HORIZON], _lookup)
    assert born is not None and born.answer == "Lost Horizon"


def test_no_decision_without_both_values_or_a_direction():
    undated = _note(5, "Quiet Days", "Quiet Days is a film about a lighthouse.")
    assert decide_choice("Which film came out first, The Piper or Quiet Days?", ("The Piper", "Quiet Days"),
                         [PIPER, undated]) is None
    assert decide_choice("Which film is longer, The Piper or Lost Horizon?", ("The Piper", "Lost Horizon"),
                         NOTES) is None, "no earlier / later: not a date comparison"
    same_year = _note(6, "Other Piper", "Other Piper is a 1937 film.")
    assert decide_choice("Which film came out first, The Piper or Other Piper?", ("The Piper", "Other Piper"),
                         [PIPER, same_year]) is None, "the same year, months unknown: left to the model"


def test_same_nationality():
    assert nationality(MARSH.text) == "american" and nationality(VALE.text) == "english"
    assert decide_same("Are Ann Vale and Bo Marsh of the same nationality?", [VALE, MARSH]) is not None
    assert decide_same("Are Ann Vale and Bo Marsh of the same nationality?", [VALE, MARSH]).answer == "no"
    twin = _note(7, "Cy Dunn", "Cy Dunn was an English actor.")
    assert decide_same("Are Ann Vale and Cy Dunn from the same country?", [VALE, twin]).answer == "yes"
    assert decide_same("Is Ann Vale older than Cy Dunn?", [VALE, twin]) is None


def test_answer_type_from_the_question():
    assert question_type(classify("What is the date of birth of Ann Vale?"), "What is the date of birth of Ann Vale?") == "when"
    assert question_type(classify("In what city did she die?"), "In what city did she die?") == "where"
    assert head_noun("Which spice goes into the loaf?") == "spice" and head_noun("What is it?") == ""
    assert head_noun("What is the name of the lighthouse in Saltreach?") == "lighthouse"


def test_quantities_keep_their_separators_and_units():
    evidence = _sentences(VALE, ["Mount Skelda is 2,140 m high and the loaf bakes at 210°C.", "It sold 150 million copies."])
    high = build_choices("How high is Mount Skelda?", classify("How high is Mount Skelda?"), evidence)
    assert "2,140 m" in high.texts and "140" not in high.texts[:1], high.texts
    sold = _sentences(VALE, ["It sold 150 million copies in 12 countries.", "Mount Skelda is 2,140 m high."])
    many = build_choices("How many copies did it sell?", classify("How many copies did it sell?"), sold)
    assert many.texts[0] == "150 million", many.texts


def _sentences(passage: Passage, texts: list[str]) -> list[EvidenceSentence]:
    return [EvidenceSentence(t, t, passage, 1, 1 + i, "sentence", 0.8 - i / 10) for i, t in enumerate(texts)]


def test_ranking_puts_the_asked_kind_first():
    evidence = _sentences(VALE, ["Ann Vale was born in Leeds on 16 March 1890.", "Ann Vale directed The Piper."])
    where = build_choices("Where was Ann Vale born?", classify("Where was Ann Vale born?"), evidence)
    assert where.texts[0] == "Leeds", where.texts
    when = build_choices("When was Ann Vale born?", classify("When was Ann Vale born?"), evidence)
    assert when.texts[0] == "16 March 1890", when.texts
    assert "Ann Vale" not in where.texts, "the question's own words are never the answer"


def test_a_place_after_in_is_no_nationality_and_an_owner_form_is_no_answer():
    evidence = _sentences(VALE, ["Ann Vale's father Tom Vale died in Munich in 1950.",
                                 "Tom Vale's brother was an American painter."])
    where = build_choices("Where did Ann Vale's father die?", classify("Where did Ann Vale's father die?"), evidence)
    assert where.texts[0] == "Munich", where.texts  # "-ich" like "French", but after "in"
    assert not any(t.endswith("'s") for t in where.texts) and "Vale" not in where.texts, where.texts


def test_the_next_hop_answer_is_kept_among_the_choices():
    """The answer sits beside the words the best sentence leaves out; without that it is not among the 8 kept."""
    film = Passage(1, 1, "piper.md", "The Piper", 0, "The Piper", FILM_SENTENCE, "sha", 1, 1)
    vale = Passage(2, 2, "vale.md", "Helen Vale", 0, "Helen Vale", "", "sha", 1, 3)
    question = "The Piper is a 2001 comedy film featuring an American actress who starred in what for seven years?"
    by_cosine = [EvidenceSentence(t, t, p, 1 + (p is vale), 1, "sentence", c, c) for p, t, c in (
        (film, FILM_SENTENCE, 0.8), (vale, "Helen Vale grew up in Leeds.", 0.5), (vale, "She studied drama in London.", 0.45),
        (vale, "She starred in the sitcom Harbour Lights for seven years.", 0.3))]

    def place(residual_weight: float) -> int:
        evidence = order_evidence(question, with_residual(question, by_cosine, residual_weight))
        found = prior.candidates(question, evidence, span_sentences=10, ngram_sentences=6, max_ngram=4,
                                 ngram_stop=NGRAM_STOPWORDS)
        return [c.text for c in prior.rank(question, classify(question), found, evidence)].index("Harbour Lights")

    assert place(RESIDUAL_WEIGHT) < 8 <= place(0.0)


FILM_SENTENCE = "The Piper is a 2001 comedy film featuring the American actress Helen Vale."


@pytest.fixture
def film_index(tmp_path: Path, settings_for, embedder):
    folder = tmp_path / "notes"
    folder.mkdir()
    for p in NOTES:
        (folder / p.path).write_text(p.text, encoding="utf-8")
    idx = Index(settings_for(folder, db=str(tmp_path / "index.db"), **{"answer.mode": "shape", "answer.abstain_below": 0, "answer.abstain_unnamed_below": 0,
                                                                    "answer.pick": "model"}),
                embedder)
    idx.sync()
    yield idx
    idx.close()


def test_a_decided_comparison_makes_no_model_call_and_cites_the_deciding_note(film_index):
    assert film_index.note_titled("bo marsh").title == "Bo Marsh (director)", "found by title, any case, qualified"
    llm = ScriptedLLM(lambda m, s, p: "The Piper")
    answer = Assistant(film_index, llm=llm).ask("Which film has the director who died first, The Piper or Lost Horizon?",
                                                strategy="lexical", k=2)
    assert llm.calls == [], "the dates decided: no model call"
    assert answer.span == "Lost Horizon" and answer.decided and not answer.abstained
    cited = [c for c in answer.citations if c.cited]
    assert [c.passage.title for c in cited] == ["Bo Marsh (director)"], "the note whose date decided it"
    assert answer.span_sentence is not None and "1950" in answer.span_sentence.text
    assert answer_record(answer)["decided_without_model"].startswith("The Piper")


def test_an_undecided_comparison_goes_to_the_model(film_index):
    llm = ScriptedLLM(lambda m, s, p: "The Piper")
    answer = Assistant(film_index, llm=llm).ask("Which film is more famous, The Piper or Lost Horizon?",
                                                strategy="lexical", k=2)
    assert len(llm.calls) == 1 and llm.choices[0][:2] == ["The Piper", "Lost Horizon"]
    assert answer.span == "The Piper" and not answer.decided


def test_a_comparison_of_things_the_notes_never_name_is_not_in_the_notes(film_index):
    from localrag.answer.compare import options_absent

    assert options_absent("Which film came out first, Red Sky or Blue Moon?", ("Red Sky", "Blue Moon"), NOTES)
    assert not options_absent("Which film came out first, The Piper or Blue Moon?", ("The Piper", "Blue Moon"),
                              [HORIZON], _lookup), "a note titled with one option: the notes know it"
    llm = ScriptedLLM(lambda m, s, p: "Red Sky")
    # no passage of the folder says either option: abstention rule 3 says so before the options rule
    answer = Assistant(film_index, llm=llm).ask("Which film came out first, Red Sky or Blue Moon?",
                                                strategy="lexical", k=2)
    assert answer.abstained and llm.calls == [] and "“Red Sky”, “Blue Moon”" in answer.abstain_reason
    film_index.settings.answer.abstain_unmentioned = False
    answer = Assistant(film_index, llm=llm).ask("Which film came out first, Red Sky or Blue Moon?",
                                                strategy="lexical", k=2)
    assert answer.abstained and llm.calls == [] and "none of the options" in answer.abstain_reason
