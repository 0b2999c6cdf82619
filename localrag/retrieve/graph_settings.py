"""The entity graph's settings, the config's [graph] section (localrag/config.py reads it into
``Settings.graph``): the `ppr` (ppr.py) and `graph` (graph.py) strategies share it, NeuroPath and
remind read it through the `graph` fusion, and the index reads its coreference settings.

Kept apart from the strategies' code: config.py imports this module, so it imports nothing heavy.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass
class GraphSettings:
    """The `ppr` strategy (HippoRAG-style personalised PageRank over the entity graph)."""

    ppr_damping: float = 0.5  # HippoRAG's restart probability is 1 - damping
    ppr_query_knn: int = 3  # entities nearest to the whole query added as seeds
    ppr_span_min_sim: float = 0.75  # a query span links to its nearest entity only this close
    ppr_knn_min_sim: float = 0.5  # whole-query neighbours below this are not seeds
    ppr_pool: int = 100  # dense candidates used to break ties and fill the list
    # pseudo-coreference of the graph's entities (store/coref.py), which every graph strategy walks: the
    # coref_k nearest phrases, the phrase itself included, kept at cosine >= coref_threshold
    coref_k: int = 5
    coref_threshold: float = 0.8
    # `graph` (localrag/retrieve/graph.py): weighted reciprocal-rank fusion of dense, lexical and a
    # hub-damped PPR list, chosen on 2wiki dev, HotpotQA-100 dev and the dendron dev half (`localrag
    # bench fusion choose`): within a point of the best single retriever's recall@5 on each, then the
    # best mean recall@5, ties to recall@2 (docs/benchmarks.md "Retrieval: the `graph` fusion")
    fusion_dense: float = 1.0
    fusion_lexical: float = 1.0
    fusion_ppr: float = 2.0
    fusion_rrf_k: int = 5
    fusion_ppr_focus: float = 0.1  # the PPR list counts fully from this seed focus up, in proportion below (0: always)
    # the walk's list counts fully only when its first passage is among the first `corroboration_pool` of the
    # dense or the lexical list, else this share of it (localrag/retrieve/graph.py "corroboration")
    fusion_ppr_uncorroborated: float = 0.25
    fusion_corroboration_pool: int = 10
    # the BM25 list counts fully when its first score is `lexical_peak` times its fifth, this share of it when
    # its head is flat (the question's words are everywhere) while the dense list's first cosine beats its fifth
    # by `dense_lead` (cosines on MiniLM's scale), linearly between (localrag/retrieve/graph.py "Lexical confidence")
    fusion_lexical_flat: float = 0.5
    fusion_lexical_peak: float = 1.5
    fusion_dense_lead: float = 0.02
    # each folder the question names adds the dense ranking of its passages, weighted by this x the folder's
    # rarity (1 - its share of the notes) (localrag/retrieve/graph.py "Named folders"; chosen on the tldr
    # tuning half among 0, 0.5, 1 and 2, docs/benchmarks.md "Notes suite: retrieval"; 0 = off)
    fusion_folder: float = 2.0
    ppr_entity_damping: float = 1.0  # PPR mass of an entity / |passages mentioning it| ** this
    ppr_passage_damping: float = 0.5  # a passage's PPR score / |entities it mentions| ** this
    # a question that asks two things ("…, and how do I …") is ranked whole and part by part, fused
    # (localrag/retrieve/parts.py; docs/benchmarks.md "Retrieval: two questions in one")
    split_questions: bool = True
    # after the passages the answer reads (answer.passages), a note's later passages count this much
    # less each, so a long chapter does not fill the list with itself (docs/benchmarks.md "Notes
    # suite: retrieval"; 1 = off)
    note_spread: float = 0.7
