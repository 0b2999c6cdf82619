"""Answers a small model cannot get wrong, the parts without a model: Markdown-aware evidence units,
the question-shape rules, the candidate spans and the grammar that admits exactly them, and what
an answer shows (prompt markup stripped, repeats collapsed, cited vs given passages)."""

from __future__ import annotations

import io

from hypothesis import given, settings, strategies as st
from rich.console import Console

from localrag.answer import Answer, Citation, checked_reply, strip_markup
from localrag.answer.evidence import (
    EvidenceSentence, names_a_key, rank_evidence, residual_words, specific_share, split_units, with_residual,
    with_specific,
)
from localrag.answer.record import answer_record
from localrag.answer.shape import classify
from localrag.answer.spans import NOT_IN_NOTES, build_choices, ngrams, with_copied_spans
from localrag.llm.grammar import choice_grammar, choice_schema, grammar_language
from localrag.records import Passage, Retrieval, Trace

NOTE = """# Rye and Plum Loaf

The loaf is baked on Saturdays. It uses cardamom, not cinnamon. St. Maurice bakes it too.

- Flour: 500 g of dark rye, sifted
  twice for a lighter crumb.
- Plums: 6, stoned.

| ingredient | amount |
|------------|--------|
| cardamom   | 2 tsp  |

```sh
bake --at 220. --for 40.
```
"""


def _passage(text: str, pid: int = 1, path: str = "loaf.md", title: str = "Rye and Plum Loaf", start: int = 1) -> Passage:
    return Passage(pid, pid, path, title, 0, title, text, "sha", start, start + text.count("\n"))


def test_markdown_units_keep_list_items_table_rows_code_and_headings_whole():
    units = split_units(NOTE)
    kinds = [(u.kind, u.text) for u in units]
    assert kinds[0] == ("heading", "Rye and Plum Loaf")
    sentences = [t for k, t in kinds if k == "sentence"]
    assert sentences == ["The loaf is baked on Saturdays.", "It uses cardamom, not cinnamon.",
                         "St. Maurice bakes it too."], "an abbreviation does not end a sentence"
    items = [t for k, t in kinds if k == "item"]
    assert items[0] == "- Flour: 500 g of dark rye, sifted\n  twice for a lighter crumb.", "an item is one unit"
    assert [t for k, t in kinds if k == "row"] == ["| cardamom | 2 tsp |"], "the header row is context, not a unit"
    assert [t for k, t in kinds if k == "code"] == ["bake --at 220. --for 40."], "code is never split at dots"
    lines = NOTE.split("\n")
    for u in units:
        first_words = u.text.split("\n")[0].strip("|#- ").split()[0]
        assert first_words in lines[u.line_offset], (u, lines[u.line_offset])


def test_a_bare_lead_in_keeps_the_sentence_it_follows_and_a_comment_never_parts_it_from_its_code():
    text = ("Tests run in parallel. To run them one at a time, send the `--test-threads` flag. "
            "Take a look at the following example:\n\n<!-- a maintainer's note -->\n\n"
            "```console\n$ cargo test -- --test-threads=1\n```\n")
    units = split_units(text)
    assert [u.text for u in units] == [
        "Tests run in parallel.",
        "To run them one at a time, send the `--test-threads` flag. Take a look at the following example:\n"
        "$ cargo test -- --test-threads=1"]
    assert not any("maintainer" in u.text for u in units)  # what a reader never sees is no evidence


def test_a_heading_that_names_a_key_joins_the_unit_below_it():
    assert names_a_key("createMissingLinkedNotes") and names_a_key("`nav_order`") and names_a_key("Rc::clone")
    assert not any(names_a_key(h) for h in ("Method", "Bruce McCandless", "LeRoy D. Brown", "DR Class 23.10",
                                            "How links create notes that do not exist yet"))
    units = split_units("## createMissingLinkedNotes\n\n- Create notes that do not exist yet\n\n## Method\n\nRun it.\n")
    assert [(u.text, u.kind) for u in units] == [
        ("createMissingLinkedNotes\n- Create notes that do not exist yet", "item"), ("Method", "heading"),
        ("Run it.", "sentence")]


