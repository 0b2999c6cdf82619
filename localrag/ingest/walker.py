"""Find the files to index under a root, never leaving it."""

from __future__ import annotations

import os
import re
import stat
from dataclasses import dataclass
from pathlib import Path
from typing import Callable, Iterable, Iterator

from localrag.ingest import ignore as ignore_rules
from localrag.ingest.loaders import LOADABLE_SUFFIXES, NOT_REGULAR, UNREADABLE

STATE_DIR = ".localrag"
OUTSIDE_ROOT = "outside-root"
BAD_NAME = "bad-name"

# -- names -----------------------------------------------------------------------------
# On POSIX a file name is bytes; Python hands an undecodable byte over as a lone surrogate
# (U+DC80..U+DCFF), which SQLite, JSON and terminals refuse. Such a byte is shown as the four
# characters ``\xff``; a backslash that already starts ``\xHH`` in a real name is written
# ``\x5c`` so that the display form maps back to exactly one name.
_BYTE_ESCAPE = re.compile(r"\\x([0-9a-fA-F]{2})")


def display_name(name: str) -> str:
    """A file-system name as valid Unicode text, reversibly (see ``fs_name``); unchanged when it decodes."""
    if "\\" not in name and not any(0xDC80 <= ord(c) <= 0xDCFF for c in name):
        return name
    out: list[str] = []
    for i, ch in enumerate(name):
        code = ord(ch)
        if 0xDC80 <= code <= 0xDCFF:
            out.append(f"\\x{code - 0xDC00:02x}")
        elif ch == "\\" and _BYTE_ESCAPE.match(name, i):
            out.append("\\x5c")
        else:
            out.append(ch)
    return "".join(out)


def fs_name(display: str) -> str:
    """The file-system name (as ``os.fsdecode`` gives it) of a ``display_name``."""
    if "\\x" not in display:
        return display
    raw = bytearray()
    pos = 0
    for m in _BYTE_ESCAPE.finditer(display):
        raw += display[pos:m.start()].encode("utf-8")
        raw.append(int(m.group(1), 16))
        pos = m.end()
    raw += display[pos:].encode("utf-8")
    return os.fsdecode(bytes(raw))


def is_valid_text(name: str) -> bool:
    """No lone surrogates left (e.g. an ill-formed UTF-16 name on Windows, which has no byte form)."""
    return not any(0xD800 <= ord(c) <= 0xDFFF for c in name)


@dataclass(frozen=True)
class FoundFile:
    rel: str  # POSIX path relative to the root, as display text (``display_name``)
    path: Path  # what to open: the file itself, or a symlink's resolved target inside the root
    size: int
    mtime_ns: int


@dataclass(frozen=True)
class Rejected:
    rel: str
    size: int
    mtime_ns: int
    reason: str
    detail: str
    unlisted_dir: bool = False  # a folder that could not be listed: what was indexed under it is kept


def is_ignored(rel: str, patterns: list[str]) -> bool:
    return ignore_rules.matches(rel, patterns)


def is_candidate(rel: str, extensions: list[str], patterns: list[str]) -> bool:
    """Would a file at this relative path be indexed (hidden parts, extension, ignore globs)?"""
    parts = rel.split("/")
    if any(p.startswith(".") for p in parts):
        return False
    if os.path.splitext(rel)[1].lower() not in extensions or os.path.splitext(rel)[1].lower() not in LOADABLE_SUFFIXES:
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

    def unlisted(err: OSError) -> None:
        rel = display_name(os.path.relpath(err.filename, root).replace(os.sep, "/")) if err.filename else ""
        if not rel or rel == ".":
            raise err  # the folder itself: stop, rather than take every note for deleted
        rejected.append(Rejected(rel, 0, 0, UNREADABLE, f"cannot list the folder: {err.strerror or err}; "
                                 "what was indexed under it is kept", unlisted_dir=True))

    for dirpath, dirnames, filenames in _walk_tree(str(root), unlisted):
        rel_dir = os.path.relpath(dirpath, root)
        rel_dir = "" if rel_dir == "." else display_name(rel_dir.replace(os.sep, "/")) + "/"
        kept_dirs = []
        for d in sorted(dirnames):
            rel = rel_dir + display_name(d)
            if _left_out_dir(d, rel, ignore):
                continue
            outside = _outside_dir_link(Path(dirpath) / d, root)
            if outside is not None:
                rejected.append(Rejected(rel, 0, 0, OUTSIDE_ROOT,
                                         f"symlink to a folder outside the notes folder ({display_name(outside)}): not followed"))
            kept_dirs.append(d)
        dirnames[:] = kept_dirs  # directory symlinks are listed, never entered
        for name in sorted(filenames):
            rel = rel_dir + display_name(name)
            if not is_candidate(rel, extensions, ignore):
                continue
            entry = _examine(Path(dirpath) / name, rel, root)
            if isinstance(entry, FoundFile):
                found.append(entry)
            elif entry is not None:
                rejected.append(entry)
    return found, rejected


