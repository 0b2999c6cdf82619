"""`localrag graph export|failures|requeue`: look at the knowledge graph from outside."""

from __future__ import annotations

import argparse
from pathlib import Path

from localrag.commands.common import UserError, add_folder, console, indexed_settings, write_out


def register(sub: argparse._SubParsersAction, common: argparse.ArgumentParser) -> None:
    p = sub.add_parser("graph", parents=[common], help="export or inspect the knowledge graph",
                       description="Export the knowledge graph (entities, facts with their sources, aliases) "
                       "as GraphML for Gephi / yEd / Cytoscape, or as JSON.")
    gsub = p.add_subparsers(dest="graph_command", metavar="ACTION", required=True)

    e = gsub.add_parser("export", parents=[common], help="write the graph as GraphML or JSON")
    add_folder(e)
    e.add_argument("--format", choices=["graphml", "json"], default="graphml", help="output format (default graphml)")
    e.add_argument("-o", "--output", help="file to write (default: standard output)")
    e.add_argument("--passages", action="store_true", help="also passage nodes and their 'mentions' edges")
    e.set_defaults(func=run_export)

    f = gsub.add_parser("failures", parents=[common], help="passages whose extraction was rejected, and why")
    add_folder(f)
    f.add_argument("--limit", type=int, default=50)
    f.set_defaults(func=run_failures)

    r = gsub.add_parser("requeue", parents=[common],
                        help="queue every passage for extraction again (after changing extractor or model)")
    add_folder(r)
    r.set_defaults(func=run_requeue)


def _open(args: argparse.Namespace, readonly: bool = True):
    # loaded on use: the pipeline (numpy, SQLite, the embedder) stays out of `localrag --help`
    from localrag.api import Index

    settings = indexed_settings(args, args.folder)
    return Index(settings, readonly=readonly)


def run_export(args: argparse.Namespace) -> int:
    # loaded on use: networkx and the graph export stay out of `localrag --help`
    from localrag.kg.export import export_graph, to_graphml, to_json

    index = _open(args)
    try:
        g = export_graph(index.store, passages=args.passages)
    finally:
        index.close()
    text = to_graphml(g) if args.format == "graphml" else to_json(g)
    if args.output:
        out = Path(args.output)
        try:
            out.write_text(text, encoding="utf-8")
        except OSError as exc:
            raise UserError(f"cannot write {out}: {exc.strerror or exc}") from exc
        facts = sum(1 for *_, d in g.edges(data=True) if d.get("kind") == "fact")
        entities = sum(1 for _, d in g.nodes(data=True) if d.get("kind") == "entity")
        console.print(f"wrote {out} ({args.format}): {entities} entities, {facts} facts")
    else:
        write_out(text if text.endswith("\n") else text + "\n")
    return 0


def run_failures(args: argparse.Namespace) -> int:
    index = _open(args)
    try:
        rows = index.store.graph.failures(args.limit)
        located = {p.id: p.location for p in index.store.docs.passages([pid for pid, _, _ in rows])}
    finally:
        index.close()
    if not rows:
        console.print("no extraction failures")
        return 0
    for pid, reason, fallback in rows:
        used = "rules used instead" if fallback else "no facts from the model"
        console.print(f"{located.get(pid, pid)}: {reason} [dim]({used})[/]")
    return 0


def run_requeue(args: argparse.Namespace) -> int:
    index = _open(args, readonly=False)
    try:
        n = index.store.graph.enqueue_all()
    finally:
        index.close()
    console.print(f"queued {n} passages; run `localrag index {args.folder}` to extract (cached replies cost no model call)")
    return 0
