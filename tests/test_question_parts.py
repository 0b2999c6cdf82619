"""A question that asks two things is ranked whole and part by part (retrieve/parts.py, `graph`)."""

from __future__ import annotations

from dataclasses import replace

import pytest
from kg_helpers import write_notes

from localrag.retrieve import Context, get_strategy
from localrag.retrieve.graph import FusionStep
from localrag.retrieve.parts import question_parts

pytest_plugins = ["conftest_kg"]


def test_two_questions_joined_by_comma_and_an_asking_word_are_split():
    assert question_parts("What are task notes for, and how do I make them show up in the TODO Tree extension?") == [
        "What are task notes for?", "How do I make them show up in the TODO Tree extension?"]
    assert question_parts("Which library renders math, and which delimiters produce a block formula?") == [
        "Which library renders math?", "Which delimiters produce a block formula?"]


@pytest.mark.parametrize("question", [
    # a relative clause, not a second question
    "When was the Welsh singer born who is known for her husky voice and who's third album is Diamond Cut?",
    # a title holding "And How"
    "Which film has the director died first, To Mary – With Love or Five Little Peppers And How They Grew?",
    # a second predicate of the same subject
    "The novel was published by a house that was founded in 2005, and is based where?",
    # too short to be a question of its own
    "Who built the Tessaly Light, and why?",
    "Where was the director of film Eight Days A Week born?",
])
def test_one_question_stays_whole(question):
    assert question_parts(question) == []


LIGHTHOUSE_NOTES = {
    **{f"keeper-{i}.md": f"# Keeper's log {i}\n\nThe keeper of the Tessaly Light writes the weather, the ships seen and "
                          f"the lamp's oil in the logbook each night (entry {i}).\n" for i in range(1, 5)},
    "harbour-office.md": "# Harbour office\n\nThe harbour office prints the tide tables on the first Monday of the month.\n",
    "bakery.md": "# The Harebell Oven\n\nThe Harebell Oven is a bakery that sells a rye and plum loaf.\n",
}
TWO_THINGS = "What does the keeper of the Tessaly Light write in the logbook each night, and when are the tide tables printed?"


def test_each_part_keeps_its_note_in_reach(kg_index, tmp_path):
    index = kg_index(write_notes(tmp_path / "notes", LIGHTHOUSE_NOTES))
    index.sync()
    index.extract_graph()

    def top(split: bool) -> tuple[list[str], FusionStep]:
        settings = replace(index.settings, graph=replace(index.settings.graph, split_questions=split))
        got = get_strategy("graph").retrieve(Context(index.store, index.embedder, settings), TWO_THINGS, 3)
        return [sp.passage.path for sp in got.passages], next(s for s in got.trace.steps if isinstance(s, FusionStep))

    paths, step = top(split=False)
    assert "harbour-office.md" not in paths and step.parts == ()  # four logbook notes fill the top 3
    paths, step = top(split=True)
    assert "harbour-office.md" in paths and paths[0].startswith("keeper-")
    assert step.parts == ("What does the keeper of the Tessaly Light write in the logbook each night?",
                          "When are the tide tables printed?")
