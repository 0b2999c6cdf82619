"""`graph`: personalised PageRank over the entity graph, dense and lexical retrieval, fused. No LLM.

No single retriever is best everywhere (docs/benchmarks.md "Retrieval: the `graph` fusion"): PPR
leads on 2Wiki, lexical and hybrid on HotpotQA and on real notes, where plain PPR
collapses. The three rankings are fused by weighted reciprocal rank
(``settings.graph.fusion_*``, chosen on the dev sets).

Why PPR collapses on real notes, and the damping that fixes it: a note vault has hub
notes (a style guide, release notes, an index page) that mention hundreds of entities,
and hub entities ("note", "vault", "Dendron") that link to everything. The walk's mass
pools in the hubs, and a passage's score (the mass of the entities it mentions) grows with
how many entities it mentions. Two read-out dampings undo that without changing the walk:
each entity's mass is divided by ``|passages mentioning it| ** ppr_entity_damping`` (an
IDF-like weight: mass on an entity every note mentions says little), and a passage's sum
by ``|entities it mentions| ** ppr_passage_damping`` (a long list of mentions is not
evidence). Only passages the walk reached enter the PPR list, so it never repeats the dense
order it falls back to. And the PPR list's weight follows the walk's *seed focus* (the best
seed's weight over the passages mentioning it, ``seed_focus``): full weight from
``fusion_ppr_focus`` up, less below, so a walk that starts only from hub entities (a notes
question's "dendron", "note", "vault") barely moves the dense and lexical order.

Corroboration: on Wikipedia a named entity is the subject of its own article, so the walk's
first passage is one the text retrievers find too; in notes a named entity is most often a
passing mention ("cisco" in a VPN client's page, "arch" in the `arch` command's), and the walk
from it lands on notes the question is not about. The PPR list therefore counts fully only
when its first passage is among the first ``fusion_corroboration_pool`` of the dense or the
lexical list, and ``fusion_ppr_uncorroborated`` of its weight otherwise.

Lexical confidence: on a folder of notes that look alike (7,425 command pages that all say
"file", "command", "run") a paraphrased question's words are everywhere, BM25's head is flat
and its order is noise that pulls the right note down. The BM25 list's weight follows the
ratio of its first score to its fifth: full from ``fusion_lexical_peak`` up,
``fusion_lexical_flat`` at 1 (a flat head), linear between — but only while the dense list has a
leader (its first cosine beats its fifth by ``fusion_dense_lead``): when both heads are flat,
neither list knows better and both count fully.

Named folders: a note's folders say what it is about ("windows/ping.md"), but neither the vectors nor
BM25 see them. For each folder a question names (``text/folders.py``: "… ping send on Windows …"), the
dense ranking of that folder's passages is one more list, weighted by ``fusion_folder`` times the
folder's rarity (1 − its share of the notes), so a folder holding most notes adds little. A folder of
notes that all lie in one folder, or none, is never named: it changes nothing there.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import Sequence

import numpy as np

from localrag.embed import SimilarityScale, similarity_scale
from localrag.records import Retrieval, Trace
from localrag.retrieve.base import Context, Timer, scored
from localrag.retrieve.dense import dense_ranked
from localrag.retrieve.fusion import LexicalBeside, Ranking, rrf, spread_notes
from localrag.retrieve.graph_settings import GraphSettings
from localrag.retrieve.parts import question_parts
from localrag.retrieve.ppr import EntityGraph, Seed, entity_graph, personalised_pagerank, query_seeds, traced_seeds
from localrag.text.folders import NamedFolder, named_folders
from localrag.trace import TraceEvent, omit_empty, optional

# the BM25 search runs beside the query embedding, the vector search and the walk
_LEXICAL = LexicalBeside("localrag-graph-bm25")


HEAD = 5  # the head whose flatness is measured: the first score against the fifth


@dataclass(frozen=True)
class FusionWeights:
    dense: float
    lexical: float
    ppr: float
    rrf_k: int
    focus: float = 0.0  # the seed focus at which the PPR list counts fully (0: always fully)
    uncorroborated: float = 1.0  # the PPR list's share when the text retrievers do not find its first passage
    corroboration_pool: int = 10
    lexical_flat: float = 1.0  # the BM25 list's share when its head is flat (1: always fully)
    lexical_peak: float = 1.5
    dense_lead: float = 0.0
    scale: SimilarityScale | None = None  # the embedder's (embed.similarity_scale): the dense lead on MiniLM's scale

    @classmethod
    def of(cls, ctx: Context) -> "FusionWeights":
        cfg = ctx.settings.graph
        return cls(cfg.fusion_dense, cfg.fusion_lexical, cfg.fusion_ppr, cfg.fusion_rrf_k, cfg.fusion_ppr_focus,
                   cfg.fusion_ppr_uncorroborated, cfg.fusion_corroboration_pool, cfg.fusion_lexical_flat,
                   cfg.fusion_lexical_peak, cfg.fusion_dense_lead, similarity_scale(ctx.embedder))

    def ppr_weight(self, focus: float, corroborated: bool = True) -> float:
        """The PPR list's weight for a walk of this seed focus (``seed_focus``) and corroboration."""
        weight = self.ppr if self.focus <= 0 else self.ppr * min(1.0, focus / self.focus)
        return weight if corroborated else weight * self.uncorroborated

    def lexical_weight(self, lexical: Ranking, dense: Ranking) -> float:
        """The BM25 list's weight for the flatness of its head (module doc, "Lexical confidence")."""
        peak = lexical_peak(lexical)
        if peak is None or self.lexical_peak <= 1.0 or dense_lead(dense, self.scale) < self.dense_lead:
            return self.lexical
        share = min(1.0, max(0.0, (peak - 1.0) / (self.lexical_peak - 1.0)))
        return self.lexical * (self.lexical_flat + (1.0 - self.lexical_flat) * share)

    def corroborated(self, ppr: Ranking, dense: Ranking, lexical: Ranking) -> bool:
        """Whether the walk's first passage is among the first passages of the dense or the lexical list."""
        if not ppr:
            return True
        first = ppr[0][0]
        pool = self.corroboration_pool
        return any(pid == first for pid, _ in dense[:pool]) or any(pid == first for pid, _ in lexical[:pool])


