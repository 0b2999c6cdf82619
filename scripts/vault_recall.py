"""Recall per note on a notes folder with a questions file, through the Assistant API only,
so the same script measures any checkout (PYTHONPATH decides which localrag is imported).

    PYTHONPATH=. python scripts/vault_recall.py --notes ../shared/data/dendron-vault/notes \
        --questions questions.jsonl --work /tmp/vr-mine --strategies hybrid,ppr --out result.json

The folder is copied into --work (an index is written inside the notes folder), indexed with
the rules graph extractor, and each question retrieves 50 passages; a note counts once, at
its best rank (recall@k = gold notes among the first k distinct notes / gold notes). With this
checkout's vault tables present it also counts what the vault parsing found (--counts).
"""

from __future__ import annotations

import argparse
import json
import shutil
import time
from pathlib import Path

import localrag
from localrag.api import Assistant, Index
from localrag.config import load_settings


def notes_ranked(passages) -> list[str]:
    out: list[str] = []
    for sp in passages:
        if sp.passage.path not in out:
            out.append(sp.passage.path)
    return out


def vault_counts(index) -> dict:
    """Aliases, tags, link and embed facts, resolved and unresolved links (this checkout only)."""
    # lazy: older checkouts measured by this script (PYTHONPATH) have no vault parsing; only --counts needs it
    from localrag.ingest.markdown import inline_refs
    from localrag.kg.vault import resolve_links  # lazy, as above

    store = index.store
    counts = dict(store.vault.counts())
    resolved = unresolved = embeds_resolved = embeds_unresolved = 0
    unresolved_examples: dict[str, int] = {}
    for path in sorted(store.docs.all()):
        for p in store.docs.passages_of(path):
            for r in resolve_links(store, inline_refs(p.text).links, p.path):
                if r.link.embed:
                    embeds_resolved += r.resolved
                    embeds_unresolved += not r.resolved
                else:
                    resolved += r.resolved
                    unresolved += not r.resolved
                if not r.resolved:
                    unresolved_examples[r.link.target] = unresolved_examples.get(r.link.target, 0) + 1
    facts = store.graph.facts.all()
    by_relation: dict[str, int] = {}
    for f in facts:
        by_relation[f.relation] = by_relation.get(f.relation, 0) + 1
    origins: dict[str, int] = {}
    for _, _, origin in store.graph.facts.all_sources():
        origins[origin] = origins.get(origin, 0) + 1
    counts.update(links_resolved=resolved, links_unresolved=unresolved, embeds_resolved=embeds_resolved,
                  embeds_unresolved=embeds_unresolved, link_facts=by_relation.get("links to", 0),
                  embed_facts=by_relation.get("embeds", 0), alias_facts=by_relation.get("is also called", 0),
                  tag_facts=by_relation.get("has tag", 0), fact_sources_by_origin=origins,
                  notes_with_aliases=store.vault.notes_with_aliases(),
                  most_unresolved=sorted(unresolved_examples.items(), key=lambda t: -t[1])[:15])
    return counts


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--notes", required=True)
    ap.add_argument("--questions", required=True)
    ap.add_argument("--work", required=True, help="scratch folder (replaced)")
    ap.add_argument("--strategies", default="hybrid,ppr")
    ap.add_argument("--ids", help="only these question ids (one a line)")
    ap.add_argument("--counts", action="store_true", help="also count aliases, tags, links and embeds")
    ap.add_argument("--out", required=True)
    ap.add_argument("--query-only", action="store_true",
                    help="ask the index already in --work (read-only: no copy, sync or graph run)")
    args = ap.parse_args()
    work = Path(args.work)
    folder = work / "notes"
    if not args.query_only:
        if work.exists():
            shutil.rmtree(work)
        shutil.copytree(args.notes, folder)
    settings = load_settings(folder, {"index.extractor": "rules", "llm.n_threads": 1, "memory.enabled": False}, env={})
    index = Index(settings, readonly=args.query_only)
    started = time.perf_counter()
    sync = index.sync() if not args.query_only else None
    graph = index.extract_graph() if not args.query_only else None
    index_s = time.perf_counter() - started
    questions = [json.loads(line) for line in Path(args.questions).read_text().splitlines() if line.strip()]
    if args.ids:
        wanted = {i.strip() for i in Path(args.ids).read_text().split() if i.strip()}
        questions = [q for q in questions if q["id"] in wanted]
    assistant = Assistant(index)
    result: dict = {"localrag": localrag.__file__, "questions": len(questions), "index_seconds": round(index_s, 1),
                    "documents": index.store.docs.count(), "passages": index.store.docs.passage_count(),
                    "graph": index.graph_figures(), "sync_added": sync.added if sync else None,
                    "graph_passages": graph.passages if graph else None,
                    "strategies": {}}
    for name in [s for s in args.strategies.split(",") if s]:
        per_q = []
        for q in questions:
            got = assistant.retrieve(q["question"], name, 50)
            ranked = notes_ranked(got.passages)
            gold = set(q["gold_notes"])
            per_q.append({"id": q["id"], "hops": q.get("hops"), "top5": ranked[:5],
                          "r2": len(gold & set(ranked[:2])) / len(gold), "r5": len(gold & set(ranked[:5])) / len(gold)})
        n = len(per_q) or 1
        result["strategies"][name] = {
            "recall@2": round(sum(x["r2"] for x in per_q) / n, 4), "recall@5": round(sum(x["r5"] for x in per_q) / n, 4),
            "per_question": per_q}
        print(f"{name}: recall@2 {result['strategies'][name]['recall@2']:.3f}  recall@5 {result['strategies'][name]['recall@5']:.3f}")
    if args.counts:
        result["vault"] = vault_counts(index)
        print(json.dumps({k: v for k, v in result["vault"].items() if k != "most_unresolved"}))
    index.close()
    Path(args.out).write_text(json.dumps(result, indent=2))


if __name__ == "__main__":
    main()
