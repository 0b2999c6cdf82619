"""The knowledge graph as GraphML (Gephi, yEd, Cytoscape) or JSON."""

from __future__ import annotations

import io
import json
from collections import defaultdict

import networkx as nx

from localrag.store import Store


def export_graph(store: Store, *, passages: bool = False) -> nx.MultiDiGraph:
    """Entities as nodes, facts (with relation, origin and sources) and coref pairs as edges;
    with ``passages`` also passage nodes and their "mentions" edges."""
    g = nx.MultiDiGraph()
    graph = store.graph
    for eid, name in graph.entities.all().items():
        g.add_node(f"e{eid}", label=name, kind="entity")
    sources: dict[int, list[tuple[int, str]]] = defaultdict(list)
    for fact, passage, origin in graph.facts.all_sources():
        sources[fact].append((passage, origin))
    located = {p.id: p for p in store.docs.passages(sorted({p for rows in sources.values() for p, _ in rows}))}
    for f in graph.facts.all():
        where = [located[p].location for p, _ in sources[f.id] if p in located]
        origins = sorted({o for _, o in sources[f.id] if o})
        g.add_edge(f"e{f.head}", f"e{f.tail}", key=f"f{f.id}", kind="fact", fact_id=f.id, label=f.relation,
                   relation=f.relation, origin=",".join(origins), sources="; ".join(where))
    for entity, alias, sim in graph.coref.all():
        g.add_edge(f"e{entity}", f"e{alias}", key=f"c{entity}-{alias}", kind="coref", label="alias", sim=round(sim, 4))
    if passages:
        mentions = graph.facts.all_mentions()
        for p in store.docs.passages(sorted({pid for _, pid in mentions})):
            g.add_node(f"p{p.id}", label=p.location, kind="passage", title=p.title)
        for entity, passage in mentions:
            if g.has_node(f"p{passage}"):
                g.add_edge(f"p{passage}", f"e{entity}", key=f"m{passage}-{entity}", kind="mentions", label="mentions")
    return g


def to_graphml(g: nx.MultiDiGraph) -> str:
    buf = io.BytesIO()
    nx.write_graphml(g, buf, encoding="utf-8")
    return buf.getvalue().decode("utf-8")


def to_json(g: nx.MultiDiGraph) -> str:
    data = nx.node_link_data(g, edges="edges")
    return json.dumps(data, ensure_ascii=False, indent=1)
