"""`localrag [FOLDER]` / `localrag tui [FOLDER]`: the terminal UI (Textual is imported only here)."""

from __future__ import annotations

import argparse

from localrag.commands.common import UserError, add_folder, settings_from


def register(sub: argparse._SubParsersAction, common: argparse.ArgumentParser) -> None:
    p = sub.add_parser("tui", parents=[common], help="open the terminal UI on a folder (the default command)",
                       description="Chat with your notes: indexes FOLDER in the background, watches it for changes, "
                       "answers with numbered citations and shows the reasoning path and cost.")
    add_folder(p)
    p.add_argument("--strategy", help="retrieval strategy (default from config: auto)")
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    settings = settings_from(args, args.folder)
    if not settings.folder_path.is_dir():
        raise UserError(f"notes folder not found: {settings.folder_path}")
    if args.strategy:
        # loaded on use: the pipeline (numpy, SQLite, the embedder) stays out of `localrag --help`
        from localrag.retrieve import strategy_names

        if args.strategy != "auto" and args.strategy not in strategy_names():
            raise UserError(f"unknown strategy {args.strategy!r}; choose one of: auto, {', '.join(strategy_names())}")
    # loaded on use: Textual is imported only when the TUI opens
    from localrag.tui import run_tui

    return run_tui(settings, args.strategy)