def lexical_peak(lexical: Ranking) -> float | None:
    """BM25's first score over its fifth (None: fewer than five hits, or scores that are not positive)."""
    if len(lexical) < HEAD:
        return None
    first, fifth = lexical[0][1], lexical[HEAD - 1][1]
    return first / fifth if fifth > 0 and first > 0 else None


def dense_lead(dense: Ranking, scale: SimilarityScale | None = None) -> float:
    """The dense list's first cosine minus its fifth, on MiniLM's scale (0: fewer than five hits)."""
    if len(dense) < HEAD:
        return 0.0
    first, fifth = dense[0][1], dense[HEAD - 1][1]
    return first - fifth if scale is None else float(scale.apply(np.float64(first)) - scale.apply(np.float64(fifth)))


@dataclass
class Walk:
    """One PPR run from the query's entities: the entity mass, before any read-out."""

    graph: EntityGraph
    seeds: list[Seed]
    mass: np.ndarray | None  # None: no query entity in the graph


def walk(ctx: Context, query: str, qvec: np.ndarray, extra_restart: dict[int, float] | None = None) -> Walk:
    """PPR restarting at the query's entities (weighted by specificity, as `ppr` does) and ``extra_restart``."""
    eg = entity_graph(ctx.store)
    if eg.empty:
        return Walk(eg, [], None)
    seeds = [s for s in query_seeds(ctx, query, qvec) if s.entity in eg.index]
    restart = {s.entity: s.weight for s in seeds}
    for entity, weight in (extra_restart or {}).items():
        restart[entity] = max(restart.get(entity, 0.0), weight)
    reset = np.zeros(len(eg.nodes))
    for entity, weight in restart.items():
        i = eg.index.get(entity)
        if i is not None:
            reset[i] += weight / max(1.0, eg.mention_counts[i])
    if not reset.any():
        return Walk(eg, seeds, None)
    return Walk(eg, seeds, personalised_pagerank(eg, reset, ctx.settings.graph.ppr_damping))


