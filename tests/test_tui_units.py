"""Pure parts of the TUI: the path-tree builder, rates and ETAs, citation links, the token buffer."""

from __future__ import annotations

import threading

from localrag.records import Trace
from localrag.tui.chat import TokenBuffer, link_citations
from localrag.tui.pathtree import build_path_tree
from localrag.tui.rates import RateMeter, format_eta, format_rate


def neuropath_trace() -> Trace:
    trace = Trace("neuropath")
    trace.step("query_entities", entities=["Wenna Strake"], source="llm")
    trace.step("seeds", seeds=[{"query": "Wenna Strake", "entity": "wenna strake", "id": 4, "sim": 0.97}])
    trace.step("memory", recalled_edges=2, recalled_paths=["wenna strake->mentored by->ilse"], skipped_rounds=0)
    trace.step("round", round=1, g="Who mentors the leader of Driftcount?",
               candidates=[{"id": 0, "text": "driftcount->led by->wenna strake; ", "sim": 0.71, "docs": [3]},
                           {"id": 1, "text": "driftcount->funded by->kelpwright; ", "sim": 0.40, "docs": [5]}],
               selected=[0], expand=[0], chain="Driftcount is led by Wenna Strake",
               requirement="who is Wenna Strake's guild mentor", fallback="", **{"continue": 1})
    trace.step("round", round=2, g="who is Wenna Strake's guild mentor",
               candidates=[{"id": 0, "text": "driftcount->led by->wenna strake->mentored by->ilse varnhagen; ",
                            "sim": 0.8, "docs": [3, 9], "recalled": True}],
               selected=[0], expand=[], chain="... mentored by Ilse Varnhagen", requirement="", **{"continue": 0})
    trace.step("completion", path_docs=[3, 9], query="q")
    return trace


def test_path_tree_shows_hops_kept_facts_and_requirements() -> None:
    tree = build_path_tree(neuropath_trace())
    text = "\n".join(tree.lines())
    assert tree.label == "Reasoning path — neuropath, 2 hops"
    labels = [c.label for c in tree.children]
    assert labels[:3] == ["Question entities: Wenna Strake (llm)", "Seeds (question entities → graph entities)",
                          "Memory: recalled 2 edges"]
    hop1 = tree.children[labels.index("Hop 1")]
    hop1_text = "\n".join(hop1.lines())
    assert "  kept (1)\n    driftcount->led by->wenna strake  (sim 0.71)" in hop1_text
    assert "to expand (1)" in hop1_text and "funded by" not in hop1_text.split("kept")[1]
    assert "expansion requirement: who is Wenna Strake's guild mentor" in hop1_text
    assert "→ continue to the next hop" in hop1_text
    assert "fallback" not in hop1_text  # empty values are left out
    hop2 = "\n".join(tree.children[labels.index("Hop 2")].lines())
    assert "ilse varnhagen  (sim 0.80)  · recalled from memory" in hop2 and "■ stop: enough found" in hop2
    assert "wenna strake → wenna strake" not in text and "Wenna Strake → wenna strake  (sim 0.97)" in text
    assert labels[-1].startswith("completion: path_docs=3, 9")


def test_strategy_without_paths_gets_a_friendly_root() -> None:
    trace = Trace("hybrid")
    trace.step("rrf", dense_hits=50, lexical_hits=12, rrf_k=60)
    tree = build_path_tree(trace)
    assert tree.label == "No reasoning path (strategy hybrid)"
    assert tree.lines()[2].strip() == "rrf: dense_hits=50, lexical_hits=12, rrf_k=60"
    assert build_path_tree(Trace("dense")).lines() == ["No reasoning path (strategy dense)"]


def test_rounds_with_unknown_ids_or_missing_keys_do_not_crash() -> None:
    trace = Trace("neuropath")
    trace.step("round", round=1, g="q", candidates=[], note="no candidate paths")
    trace.step("round", selected=[7], candidates=["not a dict"])
    lines = build_path_tree(trace).lines()
    assert "      nothing kept" in lines and "      path 7" in lines and "    note: no candidate paths" in lines


def test_rate_meter_over_a_window() -> None:
    now = [0.0]
    meter = RateMeter(clock=lambda: now[0], window_s=10)
    assert meter.rate() is None and meter.eta_s(100) is None
    for t, done in ((0, 0), (1, 10), (2, 20)):
        now[0] = t
        meter.add(done)
    assert meter.rate() == 10.0 and meter.eta_s(100) == 8.0
    now[0] = 30.0
    meter.add(50)  # old samples fall out of the window: the rate follows the recent pace
    now[0] = 31.0
    meter.add(51)
    assert meter.rate() == 1.0
    meter.add(3)  # a new run restarts the count
    assert meter.rate() is None
    assert format_eta(None) == "ETA —" and format_eta(75) == "ETA 1:15" and format_eta(3725) == "ETA 1:02:05"
    assert format_rate(None, "passages") == "— passages/s" and format_rate(2.345, "p") == "2.3 p/s"
    assert format_rate(123.4, "p") == "123 p/s"


def test_citation_links_only_for_given_passages() -> None:
    assert link_citations("A [1][2], not [9].", 5) == "A [[1]](cite:1)[[2]](cite:2), not [9]."


def test_token_buffer_signals_once_per_burst() -> None:
    buf = TokenBuffer()
    signals = []

    def produce() -> None:
        for i in range(1000):
            if buf.push(f"{i} "):
                signals.append(i)

    thread = threading.Thread(target=produce)
    thread.start()
    drained = []
    while thread.is_alive() or signals:
        if signals:
            signals.pop()
            drained.append(buf.drain())
    thread.join()
    drained.append(buf.drain())
    assert "".join(drained) == "".join(f"{i} " for i in range(1000))


def test_presentation_formats_through_its_clock_and_the_frozen_one_leaves_figures_out() -> None:
    import datetime as dt

    from conftest_tui import FrozenPresentation
    from localrag.answer.events import RetrievalStarted
    from localrag.tui.chat import steps_text
    from localrag.tui.presentation import Presentation

    shown = Presentation(clock=lambda: dt.datetime(2026, 1, 2, 3, 4, 5).timestamp())
    assert shown.time_of_day() == "03:04:05 "
    assert shown.seconds(1.234) == "1.23 s" and shown.seconds(1.25, digits=1) == "1.2 s"
    assert shown.rate(2.0, 5.0, "passages") == "2.0 passages/s  ETA 0:05"
    assert shown.size(123_456) == "120.6 KB" and shown.folder("/a/notes") == "/a/notes"
    steps = [RetrievalStarted(elapsed_s=0.123, strategy="hybrid")]
    assert steps_text(steps, shown).plain == "0.12 s retrieving (hybrid)"

    frozen = FrozenPresentation()
    assert frozen.time_of_day() == "" and frozen.seconds(1.0) is None and frozen.rate(2.0, 5.0, "x") is None
    assert frozen.size(1) is None and frozen.date(0.0) is None and not frozen.cursor_blink
    assert frozen.folder("/a/notes") == "notes" and frozen.database("/a/notes/.localrag/index.db") == ".localrag/index.db"
    assert steps_text(steps, frozen).plain == "retrieving (hybrid)"