def examine_paths(root: Path, rels: Iterable[str], extensions: list[str],
                  ignore: list[str]) -> tuple[list[FoundFile], list[Rejected]]:
    """What ``walk`` finds at these file paths (relative, as display text) and nowhere else: a
    path that is gone, or lies in a folder ``walk`` does not enter (hidden, ignored, a symlink),
    is in neither list."""
    root = root.resolve()
    found: list[FoundFile] = []
    rejected: list[Rejected] = []
    for rel in sorted(set(rels)):
        if not is_candidate(rel, extensions, ignore) or not _entered(root, rel, ignore):
            continue
        entry = _examine(root / fs_name(rel), rel, root)
        if isinstance(entry, FoundFile):
            found.append(entry)
        elif entry is not None:
            rejected.append(entry)
    return found, rejected


def _left_out_dir(name: str, rel: str, ignore: list[str]) -> bool:
    return name.startswith(".") or name == STATE_DIR or is_ignored(rel + "/", ignore) or is_ignored(rel, ignore)


def _entered(root: Path, rel: str, ignore: list[str]) -> bool:
    """Whether ``walk`` enters every folder above ``rel`` (it lists a folder symlink but never enters it)."""
    parts = rel.split("/")[:-1]
    for depth in range(1, len(parts) + 1):
        rel_dir = "/".join(parts[:depth])
        if _left_out_dir(parts[depth - 1], rel_dir, ignore) or os.path.islink(root / fs_name(rel_dir)):
            return False
    return True


def _walk_tree(top: str, onerror: Callable[[OSError], None]) -> Iterator[tuple[str, list[str], list[str]]]:
    """``os.walk(top, followlinks=False)`` without recursion: os.walk recurses once per level and a
    folder nested ~1,000 deep raised RecursionError, which stopped the whole sync."""
    stack = [top]
    while stack:
        path = stack.pop()
        try:
            with os.scandir(path) as it:
                entries = list(it)
        except OSError as err:
            onerror(err)
            continue
        dirs: list[str] = []
        files: list[str] = []
        for entry in entries:
            try:
                is_dir = entry.is_dir()  # a directory symlink counts as a directory here, as in os.walk
            except OSError:
                is_dir = False
            (dirs if is_dir else files).append(entry.name)
        yield path, dirs, files  # the caller may prune ``dirs``
        for d in reversed(dirs):
            sub = os.path.join(path, d)
            if not os.path.islink(sub):
                stack.append(sub)


def _outside_dir_link(path: Path, root: Path) -> str | None:
    """The target of a directory symlink that leads out of the root (None for anything else)."""
    try:
        if not path.is_symlink():
            return None
        target = path.resolve(strict=True)
    except (OSError, RuntimeError):
        return None  # broken or looping: nothing to index and nothing outside
    return None if target.is_relative_to(root) or not target.is_dir() else str(target)


def _examine(path: Path, rel: str, root: Path) -> FoundFile | Rejected | None:
    """A file to index, one rejected with its reason, or None when it is gone already."""
    try:
        lst = path.lstat()
    except OSError:
        return None
    if not is_valid_text(rel):
        return Rejected(display_name(rel.encode("utf-8", "replace").decode()), 0, lst.st_mtime_ns, BAD_NAME,
                        "the file name is not valid Unicode")
    target = path
    if stat.S_ISLNK(lst.st_mode):
        try:
            target = path.resolve(strict=True)
        except (OSError, RuntimeError):
            return Rejected(rel, 0, lst.st_mtime_ns, NOT_REGULAR, "broken or looping symlink")
        if not target.is_relative_to(root):
            return Rejected(rel, 0, lst.st_mtime_ns, OUTSIDE_ROOT,
                            f"symlink points outside the folder ({display_name(str(target))})")
        try:
            st = target.stat()
        except OSError:
            return None
    else:
        st = lst
    if not stat.S_ISREG(st.st_mode):
        return Rejected(rel, 0, st.st_mtime_ns, NOT_REGULAR, "not a regular file (FIFO, socket or device)")
    return FoundFile(rel, target, st.st_size, st.st_mtime_ns)