def seed_focus(w: Walk) -> float:
    """How specific the walk's best named seed is: its weight / the passages mentioning it (1 = one passage).

    Only seeds the query names (spans) count: the entities merely nearest to the whole query
    are often one-passage note titles, specific but not what the question names. A 2Wiki
    question names an entity two passages mention; a notes question's spans are "dendron",
    "note", "vault", mentioned by thousands: the walk from them says little.
    """
    best = 0.0
    for s in w.seeds:
        if s.via != "span":
            continue
        i = w.graph.index.get(s.entity)
        if i is not None:
            best = max(best, s.weight / max(1.0, float(w.graph.mention_counts[i])))
    return best


def passage_scores(eg: EntityGraph, mass: np.ndarray, entity_damping: float, passage_damping: float) -> np.ndarray:
    """Each passage's read-out of the walk, hub entities and long mention lists damped (module doc)."""
    readout = mass / np.power(np.maximum(eg.mention_counts, 1.0), entity_damping) if entity_damping else mass
    scores = eg.mentions @ readout
    if passage_damping:
        per_passage = np.asarray(eg.mentions.sum(axis=1)).ravel()
        scores = scores / np.power(np.maximum(per_passage, 1.0), passage_damping)
    return scores


def ppr_list(ctx: Context, qvec: np.ndarray, dense: Ranking, eg: EntityGraph, scores: np.ndarray,
             depth: int) -> Ranking:
    """The ``depth`` passages the walk reached, by score; equal scores ordered by query similarity."""
    order = np.argsort(-scores, kind="stable")[: max(depth * 4, 50)]
    reached = [(eg.passages[i], float(scores[i])) for i in order if scores[i] > 0]
    similarity = dict(dense)
    unknown = [pid for pid, _ in reached if pid not in similarity]
    if unknown:
        similarity.update(ctx.store.vectors.similarities(qvec, unknown))
    reached.sort(key=lambda t: (-round(t[1], 12), -similarity.get(t[0], 0.0), t[0]))
    return reached[:depth]


@dataclass(frozen=True)
class ListWeights:
    dense: float
    lexical: float  # after the flatness of its head
    ppr: float  # after the seed focus and the corroboration
    rrf_k: int

    @classmethod
    def of(cls, weights: FusionWeights, dense: Ranking, lexical: Ranking, ppr: Ranking, focus: float) -> "ListWeights":
        corroborated = weights.corroborated(ppr, dense, lexical)
        return cls(weights.dense, weights.lexical_weight(lexical, dense), weights.ppr_weight(focus, corroborated),
                   weights.rrf_k)


def fuse(dense: Ranking, lexical: Ranking, ppr: Ranking, weights: FusionWeights, k: int, focus: float = 1.0,
         folders: Sequence[tuple[Ranking, float]] = ()) -> Ranking:
    """The weighted RRF of the three lists and of ``folders``' (ranking, weight) pairs."""
    lists = ListWeights.of(weights, dense, lexical, ppr, focus)
    return rrf([dense, lexical, ppr, *(r for r, _ in folders)], k,
               weights=[lists.dense, lists.lexical, lists.ppr, *(w for _, w in folders)], rrf_k=lists.rrf_k)


def folder_lists(ctx: Context, query: str, qvec: np.ndarray, pool: int) -> list[tuple[NamedFolder, Ranking, float]]:
    """For each folder the query names (text/folders.py), the dense ranking of its passages and its
    weight: ``graph.fusion_folder`` x the folder's rarity (module doc, "Named folders")."""
    weight = ctx.settings.graph.fusion_folder
    if weight <= 0:
        return []
    out = []
    for folder in named_folders(query, ctx.store.docs.notes_per_folder(), ctx.store.docs.count()):
        if folder.rarity <= 0:
            continue
        inside = ctx.store.docs.passage_ids_under(folder.paths)
        out.append((folder, ctx.store.vectors.knn(qvec, pool, only=inside), weight * folder.rarity))
    return out


