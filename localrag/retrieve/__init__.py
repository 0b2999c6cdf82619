"""Retrieval strategies: each takes a query and returns a Retrieval (ranked passages + trace)."""

from localrag.retrieve.base import Context, Strategy, get_strategy, strategy_names

__all__ = ["Context", "Strategy", "get_strategy", "strategy_names"]
