"""ReMindRAG's LLM-guided walk (docs/algorithms.md "ReMindRAG: query
pipeline", steps 5-7) on localrag's graph.

Per iteration, at the current node c:
- c is an entity with an uncollected passage that mentions it: move into the best one
  (highest w + query similarity) without an LLM call (the exploitation shortcut, 7b);
- otherwise the model chooses among c's unexplored neighbours (c1…, w shown next to each:
  R10), a visited node that still has unexplored neighbours (b1…: backtracking), or stop;
  an invalid choice gets a corrective retry, and after ``choice_attempts`` bad replies the
  walk stops and its path is not used to update memory (as in the released code).
After a move that collected a passage the sufficiency judge runs; moves that collect
nothing (into an entity, or back) are not judged, since the passages did not change.
Hard caps (R5): ``max_jumps`` moves to new nodes, ``max_iterations`` loop turns (0 = 2 ×
max_jumps), and the call budget (``Budget``), whichever comes first.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from localrag.ingest.chunker import count_tokens
from localrag.llm.prompts_remind import STOP, ChunkView, OptionView, render_chunks
from localrag.retrieve.remind.calls import Budget, BudgetSpent, choose_next, judge, summarise
from localrag.retrieve.remind.dfs import Step
from localrag.retrieve.remind.events import JudgeStep, MoveOption, MoveStep, SummaryStep
from localrag.retrieve.remind.graph import ENTITY, PASSAGE, Candidate, Node, RemindGraph
from localrag.retrieve.remind.settings import RemindSettings
from localrag.records import Trace

PREVIEW_CHARS = 120  # a candidate passage is shown by its first characters, like ReMindRAG's anchor titles


@dataclass
class WalkState:
    seeds: list[Node]
    visited: set[Node]
    order: list[Node]  # visit order, seeds first
    collected: list[int]  # passage ids in collection order
    steps: list[Step]
    current: Node
    jumps: int = 0
    iterations: int = 0
    stop: str = ""
    sufficient: bool = False
    recall_trusted: bool = False  # the walk was skipped: memory recall was strong enough on its own
    path_trusted: bool = True  # False after a run of invalid choices: no memory update from this walk
    summaries: dict[int, str] = field(default_factory=dict)


class RemindWalk:
    def __init__(self, graph: RemindGraph, budget: Budget, question: str, cfg: RemindSettings, trace: Trace,
                 state: WalkState):
        self.g, self.budget, self.q, self.cfg, self.trace, self.st = graph, budget, question, cfg, trace, state

    @property
    def max_iterations(self) -> int:
        return self.cfg.max_iterations or 2 * self.cfg.max_jumps

    # -- the loop ------------------------------------------------------------------------------
    def run(self) -> WalkState:
        st = self.st
        try:
            for pid in list(st.collected):
                self._summarise(pid)
            if st.collected and self._judge("seeds and memory"):
                st.stop, st.sufficient = "sufficient before any move", True
                return st
            while not st.stop:
                if st.jumps >= self.cfg.max_jumps:
                    st.stop = f"max_jumps ({self.cfg.max_jumps}) reached"
                elif st.iterations >= self.max_iterations:
                    st.stop = f"max_iterations ({self.max_iterations}) reached"
                else:
                    st.iterations += 1
                    self._iterate()
        except BudgetSpent as exc:
            st.stop = str(exc)
        return st

    def _iterate(self) -> None:
        st = self.st
        here = st.current
        cands = self.g.candidates(here, st.visited)
        if here.kind == ENTITY:
            into = [c for c in cands if c.edge.dst.kind == PASSAGE]
            if into:
                self._move(into[0], "shortcut", {})
                return
        back = self._back_options(here)
        if not cands and not back:
            st.stop = "nothing left to explore"
            return
        shown = cands[: self.cfg.max_candidates]
        options = [OptionView(f"c{i + 1}", self._node_view(c.edge.dst), self.g.describe(c.edge), c.weight)
                   for i, c in enumerate(shown)]
        backs = [OptionView(f"b{i + 1}", self.g.label(n), "visited; has unexplored neighbours") for i, n in enumerate(back)]
        choice = choose_next(self.budget, self.q, self.g.label(here), self._walk_lines(), self._chunks(), options,
                             backs, list(st.collected), self.cfg.choice_attempts)
        record = {"candidates": tuple(MoveOption(o.id, o.node, o.via, round(o.weight or 0.0, 4)) for o in options),
                  "back": tuple(o.node for o in backs), "choice": choice.option, "reason": choice.reason,
                  "attempts": choice.attempts, "errors": tuple(choice.errors)}  # MoveStep's fields of a model turn
        if not choice.ok:
            st.stop = f"no valid choice in {choice.attempts} attempts"
            st.path_trusted = False
            self._log(here, "choice", None, record)
        elif choice.option == STOP:
            st.stop = "the model chose to stop"
            self._log(here, "choice", None, record)
        elif choice.option.startswith("b"):
            st.current = back[int(choice.option[1:]) - 1]
            self._log(here, "backtrack", st.current, record)
        else:
            self._move(shown[int(choice.option[1:]) - 1], "choice", record)

    def _move(self, cand: Candidate, origin: str, record: dict) -> None:
        st = self.st
        here, dst = st.current, cand.edge.dst
        st.steps.append(Step(cand.edge, origin, cand.weight))
        st.visited.add(dst)
        st.order.append(dst)
        st.current = dst
        st.jumps += 1
        self._log(here, origin, dst, record | {"w": round(cand.weight, 4)})
        if dst.kind == PASSAGE:
            st.collected.append(dst.id)
            self._summarise(dst.id)
            if self._judge(f"move {st.jumps}"):
                st.stop, st.sufficient = "sufficient", True

    # -- helpers ---------------------------------------------------------------------------------
    def _back_options(self, here: Node) -> list[Node]:
        """Visited nodes other than ``here`` that still have an unexplored neighbour, latest last."""
        open_nodes = [n for n in self.st.order if n != here and any(e.dst not in self.st.visited for e in self.g.edges(n))]
        return open_nodes[-self.cfg.max_candidates:]

    def _node_view(self, node: Node) -> str:
        if node.kind == ENTITY:
            return self.g.label(node)
        p = self.g.passage_record(node.id)
        preview = " ".join(p.text.split())[:PREVIEW_CHARS] if p else ""
        return f"{self.g.label(node)}: «{preview}…»"

    def _walk_lines(self) -> list[str]:
        return [self.g.step_line(s.edge) for s in self.st.steps]

    def chunk_views(self) -> list[ChunkView]:
        out = []
        for pid in self.st.collected:
            p = self.g.passage_record(pid)
            if p is not None:
                out.append(ChunkView(pid, self.g.name(Node(PASSAGE, pid)), self.st.summaries.get(pid, p.text)))
        return out

    def _chunks(self) -> str:
        return render_chunks(self.chunk_views(), self.cfg.prompt_passage_chars, self.cfg.prompt_chars)

    def _summarise(self, pid: int) -> None:
        """Query-aware summary of a passage longer than summary_threshold_tokens (ours rarely are)."""
        p = self.g.passage_record(pid)
        if p is None or pid in self.st.summaries or count_tokens(p.text) <= self.cfg.summary_threshold_tokens:
            return
        earlier = render_chunks([c for c in self.chunk_views() if c.id != pid], self.cfg.prompt_passage_chars,
                                self.cfg.prompt_chars // 2)
        view = ChunkView(pid, self.g.name(Node(PASSAGE, pid)), p.text)
        self.st.summaries[pid] = summarise(self.budget, self.q, view, earlier, self.cfg.summary_max_tokens)
        self.trace.add(SummaryStep(passage=pid, tokens=count_tokens(p.text), summary=self.st.summaries[pid][:300]))

    def _judge(self, after: str) -> bool:
        names = [self.g.name(n) for n in self.st.order if n.kind == ENTITY]
        verdict = judge(self.budget, self.q, names, self._chunks())
        self.trace.add(JudgeStep(after=after, collected=tuple(self.st.collected),
                                 sufficient="yes" if verdict.sufficient else "no", reason=verdict.reason,
                                 usable=verdict.ok))
        return verdict.sufficient

    def _log(self, here: Node, kind: str, to: Node | None, record: dict) -> None:
        self.trace.add(MoveStep(n=self.st.iterations, kind=kind, at=self.g.label(here),
                                to=self.g.label(to) if to else "", jumps=self.st.jumps, **record))