@dataclass(frozen=True)
class Damping:
    entity: float
    passage: float


@dataclass(frozen=True)
class ListHits:
    dense: int
    lexical: int
    ppr: int


@dataclass(frozen=True)
class FusionStep(TraceEvent, step="fusion", strategy="graph"):
    """What went into the fused ranking: the lists' weights and sizes, the walk's seeds."""

    weights: ListWeights | None = None
    seed_focus: float = 0.0
    damping: Damping | None = None
    hits: ListHits | None = None
    seeds: tuple[Seed, ...] = ()
    folders: tuple[str, ...] = omit_empty(())  # the folders the question names, whose passages are a list too
    note: str | None = optional()
    parts: tuple[str, ...] = omit_empty(())  # a question that asks two things: each part ranked too


def graph_ranked(ctx: Context, query: str, k: int, extra_restart: dict[int, float] | None = None
                 ) -> tuple[Ranking, FusionStep]:
    """The fused ranking and what went into it (for the trace).

    A question that asks two things (``question_parts``) is ranked whole and part by part, and the
    rankings are fused again: the whole question keeps the context a part refers back to ("how do
    I make *them* show up …"), each part keeps the notes that answer it in reach.
    """
    parts = question_parts(query) if ctx.settings.graph.split_questions else []
    if not parts:
        return _fused(ctx, query, k, extra_restart)
    pool = max(ctx.settings.hybrid_pool, k)
    whole, step = _fused(ctx, query, pool, extra_restart)
    rankings = [whole] + [_fused(ctx, part, pool, extra_restart)[0] for part in parts]
    return rrf(rankings, k, rrf_k=ctx.settings.graph.fusion_rrf_k), replace(step, parts=tuple(parts))


def _fused(ctx: Context, query: str, k: int, extra_restart: dict[int, float] | None) -> tuple[Ranking, FusionStep]:
    cfg = ctx.settings.graph
    pool = max(ctx.settings.hybrid_pool, k)
    lexical_future = _LEXICAL.search(ctx, query, pool)  # unfiltered: scored() applies a filter after fusion
    qvec = ctx.embedder.encode_one(query)
    dense = dense_ranked(ctx, query, pool)
    w = walk(ctx, query, qvec, extra_restart)
    ppr: Ranking = []
    focus = seed_focus(w)
    if w.mass is not None:
        scores = passage_scores(w.graph, w.mass, cfg.ppr_entity_damping, cfg.ppr_passage_damping)
        ppr = ppr_list(ctx, qvec, dense, w.graph, scores, pool)
    folders = folder_lists(ctx, query, qvec, pool)
    lexical = lexical_future.result()
    weights = FusionWeights.of(ctx)
    step = FusionStep(
        weights=_rounded(ListWeights.of(weights, dense, lexical, ppr, focus)),
        seed_focus=round(focus, 4), damping=Damping(cfg.ppr_entity_damping, cfg.ppr_passage_damping),
        hits=ListHits(len(dense), len(lexical), len(ppr)), seeds=traced_seeds(w.seeds),
        folders=tuple(p for f, _, _ in folders for p in f.paths),
        note="no query entity in the graph: dense and lexical only" if w.mass is None else None,
    )
    return fuse(dense, lexical, ppr, weights, k, focus, [(r, wt) for _, r, wt in folders]), step


def _rounded(lists: ListWeights) -> ListWeights:
    return ListWeights(lists.dense, round(lists.lexical, 4), round(lists.ppr, 4), lists.rrf_k)


class GraphFusion:
    name = "graph"
    needs_llm = False
    settings_section = "graph"
    settings_type = GraphSettings

    def retrieve(self, ctx: Context, query: str, k: int) -> Retrieval:
        trace = Trace(self.name)
        with Timer(trace):
            spread = ctx.settings.graph.note_spread
            ranked, step = graph_ranked(ctx, query, k if spread >= 1 else max(ctx.settings.hybrid_pool, k))
            trace.add(step)
            passages = spread_notes(scored(ctx, ranked, "graph"), k, ctx.settings.answer.passages, spread)
            return Retrieval(query, passages, trace)
