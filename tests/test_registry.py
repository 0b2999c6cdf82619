"""The registries of strategies, LLM backends and graph extractors: built-ins, plugins found
through entry points, one-line errors, and what a strategy declares driving the API."""

from __future__ import annotations

import importlib.metadata
import textwrap
from pathlib import Path

import pytest
from scripted_llm import ScriptedLLM

import localrag.embed
from localrag.api import Assistant, Index
from localrag.cli import main
from localrag.config import ConfigError, LLMSettings, Settings
from localrag.kg.builder import resolve_extractor
from localrag.kg.extract import ExtractorOptions, extract_passage
from localrag.kg.extractors import EXTRACTORS
from localrag.llm.base import BuiltLLM, LLMError
from localrag.llm.factory import BACKENDS, backend_for, make_llm
from localrag.llm.model_info import model_size
from localrag.registry import PluginError, Registry, UnknownPlugin
from localrag.retrieve import get_strategy, strategy_names
from localrag.retrieve.base import STRATEGIES

BUILTIN_STRATEGIES = ["dense", "graph", "hybrid", "lexical", "neuropath", "ppr", "remind"]


@pytest.fixture
def plugin_module(tmp_path: Path, monkeypatch: pytest.MonkeyPatch):
    """An importable third-party module and entry points naming it, as an installed plugin would have."""
    (tmp_path / "localrag_test_plugin.py").write_text(textwrap.dedent('''
        from localrag.records import Retrieval, Trace
        from localrag.retrieve.base import Context, scored

        class FirstPassages:
            name = "first"
            needs_llm = False
            settings_section = None

            def retrieve(self, ctx: Context, query: str, k: int) -> Retrieval:
                return Retrieval(query, scored(ctx, ctx.store.lexical.search(query, k), "first"), Trace(self.name))

        class Shouting:
            name = "shout"
            needs_llm = False

            def extract(self, text, title, opts, llm, cached):
                from localrag.kg.extract import Extraction
                from localrag.records import Triple
                return Extraction([Triple(title.upper(), "says", text.split()[0])], "rules")
    '''))
    monkeypatch.syspath_prepend(str(tmp_path))
    real = importlib.metadata.entry_points
    plugins = {
        "localrag.strategies": [importlib.metadata.EntryPoint("first", "localrag_test_plugin:FirstPassages",
                                                              "localrag.strategies"),
                                importlib.metadata.EntryPoint("dense", "localrag_test_plugin:FirstPassages",
                                                              "localrag.strategies"),
                                importlib.metadata.EntryPoint("broken", "localrag_test_plugin_gone:Nothing",
                                                              "localrag.strategies")],
        "localrag.extractors": [importlib.metadata.EntryPoint("shout", "localrag_test_plugin:Shouting",
                                                              "localrag.extractors")],
    }

    def entry_points(**params):
        group = params.get("group")
        return plugins[group] if group in plugins else real(**params)

    monkeypatch.setattr(importlib.metadata, "entry_points", entry_points)
    for registry in (STRATEGIES, EXTRACTORS, BACKENDS):
        registry.refresh()
    yield
    for registry in (STRATEGIES, EXTRACTORS, BACKENDS):
        registry.refresh()


def test_builtin_strategies_declare_their_name_model_need_and_settings_section():
    assert [n for n in strategy_names() if n in BUILTIN_STRATEGIES] == BUILTIN_STRATEGIES
    settings = Settings()
    needs = {}
    for name in BUILTIN_STRATEGIES:
        strategy = get_strategy(name)
        assert strategy.name == name
        assert strategy.settings_section is None or hasattr(settings, strategy.settings_section)
        needs[name] = strategy.needs_llm
    assert needs == {"dense": False, "graph": False, "hybrid": False, "lexical": False, "neuropath": True,
                     "ppr": False, "remind": True}
    assert get_strategy("neuropath").settings_section == "neuropath"
    assert get_strategy("hybrid").settings_section is None


def test_builtin_backends_and_extractors():
    assert {"llamacpp", "openai"} <= set(BACKENDS.names())
    assert {"rules", "llm", "llm+rules"} <= set(EXTRACTORS.names())
    assert backend_for(LLMSettings()) == ("llamacpp", "")
    assert backend_for(LLMSettings(url="http://127.0.0.1:9")) == ("openai", "")
    assert backend_for(LLMSettings(url="http://127.0.0.1:9", index_model="/m/x.gguf"), role="index") == \
        ("llamacpp", "/m/x.gguf")
    assert backend_for(LLMSettings(url="http://127.0.0.1:9", backend="llamacpp")) == ("llamacpp", "")
    assert not ExtractorOptions("rules").uses_llm and ExtractorOptions("llm+rules").uses_llm


def test_an_unknown_name_is_a_one_line_error_listing_the_choices():
    with pytest.raises(UnknownPlugin) as err:
        get_strategy("nope")
    assert str(err.value) == "unknown strategy 'nope'; choose one of: dense, graph, hybrid, lexical, neuropath, ppr, remind"
    with pytest.raises(LLMError) as err:  # a setting: shown by the CLI as one line, like any model that cannot load
        make_llm(LLMSettings(backend="nope"))
    assert str(err.value) == "llm.backend: unknown LLM backend 'nope'; choose one of: llamacpp, openai"
    with pytest.raises(ConfigError) as err:
        ExtractorOptions("nope")
    assert str(err.value) == "index.extractor must be one of llm, llm+rules, rules, got 'nope'"