def test_evidence_ranks_the_answering_sentence_first_with_its_line(embedder):
    p1 = _passage(NOTE, 1, start=10)
    p2 = _passage("Orlinsford lies on the river Velkra.\n\nIts market is on Thursdays.", 2, "orlinsford.md", "Orlinsford")
    ranked = rank_evidence(embedder, "Which spice goes into the rye and plum loaf?", [p2, p1])
    top = next(e for e in ranked[:3] if "cardamom" in e.plain)  # the three shown hold the answer
    assert top.location == "loaf.md:12" and top.rank == 2
    assert ranked[0].passage.path == "loaf.md" and ranked[0].score >= ranked[-1].score
    assert all(e.kind != "heading" for e in ranked), "a title restates the question; it is not evidence"


def test_question_shapes():
    cases = {
        "Who founded the company that funds Cobblebell?": ("short", "who", ()),
        "When was the guild founded?": ("short", "when", ()),
        "Where is the build server kept?": ("short", "where", ()),
        "How many members does the guild have?": ("short", "how many", ()),
        "Which spice goes into the loaf?": ("short", "which", ()),
        "Which film came out first, The Piper or Lost Horizon?": ("short", "choice", ("The Piper", "Lost Horizon")),
        "Did Tom Hanks or Meg Ryan star in Big?": ("short", "choice", ("Tom Hanks", "Meg Ryan")),
        "Is the Velkra longer than the Orle?": ("short", "yesno", ()),
        "How does the backup rotation work?": ("open", "open", ()),
        "Why was the meeting moved?": ("open", "open", ()),
        "Summarise the guild meeting log.": ("open", "open", ()),
        # the asking word, not a relative pronoun before it
        "The Piper is a film featuring an actress who starred in what for seven years?": ("short", "what", ()),
        "What show does a retired player, who missed a season, host?": ("short", "what", ()),
        "Under what name did the guitarist release the album when he left?": ("short", "what", ()),
        "When was the company founded for which she resigned?": ("short", "when", ()),
        "He has sold more than how many records worldwide?": ("short", "how many", ()),
    }
    for question, (kind, qtype, options) in cases.items():
        shape = classify(question)
        assert (shape.kind, shape.qtype, shape.options) == (kind, qtype, options), question


def test_a_sentence_saying_what_the_best_one_leaves_out_is_shown():
    """Two hops: the best sentence names the actress, the one with the answer says "starred … seven years"."""
    film = _passage("The Piper is a 2001 comedy film featuring the American actress Helen Vale.", 1, "piper.md", "The Piper")
    vale = _passage("Helen Vale grew up in Leeds. She studied drama in London.\n\n"
                    "She starred in the sitcom Harbour Lights for seven years.", 2, "vale.md", "Helen Vale")
    question = "The Piper is a 2001 comedy film featuring an American actress who starred in what for seven years?"
    by_cosine = _ranked_by_cosine(film, vale)
    words = residual_words(question, by_cosine)
    assert {"starred", "seven", "years"} <= words and "comedy" not in words
    shown = [e.plain for e in with_residual(question, by_cosine)[:2]]
    assert any("seven years" in s for s in shown), shown


