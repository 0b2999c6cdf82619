"""Typed trace events: one frozen dataclass per kind of step a strategy records, and their one JSON form.

A strategy declares its events next to its code (``retrieve/neuropath/events.py``,
``retrieve/remind/events.py``, the simple strategies in their own modules) by subclassing
``TraceEvent`` with the ``step`` name and the strategy it belongs to. A step shows itself
through the methods of ``TraceEvent`` (its progress line, its node of the reasoning-path
tree, the path facts and notes the answer reads: localrag/trace_views.py has their plain
types), which a strategy's events override; the readers (TUI path tree, the progress events,
the answer, memory notes) call those and never import a strategy's events. ``event_json`` is the
only serialiser and ``event_from_json`` the only parser (docs/trace.md "Trace JSON"):
``{"step": <name>, <field>: <value>, ...}``, nested records as objects, tuples as lists.
A step the parser does not know (a newer localrag, a third-party strategy) comes back as an
``UnknownStep`` that keeps its data, so a reader never fails on it.
"""

from __future__ import annotations

import dataclasses
import types
import typing
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, ClassVar, Mapping

from localrag.trace_views import StepProgress, TreeNode, TreePlace, plural, short, shown

if TYPE_CHECKING:
    from localrag.config import Settings

_JSON_NAME = "json_name"  # field metadata: the key in JSON when the field's name cannot be it ("continue")
_OMIT = "omit"  # field metadata: leave the key out when the value is None ("none") or empty ("empty")

_EVENTS: dict[tuple[str, str], type["TraceEvent"]] = {}
ANY_STRATEGY = "*"


def optional(**kw: Any) -> Any:
    """A field that is left out of the JSON while it is None (the key was absent before)."""
    return field(default=None, metadata={_OMIT: "none", **kw})


def omit_empty(default: Any = "") -> Any:
    """A field that is left out of the JSON while it is empty."""
    if isinstance(default, (list, dict, set)):
        raise TypeError("use an immutable default (a tuple)")
    return field(default=default, metadata={_OMIT: "empty"})


def renamed(json_name: str, default: Any = None) -> Any:
    """A field whose JSON key cannot be its name (a Python keyword); None leaves it out."""
    return field(default=default, metadata={_JSON_NAME: json_name, _OMIT: "none"})


@dataclass(frozen=True)
class TraceEvent:
    """One step of a strategy's trace. Subclasses say ``step`` and the ``strategy`` that emits them."""

    step: ClassVar[str] = "step"
    # its part of the reasoning path the TUI draws: "hop" (one round: counted, numbered), "path" (the
    # path walked), "" (neither; a trace without either shows "No reasoning path")
    path_part: ClassVar[str] = ""

    def __init_subclass__(cls, step: str = "", strategy: str = ANY_STRATEGY, **kw: Any) -> None:
        super().__init_subclass__(**kw)
        if step:
            cls.step = step
            _EVENTS[(strategy, step)] = cls

    def fields(self) -> dict[str, Any]:
        """The event's data as JSON values, in declaration order (what a generic view shows)."""
        return _record_json(self)

    def progress(self, settings: "Settings") -> StepProgress:
        """The step's progress line while the question runs; by default its name."""
        name = event_name(self)
        return StepProgress("step", name, {"name": name})

    def path_facts(self) -> tuple[str, ...]:
        """The reasoning chain and path facts the step found, which the answer's evidence ranking reads."""
        return ()

    def notes(self) -> tuple[str, ...]:
        """Lines the answer shows about this step (what memory recalled and learned)."""
        return ()

    def ranking_inputs(self) -> dict[str, Any]:
        """What the step handed to the final ranking (seeds, path documents, walked passages), as JSON
        values by name: a benchmark record keeps them so the ranking can be replayed offline."""
        return {}

    def memory_figures(self) -> dict[str, int]:
        """The edge-memory figures the step holds, by name (recalled_edges, from_knn, skipped_rounds,
        tokens_saved_est, enhanced, penalised: those it has); {} for a step that is not memory's."""
        return {}

    def tree_node(self, place: TreePlace) -> TreeNode:
        """The step's node in a trace with a reasoning path; by default its ``plain_node``."""
        return self.plain_node()

    def plain_node(self) -> TreeNode:
        """The step on one line, its name and fields (how a trace without a reasoning path shows it)."""
        data = {k: v for k, v in self.fields().items() if shown(v)}
        name = event_name(self)
        return TreeNode(f"{name}: {short(data)}" if data else name)


@dataclass(frozen=True)
class UnknownStep(TraceEvent):
    """A step no loaded strategy declares (a newer localrag's, a plugin's): its name and raw data."""

    name: str = "step"
    data: Mapping[str, Any] = field(default_factory=dict)

    def fields(self) -> dict[str, Any]:
        return dict(self.data)


@dataclass(frozen=True)
class FallbackStep(TraceEvent, step="fallback"):
    """The strategy could not do its own work and ranked another way (no query entity, ...)."""

    reason: str = ""


@dataclass(frozen=True)
class FeedbackStep(TraceEvent, step="feedback"):
    """The user's verdict changed how this question was retrieved (api: memory not read)."""

    note: str = ""