def test_an_unknown_backend_in_the_config_is_one_line_on_the_command_line(tmp_path: Path, embedder, monkeypatch,
                                                                          capsys):
    monkeypatch.setattr(localrag.embed, "_DEFAULT", embedder)  # the CLI in process, with the session's embedder
    notes = tmp_path / "notes"
    (notes / ".localrag").mkdir(parents=True)
    (notes / "a.md").write_text("# A\n\nThe kiln at Quillhaven fires on Tuesdays.\n")
    (notes / ".localrag" / "config.toml").write_text('[llm]\nbackend = "nope"\n')
    code = main(["ask", "When does the kiln fire?", "-f", str(notes), "--strategy", "hybrid"])
    err = capsys.readouterr().err
    assert code == 1 and "Traceback" not in err
    assert " ".join(err.split()).endswith("llm.backend: unknown LLM backend 'nope'; choose one of: llamacpp, openai")


def test_a_registry_loads_a_builtin_only_when_asked():
    registry: Registry[object] = Registry("thing", "localrag.test-nothing", {"path": "pathlib:PurePosixPath"})
    assert registry.names() == ["path"]
    assert registry.get("path") is __import__("pathlib").PurePosixPath
    registry.add("extra", int)
    assert registry.names() == ["extra", "path"] and registry.get("extra") is int
    registry.remove("extra")
    assert registry.names() == ["path"]


def test_plugins_are_found_through_entry_points(plugin_module):
    assert "first" in strategy_names() and "shout" in EXTRACTORS.names()
    assert get_strategy("first").name == "first"
    assert type(get_strategy("dense")).__module__ == "localrag.retrieve.dense"  # a built-in is never replaced
    ex = extract_passage("Herons nest here.", "Marsh", ExtractorOptions("shout"))
    assert not ExtractorOptions("shout").uses_llm
    assert [(t.head, t.relation, t.tail) for t in ex.triples] == [("MARSH", "says", "Herons")]
    with pytest.raises(PluginError) as err:
        get_strategy("broken")
    assert str(err.value) == ("the strategy 'broken' (localrag.strategies entry point localrag_test_plugin_gone:Nothing) "
                              "could not be loaded: ModuleNotFoundError: No module named 'localrag_test_plugin_gone'")


class _CountingBackend:
    """A backend plugin: counts how often the model is built (it is only built when loaded)."""

    def __init__(self) -> None:
        self.built = 0
        self.llm = ScriptedLLM(lambda messages, schema, phase: "The answer [1].")

    def __call__(self, settings: LLMSettings, model: str) -> BuiltLLM:
        self.built += 1
        return BuiltLLM(self.llm, "counting backend")


@pytest.fixture
def counting_backend(monkeypatch: pytest.MonkeyPatch):
    backend = _CountingBackend()
    monkeypatch.setitem(BACKENDS._added, "counting", backend)
    return backend


@pytest.fixture
def notes_index(notes_dir: Path, settings_for, embedder):
    index = Index(settings_for(notes_dir, **{"llm.backend": "counting", "index.extractor": "rules"}), embedder)
    index.sync()
    yield index
    index.close()


@pytest.mark.parametrize("strategy", ["dense", "lexical", "hybrid", "ppr", "graph"])
def test_a_strategy_that_needs_no_model_never_loads_it(strategy, notes_index, counting_backend):
    assistant = Assistant(notes_index)
    result = assistant.ask("Which river runs through Orlinsford?", strategy=strategy, answer=False)
    assert result.retrieval.passages and result.calls == []
    assert counting_backend.built == 0 and assistant._llm is None


def test_answering_loads_the_model_from_the_configured_backend(notes_index, counting_backend):
    assistant = Assistant(notes_index)
    result = assistant.ask("Which river runs through Orlinsford?", strategy="hybrid", mode="free")
    assert counting_backend.built == 1 and assistant.model_source == "counting backend"
    assert [c.phase for c in result.calls] == ["answer"]


def test_a_plugin_strategy_that_declares_it_needs_a_model_gets_it(notes_index, counting_backend, monkeypatch):
    seen: list[object] = []

    class Asks:
        name = "asks"
        needs_llm = True
        settings_section = None

        def retrieve(self, ctx, query, k):
            seen.append(ctx.llm())
            return get_strategy("lexical").retrieve(ctx, query, k)

    monkeypatch.setitem(STRATEGIES._added, "asks", Asks)
    assistant = Assistant(notes_index)
    result = assistant.ask("Which river runs through Orlinsford?", strategy="asks", answer=False)
    assert result.retrieval.passages and counting_backend.built == 1 and len(seen) == 1


def test_a_plugin_backend_counts_as_a_given_model_for_auto_choices():
    settings = Settings()
    settings.llm.backend = "my-server"
    assert resolve_extractor(settings) == ("llm+rules", "auto: a model was given")
    size = model_size(settings.llm)
    assert size.params == 0 and size.source.startswith("unknown: a served model")