def test_a_unit_holding_what_the_question_does_not_say_outranks_one_restating_it():
    page = _passage("> Scan the integrity of Windows system files.\n\n- Scan and repair: `sfc /scannow`", 1, "sfc.md", "sfc")
    question = "How do I check the Windows system files for corruption and repair them?"
    restating = EvidenceSentence("Scan the integrity of Windows system files.", "Scan the integrity of Windows "
                                 "system files.", page, 1, 3, "sentence", 0.75, 0.75)
    answering = EvidenceSentence("Scan and repair: `sfc /scannow`", "Scan and repair: sfc /scannow", page, 1, 5,
                                 "item", 0.70, 0.70)
    assert specific_share(restating.text, question) == 0.0
    assert specific_share(answering.text, question) == 0.5  # one code span of the two a whole bonus needs
    assert specific_share("Use -p- for ports 1 to 65535", "Which nmap flag scans all ports?") == 1.0
    assert specific_share("Use `sfc` to check Windows.", "What does sfc do on Windows?") == 0.0  # said already
    assert [e.line for e in with_specific(question, [restating, answering], 0.15)] == [5, 3]
    assert [e.line for e in with_specific(question, [restating, answering], 0.0)] == [3, 5]
    assert with_specific(question, [answering], 0.15)[0].similarity == 0.70  # abstention still reads the cosine


def _ranked_by_cosine(film: Passage, vale: Passage) -> list[EvidenceSentence]:
    """Fixed cosines, the best on the film's note: the residual words alone must lift the answering one."""
    texts = [(film, film.text, 0.8), (vale, "Helen Vale grew up in Leeds.", 0.5), (vale, "She studied drama in London.", 0.45),
             (vale, "She starred in the sitcom Harbour Lights for seven years.", 0.3)]
    return [EvidenceSentence(t, t, p, 1 + (p is vale), 1, "sentence", c, c) for p, t, c in texts]


def _evidence(texts: list[str]) -> list[EvidenceSentence]:
    p = _passage("\n\n".join(texts))
    return [EvidenceSentence(t, t, p, 1, 1 + i, "sentence", 1.0 - i / 10) for i, t in enumerate(texts)]


_words = st.text(alphabet=st.characters(categories=("L", "N"), max_codepoint=0x24F), min_size=1, max_size=9)
_sentences = st.lists(_words, min_size=1, max_size=14).map(" ".join)


@settings(max_examples=150, deadline=None)
@given(st.lists(_sentences, min_size=1, max_size=6), st.sampled_from(
    ["Who built the lathe?", "Which film came out first, Alpha Beta or Gamma?", "Is Orlinsford on the Velkra?",
     "When was it founded?"]))
def test_grammar_admits_exactly_the_spans_of_the_evidence(texts, question):
    evidence = _evidence(texts)
    shape = classify(question)
    choices = build_choices(question, shape, evidence)
    allowed = {NOT_IN_NOTES} | set(shape.options) | ({"yes", "no"} if shape.qtype == "yesno" else set())
    for choice in choices.texts:
        assert choice in allowed or any(choice in e.plain for e in evidence), choice
    grammar = choice_grammar(choices.texts)
    assert grammar_language(grammar) == set(choices.texts), "every choice, and nothing else"


@settings(max_examples=100, deadline=None)
@given(st.lists(_sentences, min_size=1, max_size=4), st.integers(min_value=1, max_value=5))
def test_copied_answers_are_runs_of_the_evidence_words_and_nothing_else(texts, max_words):
    evidence = _evidence(texts)
    question = "Who built the lathe?"
    ranked = build_choices(question, classify(question), evidence)
    choices = with_copied_spans(ranked, evidence, max_words)
    assert choices.texts[:len(ranked) - 1] == ranked.texts[:-1] and choices.texts[-1] == NOT_IN_NOTES
    runs = {" ".join(words[i:j]) for words in (t.split() for t in texts)
            for i in range(len(words)) for j in range(i + 1, min(len(words), i + max_words) + 1)}
    for text in choices.texts[len(ranked) - 1:-1]:
        assert text in runs, text
        assert text in choices.source[text].plain, "each copied span keeps the sentence it is in"
    assert runs <= set(choices.texts), "every run of the sentences' words is admitted"
    assert grammar_language(choice_grammar(choices.texts)) == set(choices.texts)


