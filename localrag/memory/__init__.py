"""ReMindRAG memory replay: read-out, enhance/penalise updates, recall DFS (ALGORITHMS.md §c.3-c.5)."""
