"""A third-party strategy gets what the built-ins get: its own settings section (a config file's
[section], LOCALRAG_<SECTION>_<FIELD>, a dotted flag; a mode typo refused in one line, exit 1), and
its own trace step shown by every reader (progress line and its JSON, path facts, notes, the TUI's
path tree, the stored trace) through ``TraceEvent``'s methods, with no reader knowing the plugin.

The plugin is defined here and registered through the registry's API (``retrieve.base.register``)."""

from __future__ import annotations

import enum
import json
import shutil
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Literal

import pytest

from localrag.answer.evidence import path_facts
from localrag.api import Assistant, Index, memory_notes
from localrag.cli import main
from localrag.config import ConfigError, Settings, load_settings
from localrag.records import Retrieval, Trace
from localrag.registry import PluginError
from localrag.retrieve import get_strategy
from localrag.retrieve.base import Context, plugin_settings, register, scored, unregister
from localrag.retrieve.graph_settings import GraphSettings
from localrag.trace import TraceEvent, UnknownStep, event_json
from localrag.trace_views import StepProgress, TreeNode, TreePlace
from localrag.tui.pathtree import build_path_tree

if TYPE_CHECKING:
    from localrag.retrieve.base import Strategy

QUESTION = "Which river runs through Orlinsford?"


class Order(enum.Enum):
    BEST = "best"
    WORST = "worst"


@dataclass
class EchoSettings:
    mode: Literal["first", "second"] = "first"  # walk from the best passage, or from the second best
    hops: int = 2
    order: Order = Order.BEST


@dataclass(frozen=True)
class EchoHop(TraceEvent, step="echo_hop", strategy="echo"):
    """One hop of the echo walk: the passage it stood on and the fact it read there."""

    hop: int = 0
    passage: int = 0
    fact: str = ""

    path_part = "hop"

    def progress(self, settings: Settings) -> StepProgress:
        hops = settings.section("echo", EchoSettings).hops
        return StepProgress("echo_hop", f"echo hop {self.hop + 1} of {hops}", {"hop": self.hop, "of": hops})

    def path_facts(self) -> tuple[str, ...]:
        return (self.fact,)

    def notes(self) -> tuple[str, ...]:
        return (f"echo: hop {self.hop + 1} read passage {self.passage}",)

    def tree_node(self, place: TreePlace) -> TreeNode:
        node = TreeNode(f"Echo hop {place.hop + 1} of {place.hops}", style="bold")
        node.add(f"passage {self.passage}: {self.fact}")
        if place.last_hop:
            node.add("end of the walk", style="dim")
        return node


class Echo:
    name = "echo"
    needs_llm = False
    settings_section = "echo"
    settings_type = EchoSettings

    def retrieve(self, ctx: Context, query: str, k: int) -> Retrieval:
        cfg = ctx.section(self)
        ranked = ctx.store.lexical.search(query, max(k, cfg.hops + 1))
        if cfg.order is Order.WORST:
            ranked = ranked[::-1]
        start = 0 if cfg.mode == "first" else 1
        trace = Trace(self.name)
        walked = ranked[start:start + cfg.hops]
        for hop, (pid, _) in enumerate(walked):
            text = ctx.store.docs.passages([pid])[0].text
            trace.add(EchoHop(hop=hop, passage=pid, fact=" ".join(text.split()[:4])))
        return Retrieval(query, scored(ctx, walked + [r for r in ranked if r not in walked], self.name)[:k], trace)


@pytest.fixture
def echo():
    register("echo", Echo)
    yield Echo
    unregister("echo")


def _config(tmp_path: Path, text: str) -> Path:
    path = tmp_path / "echo.toml"
    path.write_text(text, encoding="utf-8")
    return path


def test_a_plugin_section_is_set_like_a_builtin_one(tmp_path, echo):
    assert plugin_settings()["echo"] is EchoSettings
    defaults = load_settings(tmp_path, env={})
    assert defaults.section("echo", EchoSettings) == EchoSettings()
    from_file = load_settings(tmp_path, config_file=_config(tmp_path, '[echo]\nmode = "second"\nhops = 3\n'), env={})
    assert from_file.section("echo") == EchoSettings(mode="second", hops=3)
    from_env = load_settings(tmp_path, env={"LOCALRAG_ECHO_HOPS": "4", "LOCALRAG_ECHO_ORDER": "worst"})
    assert from_env.section("echo") == EchoSettings(hops=4, order=Order.WORST)
    from_flag = load_settings(tmp_path, {"echo.mode": "second"}, env={"LOCALRAG_ECHO_MODE": "first"})
    assert from_flag.section("echo").mode == "second", "a flag wins over the environment, as for a built-in"


@pytest.mark.parametrize(("text", "message"), [
    ('[echo]\nmode = "secnd"\n', "echo.mode must be one of first, second; got 'secnd'"),
    ('[echo]\norder = "middle"\n', "echo.order must be one of best, worst; got 'middle'"),
    ('[echo]\nhops = "many"\n', "echo.hops: expected an integer, got 'many'"),
    ('[echo]\nhop = 3\n', "unknown setting echo.hop"),
    ('[ehco]\nmode = "first"\n', "unknown setting ehco"),
])
def test_a_bad_plugin_setting_is_one_line(tmp_path, echo, text, message):
    with pytest.raises(ConfigError) as err:
        load_settings(tmp_path, config_file=_config(tmp_path, text), env={})
    assert str(err.value) == message


