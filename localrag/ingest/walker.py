"""Find the files to index under a root, never leaving it."""

from __future__ import annotations

import os
import stat
from dataclasses import dataclass
from pathlib import Path

from localrag.ingest import ignore as ignore_rules
from localrag.ingest.loaders import NOT_REGULAR, TEXT_KINDS

STATE_DIR = ".localrag"


@dataclass(frozen=True)
class FoundFile:
    rel: str  # POSIX path relative to the root
    path: Path
    size: int
    mtime_ns: int


@dataclass(frozen=True)
class Rejected:
    rel: str
    size: int
    mtime_ns: int
    reason: str
    detail: str


def is_ignored(rel: str, patterns: list[str]) -> bool:
    return ignore_rules.matches(rel, patterns)


def is_candidate(rel: str, extensions: list[str], patterns: list[str]) -> bool:
    """Would a file at this relative path be indexed (hidden parts, extension, ignore globs)?"""
    parts = rel.split("/")
    if any(p.startswith(".") for p in parts):
        return False
    if os.path.splitext(rel)[1].lower() not in extensions or os.path.splitext(rel)[1].lower() not in TEXT_KINDS:
        return False
    return not is_ignored(rel, patterns)


def walk(root: Path, extensions: list[str], ignore: list[str]) -> tuple[list[FoundFile], list[Rejected]]:
    """Regular files to index, and special files that look like notes but cannot be read.

    Directory symlinks are not followed (no loops); a file symlink is indexed only if it
    resolves to a regular file inside the root.
    """
    root = root.resolve()
    found: list[FoundFile] = []
    rejected: list[Rejected] = []
    for dirpath, dirnames, filenames in os.walk(root, followlinks=False, onerror=lambda e: None):
        rel_dir = os.path.relpath(dirpath, root)
        rel_dir = "" if rel_dir == "." else rel_dir.replace(os.sep, "/") + "/"
        dirnames[:] = sorted(
            d for d in dirnames if not d.startswith(".") and d != STATE_DIR and not is_ignored(rel_dir + d + "/", ignore)
            and not is_ignored(rel_dir + d, ignore)
        )
        for name in sorted(filenames):
            rel = rel_dir + name
            if not is_candidate(rel, extensions, ignore):
                continue
            path = Path(dirpath) / name
            try:
                lst = path.lstat()
            except OSError:
                continue
            if stat.S_ISLNK(lst.st_mode):
                try:
                    target = path.resolve(strict=True)
                except (OSError, RuntimeError):
                    rejected.append(Rejected(rel, 0, lst.st_mtime_ns, NOT_REGULAR, "broken or looping symlink"))
                    continue
                if not target.is_relative_to(root):
                    rejected.append(Rejected(rel, 0, lst.st_mtime_ns, "outside-root", f"symlink points outside the folder ({target})"))
                    continue
                try:
                    st = target.stat()
                except OSError:
                    continue
            else:
                st = lst
            if not stat.S_ISREG(st.st_mode):
                rejected.append(Rejected(rel, 0, st.st_mtime_ns, NOT_REGULAR, "not a regular file (FIFO, socket or device)"))
                continue
            found.append(FoundFile(rel, path, st.st_size, st.st_mtime_ns))
    return found, rejected