@settings(max_examples=200, deadline=None)
@given(st.lists(st.text(min_size=1, max_size=30), min_size=1, max_size=40, unique=True))
def test_grammar_language_is_the_choice_set_for_any_strings(texts):
    assert grammar_language(choice_grammar(texts)) == set(texts)
    assert choice_schema(texts)["properties"]["answer"]["enum"] == texts


def test_real_llama_grammar_parser_accepts_the_grammar():
    from llama_cpp import LlamaGrammar

    grammar = choice_grammar(['say "hi"', "back\\slash", "cardamom", "card", "not in your notes", "Zürich"])
    assert LlamaGrammar.from_string(grammar, verbose=False) is not None


def test_choices_by_shape():
    evidence = _evidence(["The spice in this loaf is cardamom, added on 3 March 2021.", "Otto Kallendar owns it."])
    spans = build_choices("Which spice goes into the loaf?", classify("Which spice goes into the loaf?"), evidence,
                          max_choices=50)
    assert "cardamom" in spans and "3 March 2021" in spans and "Otto Kallendar" in spans
    best = build_choices("Which spice goes into the loaf?", classify("Which spice goes into the loaf?"), evidence)
    assert best.texts[0] == "cardamom", "the noun the question asks for is named next to it: ranked first"
    assert len(best) == 9 and best.texts[-1] == NOT_IN_NOTES, "the best 8 spans, then not in your notes"
    when = build_choices("When was it added?", classify("When was it added?"), evidence)
    assert when.texts[0] == "3 March 2021", "a date answers a when question"
    assert "loaf" not in spans, "words of the question are not answers"
    assert spans.source["cardamom"].plain.startswith("The spice")
    yesno = build_choices("Is it cardamom?", classify("Is it cardamom?"), evidence)
    assert yesno.texts == ("yes", "no", NOT_IN_NOTES)
    both = build_choices("Who was born first, Ann Lee or Bo Ma?", classify("Who was born first, Ann Lee or Bo Ma?"),
                         evidence)
    assert both.texts == ("Ann Lee", "Bo Ma", NOT_IN_NOTES)
    assert "spice in this" not in ngrams("The spice in this loaf", 4) and "spice" in ngrams("The spice", 4)
    # a pronoun or an adverb of degree or time is no answer's edge: "still", "most", "I" are not candidates
    grams = ngrams("Ilse still has cousins here and I visit most winters", 4)
    assert not {"still", "most", "I", "still has cousins", "I visit"} & set(grams) and "cousins" in grams


def test_prompt_markup_is_stripped_and_repeats_collapsed():
    reply = ('<passage n="6" source="notes/a.md:1-3" title="A">The Velkra [1].</passage> '
             "The Velkra [1]. The Velkra [1]. It is long [2].")
    text, notes = checked_reply(reply, "stop", 100, 3)
    assert "<" not in text and "source=" not in text and "passage" not in text
    assert text.count("The Velkra") == 1 and "It is long [2]." in text
    assert any("markup" in n for n in notes) and any("repeated" in n for n in notes)
    assert strip_markup("plain [1].") == "plain [1]."


def test_cited_and_given_passages_are_apart_in_json_and_cli():
    from localrag.commands import ask

    p1, p2 = _passage("Velkra.", 1, "a.md"), _passage("Orle.", 2, "b.md")
    answer = Answer("q?", "The Velkra [1].", [Citation(1, p1, True), Citation(2, p2, False)],
                    Retrieval("q?", [], Trace("hybrid")), "hybrid")
    data = answer_record(answer)
    assert [c["path"] for c in data["citations"]] == ["a.md"] and [c["path"] for c in data["given"]] == ["b.md"]
    assert set(data["timings_ms"]) >= {"to_evidence", "to_first_token", "total"}
    out = io.StringIO()
    ask.console = Console(file=out, width=200, color_system=None)
    ask.print_sources(answer)
    text = out.getvalue()
    assert text.index("Cited") < text.index("a.md") < text.index("not cited") < text.index("b.md")
