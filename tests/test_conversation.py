"""Conversations: the follow-up resolvers, the session store, the answer prompt's history, the CLI."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from localrag.config import load_settings
from localrag.conversation import Conversation, Turn, TurnCitation, needs_resolution, resolve_rules
from localrag.conversation.rewrite import check_rewrite, resolve_llm
from localrag.llm.prompts_chat import ChatTurn, history_messages, with_history
from localrag.store import Store
from scripted_llm import ScriptedLLM


def turn(question: str, answer: str, resolved: str = "") -> Turn:
    return Turn(1, 1, question, resolved or question, answer)


# -- the no-LLM resolver ------------------------------------------------------------------

def test_pronoun_takes_the_answer_of_a_who_question() -> None:
    history = [turn("Who leads the Lanternfish project?", "Lanternfish is led by Ilse Varnhagen [1].")]
    r = resolve_rules("Where was she born?", history)
    assert r.query == "Where was Ilse Varnhagen born?" and r.method == "rules" and r.changed
    assert "'she' -> Ilse Varnhagen" in r.reason


def test_it_after_a_who_question_is_the_thing_asked_about_not_the_person() -> None:
    history = [turn("Who leads Cobblebell?", "Tobiah Merrow [2].")]
    assert resolve_rules("When did it start?", history).query == "When did Cobblebell start?"


def test_possessive_and_that_place() -> None:
    assert resolve_rules("What is her job?", [turn("Who founded Kelpwright Systems?", "Selma Ingvarsson [1]")]).query \
        == "What is Selma Ingvarsson's job?"
    r = resolve_rules("Which lake is that place on?", [turn("Where was Tobiah Merrow born?", "In Tolvenmark [1].")])
    assert r.query == "Which lake is Tolvenmark on?"


def test_that_noun_points_at_the_phrase_the_previous_turn_headed_with_it() -> None:
    previous = turn("Which spice goes into the signature loaf of the bakery owned by Rosalind Achterberg?",
                    "cardamom [1]")
    r = resolve_rules("And what is the spice in that loaf?", [previous])
    assert r.query == "And what is the spice in the signature loaf of the bakery owned by Rosalind Achterberg?"
    # the answer cited a note whose title the noun heads: that note is what "that loaf" is
    cited = Turn(1, 1, previous.question, previous.question, previous.answer,
                 (TurnCitation(1, "rye-and-plum-loaf.md:27-27", "Rye and Plum Loaf"),))
    assert resolve_rules("And what is the spice in that loaf?", [cited]).query == \
        "And what is the spice in the Rye and Plum Loaf?"
    # the previous answer names the noun: it is what "that loaf" is
    r = resolve_rules("What spice is in that loaf?", [turn("Which loaf does the Harebell Oven bake?",
                                                           "The rye and plum loaf [1]")])
    assert r.query == "What spice is in The rye and plum loaf?"
    # a noun the previous turn never said is no reference: "that gives" is a clause
    r = resolve_rules("What is the spice that gives it colour?", [previous])
    assert "that gives" in r.query


def test_ellipsis_with_a_new_entity_swaps_it_into_the_previous_question() -> None:
    r = resolve_rules("What about Cobblebell?", [turn("Who leads Lanternfish?", "Ilse Varnhagen [1].")])
    assert r.query == "Who leads Cobblebell?"


def test_ellipsis_without_an_entity_completes_the_previous_question() -> None:
    r = resolve_rules("and the year?", [turn("When was the first release of Lanternfish?", "In 2021 [1].")])
    assert r.query == "When was the first release of Lanternfish? And the year?"
    assert needs_resolution("and the year?") and not needs_resolution("Who leads Lanternfish?")


def test_a_self_contained_question_is_left_alone() -> None:
    history = [turn("Who leads Lanternfish?", "Ilse Varnhagen [1].")]
    for question in ("Which river runs through Orlinsford?", "Is there a lighthouse in Quillhaven?",
                     "Who directed Titanic and where was he born?",
                     "Are both Cunaú River and Rio Verde located in the same country?",
                     "What is the place of birth of the performer of song Changed It?",
                     "Who directed the film in which Jung Joon-young made his big screen debut?",
                     'The singer of "You don\'t know her like I do" was born in what city?'):
        r = resolve_rules(question, history)
        assert r.query == question and r.method == "unchanged" and not r.changed, question


def test_no_history_no_change() -> None:
    assert resolve_rules("Where was she born?", []).query == "Where was she born?"


def test_two_entities_in_the_previous_turn() -> None:
    history = [turn("Who was born first, Ilse Varnhagen or Wenna Strake?", "Wenna Strake was born first [2].")]
    assert resolve_rules("Where does she live?", history).query == "Where does Wenna Strake live?"
    both = [turn("Are Ilse Varnhagen and Wenna Strake colleagues?", "Yes [1].")]
    assert resolve_rules("Where do they live?", both).query == "Where do Ilse Varnhagen and Wenna Strake live?"


def test_a_chain_resolves_through_the_previous_resolved_query() -> None:
    history = [turn("When did she join it?", "In 2019.", resolved="When did Ilse Varnhagen join Lanternfish?")]
    r = resolve_rules("What about Cobblebell?", history)
    assert r.query == "When did Ilse Varnhagen join Cobblebell?"


def test_a_reply_that_says_nothing_leaves_the_question_entity() -> None:
    history = [turn("Who leads Cobblebell?", "The notes do not say.")]
    assert resolve_rules("Where was he born?", history).query == "Where was Cobblebell born?"


# -- the LLM rewrite ------------------------------------------------------------------------

def _rewriter(query: str) -> ScriptedLLM:
    return ScriptedLLM(lambda messages, schema, phase: {"query": query})


def test_llm_rewrite_is_used_when_grounded_and_cached(tmp_path: Path) -> None:
    store = Store(tmp_path / "i.db", dim=4, embedder_id="t")
    history = [turn("Who leads Lanternfish?", "Ilse Varnhagen [1].")]
    llm = _rewriter("Where was Ilse Varnhagen born?")
    r = resolve_llm("Where was she born?", history, llm, store.cache)
    assert r.query == "Where was Ilse Varnhagen born?" and r.method == "llm"
    phase, messages = llm.calls[0]
    assert phase == "rewrite" and "Ilse Varnhagen" in messages[-1]["content"]
    again = resolve_llm("Where was she born?", history, llm, store.cache)
    assert again.query == r.query and len(llm.calls) == 1  # served from the cache
    store.close()


def test_llm_rewrite_that_invents_a_name_falls_back_to_the_rules() -> None:
    history = [turn("Who leads Lanternfish?", "Ilse Varnhagen [1].")]
    llm = _rewriter("Where was Marcus Aurelius born in Rome?")
    r = resolve_llm("Where was she born?", history, llm)
    assert r.query == "Where was Ilse Varnhagen born?" and r.method == "rules"
    assert "rewrite rejected" in r.reason and len(llm.calls) == 2  # one repair retry, then the fallback
    assert check_rewrite("Where was she born in the end?", "Born?", history) is not None  # drops the question's words
    assert check_rewrite("Where was she born?", "Where was Rome born?", history) is not None  # a new name
    assert check_rewrite("Where was she born?", "Where was she born?", history) is not None  # left unresolved
    assert check_rewrite("Where was she born?", "Where was Ilse Varnhagen born?", history) is None


def test_llm_rewrite_never_sees_a_self_contained_question() -> None:
    llm = _rewriter("anything")
    r = resolve_llm("Which river runs through Orlinsford?", [turn("Who leads Lanternfish?", "Ilse [1]")], llm)
    assert r.method == "unchanged" and llm.calls == []


def test_malformed_rewrite_reply_is_a_recorded_fallback() -> None:
    llm = ScriptedLLM(lambda messages, schema, phase: "not json at all")
    r = resolve_llm("Where was she born?", [turn("Who leads Lanternfish?", "Ilse Varnhagen [1].")], llm)
    assert r.query == "Where was Ilse Varnhagen born?" and "rewrite rejected" in r.reason


# -- the answer prompt's history ------------------------------------------------------------

def test_history_is_bounded_by_tokens_oldest_dropped_first() -> None:
    turns = [ChatTurn(f"question {i}?", f"answer {i} [1] " + "word " * 40) for i in range(5)]
    count = lambda text: len(text.split())
    kept = history_messages(turns, budget_tokens=110, count_tokens=count)
    assert [m["content"] for m in kept if m["role"] == "user"] == ["question 3?", "question 4?"]
    assert all("[1]" not in m["content"] for m in kept)  # old markers numbered other passages
    assert history_messages(turns, budget_tokens=5, count_tokens=count) == []
    prompt = with_history([{"role": "system", "content": "S"}, {"role": "user", "content": "Q"}], kept)
    assert [m["role"] for m in prompt] == ["system", "user", "assistant", "user", "assistant", "user"]
    assert prompt[-1]["content"] == "Q"


# -- sessions in the store ------------------------------------------------------------------

def test_sessions_and_turns_persist_in_sqlite(tmp_path: Path) -> None:
    db = tmp_path / "index.db"
    settings = load_settings(tmp_path, {"db": str(db)}, env={})
    store = Store(db, dim=4, embedder_id="t")
    convo = Conversation.open(store, settings, name="cobblebell")
    assert convo.session.name == "cobblebell" and convo.turns == []
    store.sessions.add_turn(Turn(convo.session.id, 0, "Who leads Cobblebell?", "Who leads Cobblebell?", "Tobiah [1]"))
    store.close()

    store = Store(db, dim=4, embedder_id="t")
    again = Conversation.open(store, settings, name="cobblebell")
    assert again.session.id == convo.session.id and [t.ordinal for t in again.turns] == [1]
    assert again.resolve("Where was he born?").query == "Where was Tobiah born?"
    last = Conversation.open(store, settings, last=True)
    assert last.session.id == convo.session.id
    listed = store.sessions.recent()
    assert listed[0].first_question == "Who leads Cobblebell?" and listed[0].turns == 1
    store.close()


def _cli(*args: str, env: dict) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "localrag", *args], capture_output=True, text=True, env=env,
                          timeout=600)


def test_cli_session_across_processes(notes_dir: Path) -> None:
    env = {k: v for k, v in os.environ.items() if not k.startswith("LOCALRAG_")}
    r = _cli("index", str(notes_dir), "--no-graph", "--quiet", env=env)
    assert r.returncode == 0, r.stderr
    first = _cli("ask", "Who leads the Lanternfish project?", "-f", str(notes_dir), "--session", "lf",
                 "--strategy", "hybrid", "--no-answer", "--no-sync", "--json", env=env)
    assert first.returncode == 0, first.stderr
    data = json.loads(first.stdout)
    assert data["session"] == "lf" and data["resolved_query"] == "Who leads the Lanternfish project?"
    second = _cli("ask", "When did it have its first public release?", "-f", str(notes_dir), "--continue",
                  "--strategy", "hybrid", "--no-answer", "--no-sync", "--json", env=env)
    assert second.returncode == 0, second.stderr
    follow = json.loads(second.stdout)
    assert follow["resolved_query"] == "When did Lanternfish have its first public release?"
    assert follow["passages"][0]["path"] == "projects/lanternfish.md"
    listed = _cli("sessions", "-f", str(notes_dir), "--json", env=env)
    assert listed.returncode == 0, listed.stderr
    sessions = json.loads(listed.stdout)
    assert sessions[0]["name"] == "lf" and sessions[0]["turns"] == 2
    shown = _cli("sessions", "-f", str(notes_dir), "--show", "lf", env=env)
    assert "searched for: When did Lanternfish have its first public release?" in shown.stdout
    missing = _cli("sessions", "-f", str(notes_dir), "--show", "nope", env=env)
    assert missing.returncode == 1 and "no conversation named 'nope'" in missing.stderr
    assert "Traceback" not in missing.stderr


def test_continue_without_any_session_is_a_one_line_error(notes_dir: Path) -> None:
    env = {k: v for k, v in os.environ.items() if not k.startswith("LOCALRAG_")}
    r = _cli("ask", "Where was she born?", "-f", str(notes_dir), "--continue", "--no-answer", "--strategy", "hybrid",
             env=env)
    assert r.returncode == 1 and "no earlier conversation" in r.stderr and "Traceback" not in r.stderr


@pytest.mark.parametrize("value", ["sometimes"])
def test_bad_resolver_setting_is_a_config_error(tmp_path: Path, value: str) -> None:
    from localrag.config import ConfigError

    with pytest.raises(ConfigError, match="conversation.resolver"):
        load_settings(tmp_path, {"conversation.resolver": value}, env={})


def test_llm_resolver_without_a_model_falls_back_to_the_rules(tmp_path: Path) -> None:
    from localrag.llm.base import LLMError

    settings = load_settings(tmp_path, {"conversation.resolver": "llm"}, env={})
    store = Store(tmp_path / "i.db", dim=4, embedder_id="t")
    convo = Conversation.open(store, settings, name="x")
    store.sessions.add_turn(Turn(convo.session.id, 0, "Who leads Cobblebell?", "Who leads Cobblebell?", "Tobiah [1]"))
    convo = Conversation.open(store, settings, name="x")
    loads = []

    def no_model():
        loads.append(1)
        raise LLMError("model file not found")

    assert convo.resolve("Who leads Lanternfish?", no_model).method == "unchanged" and loads == []  # never loaded
    r = convo.resolve("Where was he born?", no_model)
    assert r.query == "Where was Tobiah born?" and "no model for the rewrite" in r.reason
    store.close()