def test_a_plugin_mode_typo_exits_1_with_one_line(tmp_path, echo, notes_dir, capsys, monkeypatch):
    fresh = tmp_path / "fresh"
    shutil.copytree(notes_dir, fresh, ignore=shutil.ignore_patterns(".localrag"))
    monkeypatch.setenv("LOCALRAG_ECHO_MODE", "secnd")
    code = main(["index", str(fresh), "--quiet"])
    err = capsys.readouterr().err.strip().splitlines()
    assert code == 1 and err == ["error: echo.mode must be one of first, second; got 'secnd'"]
    assert not (fresh / ".localrag").exists(), "the settings are checked before anything is indexed"


def test_without_the_plugin_its_section_is_unknown(tmp_path):
    with pytest.raises(ConfigError, match="^unknown setting echo$"):
        load_settings(tmp_path, config_file=_config(tmp_path, '[echo]\nmode = "first"\n'), env={})
    assert load_settings(tmp_path, env={"LOCALRAG_ECHO_MODE": "first"}).plugin_sections == {}


def test_a_plugin_cannot_take_a_builtin_section_with_its_own_type(tmp_path, echo):
    assert Settings().section("graph", GraphSettings) is not None  # ppr and graph share [graph]
    with pytest.raises(ConfigError, match=r"^\[graph\] is localrag's own section"):
        Settings().section("graph", EchoSettings)


def test_a_settings_type_that_is_not_a_dataclass_is_a_plugin_error(echo):
    class Loose(Echo):
        settings_type = dict

    register("loose", Loose)
    try:
        with pytest.raises(PluginError, match="'loose' declares settings_type"):
            plugin_settings()
    finally:
        unregister("loose")


@pytest.fixture
def echo_index(tmp_path, notes_dir, embedder, echo):
    config = _config(tmp_path, '[echo]\nmode = "second"\nhops = 3\n')
    index = Index(load_settings(notes_dir, {"index.extractor": "rules"}, env={}, config_file=config), embedder)
    index.sync()
    yield index
    index.close()


def test_every_reader_shows_the_plugins_own_step(echo_index):
    heard = []
    answer = Assistant(echo_index).ask(QUESTION, strategy="echo", answer=False, on_event=heard.append)
    trace = answer.retrieval.trace
    hops = [s for s in trace.steps if isinstance(s, EchoHop)]
    assert [h.hop for h in hops] == [0, 1, 2], "hops = 3 from the [echo] section"
    ranked = [sp.passage.id for sp in answer.retrieval.passages]
    lexical = Assistant(echo_index).retrieve(QUESTION, "lexical", 5)
    assert hops[0].passage == lexical.passages[1].passage.id != lexical.passages[0].passage.id, "mode = second"
    assert ranked[:3] == [h.passage for h in hops]
    # progress: its own line and JSON, live, with its own settings
    steps = [e for e in heard if e.label().startswith("echo hop")]
    assert [e.label() for e in steps] == ["echo hop 1 of 3", "echo hop 2 of 3", "echo hop 3 of 3"]
    assert [{k: v for k, v in e.to_json().items() if k != "elapsed_s"} for e in steps] == [
        {"event": "echo_hop", "hop": n, "of": 3} for n in range(3)]
    # the answer's path facts and notes
    assert path_facts(answer.retrieval) == " ".join(h.fact for h in hops) != ""
    assert memory_notes(trace) == [f"echo: hop {h.hop + 1} read passage {h.passage}" for h in hops]
    # the TUI's reasoning-path tree
    assert build_path_tree(trace).lines() == ["Reasoning path — echo, 3 hops"] + [
        line for h in hops for line in (f"  Echo hop {h.hop + 1} of 3", f"    passage {h.passage}: {h.fact}")
    ] + ["    end of the walk"]


def test_the_plugins_step_round_trips_and_reads_back_without_the_plugin(echo):
    trace = Trace("echo")
    trace.add(EchoHop(hop=0, passage=7, fact="the Sallow runs"))
    stored = json.loads(json.dumps(trace.to_json()))
    assert stored["steps"] == [{"step": "echo_hop", "hop": 0, "passage": 7, "fact": "the Sallow runs"}]
    assert Trace.from_json(stored).steps == trace.steps
    elsewhere = Trace.from_json({**stored, "strategy": "another"})  # a step of a plugin that is not installed
    assert isinstance(elsewhere.steps[0], UnknownStep) and event_json(elsewhere.steps[0]) == stored["steps"][0]
    assert build_path_tree(elsewhere).lines() == [
        "No reasoning path (strategy another)", "  how the passages were found",
        "    echo_hop: hop=0, passage=7, fact=the Sallow runs"]


def test_builtin_strategies_declare_their_sections_type(echo):
    settings = Settings()
    for name in ("dense", "lexical", "hybrid", "ppr", "graph", "neuropath", "remind", "echo"):
        strategy: Strategy = get_strategy(name)
        if strategy.settings_section is None:
            assert strategy.settings_type is None
        else:
            assert type(settings.section(strategy.settings_section, strategy.settings_type)) is strategy.settings_type
    assert get_strategy("neuropath").settings_type is type(settings.neuropath)
