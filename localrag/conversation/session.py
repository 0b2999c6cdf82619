"""A conversation: a stored session, its turns, and the follow-up policy that uses them."""

from __future__ import annotations

from typing import TYPE_CHECKING, Callable

from localrag.config import ConversationSettings, Settings
from localrag.conversation.records import Resolution
from localrag.errors import LocalragError
from localrag.records import Session, Turn, TurnCitation
from localrag.conversation.resolve import resolve_rules
from localrag.llm.base import LLM, LLMError, Message
from localrag.llm.prompts_chat import ChatTurn, history_messages
from localrag.conversation.rewrite import needs_resolution, resolve_llm

if TYPE_CHECKING:
    from localrag.answer import Answer
    from localrag.store.db import Store


class SessionNotFound(LocalragError, LookupError):
    """--continue with no earlier conversation, or a session id that does not exist."""

    internal = True


def resolve_resolver(settings: Settings) -> tuple[str, str]:
    """conversation.resolver with "auto" decided by measurement (docs/benchmarks.md "Conversations"):
    the rules resolver, because on the MuSiQue follow-up sets the model rewrites measured
    (the bundled SmolLM2, Qwen2.5-Coder-0.5B) did not beat it; "llm" is there for a capable model."""
    chosen = settings.conversation.resolver
    if chosen != "auto":
        return chosen, "configured"
    return "rules", "auto: the rules resolver (model rewrites measured did not beat it)"


def approx_tokens(text: str) -> int:
    """~4 characters a token (the budget is a bound, not a bill; no tokenizer needed)."""
    return max(1, (len(text) + 3) // 4)


class Conversation:
    """One session of the index: resolves follow-ups against its turns and records new ones."""

    def __init__(self, store: "Store", session: Session, settings: Settings):
        self.store = store
        self.session = session
        self.options: ConversationSettings = settings.conversation
        self.resolver, self.resolver_reason = resolve_resolver(settings)
        self._turns: list[Turn] = store.sessions.turns(session.id)
        self.on_resolved: Callable[[Resolution], None] | None = None  # e.g. print "searched for: …" at once

    # -- opening -------------------------------------------------------------------------
    @classmethod
    def open(cls, store: "Store", settings: Settings, *, name: str | None = None, last: bool = False,
             session_id: int | None = None) -> "Conversation":
        """The named session (created if new), the last used one (``last``), a given id, or a new one."""
        if session_id is not None:
            session = store.sessions.get(session_id)
            if session is None:
                raise SessionNotFound(f"no conversation #{session_id} in this index")
        elif name:
            session = store.sessions.by_name(name) or store.sessions.create(name)
        elif last:
            session = store.sessions.latest()
            if session is None:
                raise SessionNotFound("no earlier conversation in this index: ask with --session NAME to start one")
        else:
            session = store.sessions.create(None)
        return cls(store, session, settings)

    @property
    def turns(self) -> list[Turn]:
        return list(self._turns)

    @property
    def uses_llm(self) -> bool:
        return self.resolver == "llm"

    def history(self) -> list[Turn]:
        return self._turns[-self.options.history_turns:] if self.options.history_turns > 0 else []

    # -- one turn ------------------------------------------------------------------------
    def resolve(self, question: str, llm_factory: Callable[[], LLM] | None = None) -> Resolution:
        """What retrieval searches for: the question made self-contained from the turns before it."""
        resolution = self._resolve(question, llm_factory)
        if self.on_resolved is not None:
            self.on_resolved(resolution)
        return resolution

    def _resolve(self, question: str, llm_factory: Callable[[], LLM] | None) -> Resolution:
        history = self.history()
        if self.resolver == "off":
            return Resolution(question, question, "unchanged", "conversation.resolver is off")
        if self.resolver == "llm" and llm_factory is not None:
            if not history or not needs_resolution(question):
                return resolve_rules(question, history)  # no model needed (nor loaded) for these
            try:
                llm = llm_factory()
            except LLMError as exc:  # no model: the rules still resolve the follow-up
                rules = resolve_rules(question, history)
                return Resolution(rules.question, rules.query, rules.method, f"no model for the rewrite ({exc})")
            return resolve_llm(question, history, llm, self.store.cache)
        return resolve_rules(question, history)

    def prompt_history(self, count_tokens: Callable[[str], int] = approx_tokens) -> list[Message]:
        """The earlier turns for the answer prompt, within conversation.history_tokens."""
        turns = [ChatTurn(t.question, t.answer) for t in self.history()]
        return history_messages(turns, self.options.history_tokens, count_tokens)

    def record(self, question: str, resolution: Resolution, answer: "Answer") -> Turn:
        cites = tuple(TurnCitation(c.number, c.location, c.passage.title) for c in answer.citations if c.cited)
        turn = Turn(self.session.id, 0, question, resolution.query, answer.text, cites, answer.strategy,
                    answer.query_id, resolution.method)
        stored = self.store.sessions.add_turn(turn)
        self._turns.append(stored)
        refreshed = self.store.sessions.get(self.session.id)
        if refreshed is not None:
            self.session = refreshed
        return stored

