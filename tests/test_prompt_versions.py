"""A changed prompt must not be answered from replies cached for the old one.

The three cached replies (extractions, query entities, follow-up rewrites) are keyed by their
prompt's version string. Each version is pinned here to a fingerprint of what the model sees
(system text, user message shape, schema): edit a prompt and this fails until the version is
bumped and the new fingerprint written down. The behaviour tests show the version is in the key.
"""

from __future__ import annotations

import hashlib
import json

from kg_helpers import write_notes
from scripted_llm import ScriptedLLM

import localrag.conversation.rewrite as rewrite
from localrag.conversation.rewrite import resolve_llm
from localrag.records import Turn
from localrag.llm import prompts_chat, prompts_kg, prompts_np

pytest_plugins = ["conftest_kg"]


def _fingerprint(*parts: object) -> str:
    return hashlib.sha256(json.dumps(parts, sort_keys=True, ensure_ascii=False).encode()).hexdigest()[:16]


def _kg_prompt() -> str:
    return _fingerprint(prompts_kg.kg_messages("Ada wrote notes.", "Ada", ["Ada", "notes"]),
                        prompts_kg.kg_messages("Ada wrote notes.", "Ada"),
                        prompts_kg.kg_schema(8, ["Ada", "notes"]), prompts_kg.kg_schema(8))


def _ner_prompt() -> str:
    return _fingerprint(prompts_np.ner_messages("Who taught Ada?"), prompts_np.ner_schema())


def _rewrite_prompt() -> str:
    turns = [prompts_chat.ChatTurn("Who was Ada Lovelace?", "A mathematician [1].")]
    return _fingerprint(prompts_chat.rewrite_messages("When was she born?", turns),
                        prompts_chat.rewrite_schema("When was she born?"))


PINNED = {  # version -> fingerprint of its prompt; a new fingerprint needs a new version
    "kg-v2": "8825657bb05a867d",
    "np-ner-v1": "14ceeee55fff2506",
    "chat-rewrite-v1": "33a0ae14a78e0ad4",
}


def test_every_cached_prompt_is_pinned_to_its_version():
    current = {prompts_kg.KG_VERSION: _kg_prompt(), prompts_np.NER_VERSION: _ner_prompt(),
               prompts_chat.REWRITE_VERSION: _rewrite_prompt()}
    stale = {v: f for v, f in current.items() if PINNED.get(v) != f}
    assert not stale, f"a cached prompt changed: bump its *_VERSION and pin the new fingerprint: {stale}"


def test_a_new_extraction_prompt_version_misses_the_cache(kg_index, tmp_path, monkeypatch):
    llm = ScriptedLLM(lambda m, s, p: {"triples": [{"head": "Charles Babbage", "relation": "designed",
                                                     "tail": "Difference Engine"}]})
    index = kg_index(write_notes(tmp_path / "notes"), **{"index.extractor": "llm"})
    index.sync()
    first = index.extract_graph(llm=llm)
    assert first.llm_calls > 0
    index.store.graph.queue.enqueue_all()
    same = index.extract_graph(llm=llm)
    assert (same.cached, same.llm_calls) == (same.passages, 0)
    monkeypatch.setattr(prompts_kg, "KG_VERSION", "kg-test-next")
    index.store.graph.queue.enqueue_all()
    changed = index.extract_graph(llm=llm)
    assert (changed.cached, changed.llm_calls) == (0, first.llm_calls)


def test_a_new_rewrite_prompt_version_misses_the_cache(kg_index, tmp_path, monkeypatch):
    index = kg_index(write_notes(tmp_path / "notes"))
    llm = ScriptedLLM(lambda m, s, p: {"query": "When was Ada Lovelace born?"})
    history = [Turn(1, 1, "Who was Ada Lovelace?", "Who was Ada Lovelace?", "Ada Lovelace was a mathematician [1].")]
    for _ in range(2):
        assert resolve_llm("When was she born?", history, llm, index.store.cache).query == "When was Ada Lovelace born?"
    assert len(llm.calls) == 1  # the second ask came from the cache
    monkeypatch.setattr(rewrite, "REWRITE_VERSION", "chat-rewrite-test-next")
    resolve_llm("When was she born?", history, llm, index.store.cache)
    assert len(llm.calls) == 2
