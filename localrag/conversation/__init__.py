"""Conversations: sessions of turns in the index, follow-up resolution, history for the answer prompt.

Core code: never imports Textual. ``Conversation`` (session.py) is what the CLI and the TUI pass to
``Assistant.ask``; ``resolve_rules`` (resolve.py) is the no-LLM resolver, ``resolve_llm`` (rewrite.py)
the bounded model rewrite with the rules as fallback.
"""

from localrag.conversation.records import Resolution
from localrag.records import Session, Turn, TurnCitation
from localrag.conversation.resolve import needs_resolution, resolve_rules
from localrag.conversation.session import Conversation, SessionNotFound

__all__ = ["Conversation", "Resolution", "Session", "SessionNotFound", "Turn", "TurnCitation", "needs_resolution",
           "resolve_rules"]