def event_name(event: TraceEvent) -> str:
    return event.name if isinstance(event, UnknownStep) else event.step


def event_json(event: TraceEvent) -> dict[str, Any]:
    """The one JSON form of a trace event: ``{"step": name, **fields}``."""
    return {"step": event_name(event), **event.fields()}


def event_from_json(strategy: str, data: Mapping[str, Any]) -> TraceEvent:
    """A stored step back as its type (by strategy and step name); unknown or malformed: ``UnknownStep``."""
    name = str(data.get("step", "step"))
    rest = {k: v for k, v in data.items() if k != "step"}
    cls = _EVENTS.get((strategy, name)) or _EVENTS.get((ANY_STRATEGY, name))
    if cls is None:
        return UnknownStep(name=name, data=rest)
    try:
        return _record_from_json(cls, rest)
    except (TypeError, ValueError):
        return UnknownStep(name=name, data=rest)


# -- the record <-> JSON conversion, driven by the dataclass fields and their type hints --------
def _key(f: dataclasses.Field) -> str:
    return f.metadata.get(_JSON_NAME, f.name)


def _omitted(f: dataclasses.Field, value: Any) -> bool:
    how = f.metadata.get(_OMIT)
    return (how == "none" and value is None) or (how == "empty" and value in ("", None, (), [], {}))


def _record_json(record: Any) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for f in dataclasses.fields(record):
        value = getattr(record, f.name)
        if not _omitted(f, value):
            out[_key(f)] = to_json_value(value)
    return out


def to_json_value(value: Any) -> Any:
    """Nested records as objects, tuples and lists as lists, mappings with their values converted."""
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        return _record_json(value)
    if isinstance(value, (list, tuple)):
        return [to_json_value(v) for v in value]
    if isinstance(value, Mapping):
        return {k: to_json_value(v) for k, v in value.items()}
    return value


def _record_from_json(cls: type, data: Mapping[str, Any]) -> Any:
    if not isinstance(data, Mapping):
        raise TypeError(f"{cls.__name__} from {type(data).__name__}")
    hints = typing.get_type_hints(cls)
    kw = {}
    for f in dataclasses.fields(cls):
        key = _key(f)
        if key in data:
            kw[f.name] = _from_json_value(hints[f.name], data[key])
    return cls(**kw)


def _from_json_value(hint: Any, value: Any) -> Any:
    origin, args = typing.get_origin(hint), typing.get_args(hint)
    if origin in (typing.Union, types.UnionType):
        if value is None:
            return None
        inner = [a for a in args if a is not type(None)]
        return _from_json_value(inner[0], value) if len(inner) == 1 else value
    if dataclasses.is_dataclass(hint):
        return _record_from_json(hint, value)
    if origin is tuple:
        if not isinstance(value, (list, tuple)):
            raise TypeError(f"a list expected, got {type(value).__name__}")
        item = args[0] if args else Any
        return tuple(_from_json_value(item, v) for v in value)
    return value


@dataclass(frozen=True)
class MemoryEvent(TraceEvent, step="memory"):
    """What a strategy's edge memory recalled and learned; NeuroPath and ReMindRAG extend it."""

    recalled_edges: int = 0

    def savings(self) -> tuple[int, int]:
        """(tracking rounds skipped, tokens saved, estimated) thanks to the recalled memory."""
        return 0, 0

    def learned(self) -> tuple[int, int]:
        """(edges enhanced, edges penalised) by this question."""
        return 0, 0

    def memory_figures(self) -> dict[str, int]:
        (skipped, saved), (enhanced, penalised) = self.savings(), self.learned()
        return {"recalled_edges": self.recalled_edges, "skipped_rounds": skipped, "tokens_saved_est": saved,
                "enhanced": enhanced, "penalised": penalised}

    def notes(self) -> tuple[str, ...]:
        """'memory: recalled 3 edges, skipped 1 round, ~1,240 tokens saved; learned: +2 / −0 edges'."""
        parts = [f"recalled {self.recalled_edges} edges"]
        skipped, saved = self.savings()
        if skipped:
            parts.append(f"skipped {plural(skipped, 'round')}")
        if saved:
            parts.append(f"~{saved:,} tokens saved")
        enhanced, penalised = self.learned()
        return ("memory: " + ", ".join(parts) + f"; learned: +{enhanced} / −{penalised} edges",)

    def tree_node(self, place: TreePlace) -> TreeNode:
        node = TreeNode(f"Memory: recalled {plural(self.recalled_edges, 'edge')}", style="magenta")
        for key, value in self.fields().items():
            if key != "recalled_edges" and shown(value):
                node.add(f"{key}: {short(value)}")
        return node


@dataclass(frozen=True)
class SeedsEvent(TraceEvent):
    """Where a strategy's graph walk starts; each strategy's seeds step extends it."""

    def seed_names(self) -> tuple[str, ...]:
        return ()

    def progress(self, settings: "Settings") -> StepProgress:
        names = self.seed_names()
        return StepProgress("seeds", f"{plural(len(names), 'seed')}: " + ", ".join(names[:5]), {"names": names})
