"""`localrag status`: documents, passages, graph, skipped files, model, DB size."""

from __future__ import annotations

import argparse
import dataclasses
import json

from rich.markup import escape
from rich.table import Table

from localrag.commands.common import add_folder, console, human_bytes, indexed_settings
from localrag.llm.base import LLMError
from localrag.llm.discovery import discover


def register(sub: argparse._SubParsersAction, common: argparse.ArgumentParser) -> None:
    p = sub.add_parser("status", parents=[common], help="what is indexed, what was skipped and why")
    add_folder(p)
    p.add_argument("--json", action="store_true", help="machine-readable output")
    p.add_argument("--check", action="store_true",
                   help="run SQLite's quick_check now (it also runs by itself after an unclean exit, when the file "
                   "changed behind localrag's back, and once a day)")
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    # loaded on use: the pipeline (numpy, SQLite, the embedder) stays out of `localrag --help`
    from localrag.api import Index
    settings = indexed_settings(args, args.folder)
    index = Index(settings)
    try:
        check = index.check_health(force=args.check)
        st = index.status()
    finally:
        index.close()
    try:
        choice = discover(settings.llm.model)
        model = f"{choice.path} ({choice.source})"
    except LLMError as exc:
        model = f"none: {exc}"
    if settings.llm.url:
        model = f"{settings.llm.url_model or '(first listed)'} at {settings.llm.url}"
    if args.json:
        print(json.dumps({
            "folder": st.folder, "db": st.db_path, "db_bytes": st.db_bytes, "documents": st.documents,
            "documents_by_kind": st.by_kind,
            "ocr": dataclasses.asdict(st.ocr) if st.ocr else None,
            "passages": st.passages, "embedded": st.embedded, "embedder": st.embedder, "model": model,
            "schema_version": st.schema_version, "graph": st.extra, "recut_due": st.recut_due,
            "check": {"ran": check.ran, "result": check.result, "due": check.due, "seconds": round(check.seconds, 3)},
            "skipped": [{"path": s.path, "reason": s.reason, "detail": s.detail} for s in st.skipped],
            "warnings": [{"path": path, "warning": w} for path, w in st.warnings],
        }, indent=2))
        return 0
    t = Table(show_header=False, box=None, pad_edge=False)
    t.add_column(style="bold")
    t.add_column()
    t.add_row("folder", st.folder)
    t.add_row("index", f"{st.db_path} ({human_bytes(st.db_bytes)}, schema v{st.schema_version})")
    kinds = ", ".join(f"{kind} {n}" for kind, n in st.by_kind.items())
    t.add_row("documents", f"{st.documents} ({kinds})" if kinds else str(st.documents))
    t.add_row("passages", f"{st.passages} ({st.embedded} embedded with {st.embedder})")
    if st.recut_due:
        t.add_row("passage rules", "changed since this index was cut: the next `localrag index` cuts every file "
                                   "again (unchanged passages keep their vectors)")
    for key, value in st.extra.items():
        t.add_row(key.replace("_", " "), str(value))
    t.add_row("model", model)
    if st.ocr:
        t.add_row("ocr", escape(st.ocr.summary))
    t.add_row("skipped", str(len(st.skipped)))
    t.add_row("check", escape(check.describe()))
    console.print(t)
    if st.skipped:
        s = Table(title="skipped files", title_justify="left")
        s.add_column("path")
        s.add_column("reason", style="yellow")
        s.add_column("detail")
        for row in st.skipped:
            s.add_row(escape(row.path), escape(row.reason), escape(row.detail))
        console.print(s)
    if st.warnings:
        w = Table(title="warnings (the notes are indexed)", title_justify="left")
        w.add_column("path")
        w.add_column("warning", style="yellow")
        for path, warning in st.warnings:
            w.add_row(path, warning)
        console.print(w)
    return 0
