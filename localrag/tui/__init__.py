"""The Textual terminal UI: the only package that imports textual."""

from __future__ import annotations

import sys

from localrag.config import Settings

STOP_WAIT_S = 120.0  # the longest single indexing step (one model call) we wait for on exit


def run_tui(settings: Settings, strategy: str | None = None) -> int:
    # loaded on use: `import localrag.tui` (the CLI's check) does not build the app
    from localrag.tui.app import LocalRagApp

    app = LocalRagApp(settings, strategy=strategy)
    try:
        app.run()
    finally:
        app.indexing.indexer.stop()
        if app.indexing.indexer.running and not app.indexing.indexer.finished.wait(1.0):
            # a model call cannot be cut during prompt evaluation: say why the prompt is not back yet
            print("localrag: stopping the indexer after its current step…", file=sys.stderr, flush=True)
            app.indexing.indexer.finished.wait(STOP_WAIT_S)
            print("localrag: stopped", file=sys.stderr, flush=True)
        app.index.close()
    return int(app.return_code or 0)
