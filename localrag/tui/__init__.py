"""The Textual terminal UI: the only package that imports textual."""

from __future__ import annotations

from localrag.config import Settings


def run_tui(settings: Settings, strategy: str | None = None) -> int:
    from localrag.tui.app import LocalRagApp

    app = LocalRagApp(settings, strategy=strategy)
    try:
        app.run()
    finally:
        app.index.close()
    return int(app.return_code or 0)
