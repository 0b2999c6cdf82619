"""The knowledge graph: extraction (LLM and rules), grounding, pseudo-coreference, the build queue."""
