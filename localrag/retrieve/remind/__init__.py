"""ReMindRAG (NeurIPS 2025): LLM-guided graph traversal with memory replay.

graph (the passage/entity graph with edge memories) → dfs (the memory-recalled expansion)
→ walk (LLM-chosen moves, judged sufficient or not) with calls (the bounded model calls);
strategy.py assembles them and replays what the walk taught into the edge memory.
"""

from localrag.retrieve.remind.strategy import Remind

__all__ = ["Remind"]
