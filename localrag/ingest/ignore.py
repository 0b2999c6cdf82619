""".gitignore-style ignore rules (pathspec): built-in vault folders, ``index.ignore`` and the
folder's own ``.localragignore``.

Obsidian keeps its settings in ``.obsidian/`` and deleted notes in ``.trash/``; Logseq keeps
backups in ``logseq/bak/``; none of them are notes. Hidden folders are skipped by the walker
anyway: the rules name them so the watcher and ``--help`` say the same.
"""

from __future__ import annotations

from functools import lru_cache
from pathlib import Path

import pathspec

IGNORE_FILE = ".localragignore"
VAULT_DEFAULTS = (".obsidian/", ".trash/", ".git/", ".localrag/", ".logseq/", "logseq/bak/", "logseq/.recycle/",
                  ".foam/", ".dendron.cache.*", "_site/", ".stversions/")


def folder_patterns(root: Path, configured: list[str]) -> list[str]:
    """Every pattern in force for ``root``: the built-in ones, ``index.ignore``, then ``.localragignore``
    (blank lines and # comments skipped, ``!pattern`` re-includes, as in .gitignore)."""
    try:
        st = (root / IGNORE_FILE).stat()
        version = (st.st_mtime_ns, st.st_size)
    except OSError:
        version = None
    # the watcher asks on every file event: the file is read again only when it changed
    return list(_patterns(root, tuple(configured), version))


@lru_cache(maxsize=32)
def _patterns(root: Path, configured: tuple[str, ...], version: tuple[int, int] | None) -> tuple[str, ...]:
    patterns = VAULT_DEFAULTS + configured
    if version is None:
        return patterns
    try:
        text = (root / IGNORE_FILE).read_text(encoding="utf-8", errors="replace")
    except OSError:
        return patterns
    return patterns + tuple(line.rstrip() for line in text.splitlines()
                            if line.strip() and not line.lstrip().startswith("#"))


@lru_cache(maxsize=32)
def _spec(patterns: tuple[str, ...]) -> pathspec.PathSpec:
    return pathspec.GitIgnoreSpec.from_lines(patterns)


def matches(rel: str, patterns: list[str]) -> bool:
    """Is ``rel`` (folder-relative, POSIX; a trailing / for a folder) ignored by these patterns?
    A pattern that matches a folder also matches everything in it, as in git."""
    return bool(patterns) and _spec(tuple(patterns)).match_file(rel)
