"""Hostile files: a fuzzed loader and chunker, and a folder full of traps.

The fuzz feeds random bytes, huge lines, 1,000-deep Markdown nesting, NUL bytes, mixed
encodings and HTML soup to ``load_data`` and ``chunk_text``: the only exception allowed is
SkipFile, every passage is non-empty and its line range lies inside the text (and its
source line range inside the file). The folder test has a symlink loop, symlinks out of
the root (to a file, a directory and /dev/zero), a FIFO, an unreadable file, a file that
vanishes as it is opened and a 100 MB file: each is skipped with a recorded reason, none
hangs, and the good notes index.
"""

from __future__ import annotations

import os
import stat
import sys
import threading
import time
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings, strategies as st

from localrag.api import Index
from localrag.ingest import loaders, walker
from localrag.ingest.chunker import chunk_text
from localrag.ingest.loaders import SkipFile, load_data

SUFFIXES = [".md", ".txt", ".rst", ".org", ".html", ".htm", ".markdown"]
FUZZ_EXAMPLES = 300  # per fuzz test; docs/reliability.md quotes the total
RUN_COUNT = {"load+chunk": 0, "chunk": 0}

# -- generators of hostile content ---------------------------------------------------------------

_words = st.text(alphabet=st.characters(codec="utf-8", exclude_categories=("Cs",)), max_size=40)


def _deep_markdown(depth: int, kind: str) -> str:
    if kind == "headings":
        return "\n".join("#" * (i % 8 + 1) + f" level {i}" for i in range(depth))
    if kind == "lists":
        return "\n".join("  " * i + f"- item {i}" for i in range(depth))
    if kind == "quotes":
        return "\n".join(">" * i + f" quote {i}" for i in range(1, depth + 1))
    if kind == "fences":
        return "\n".join("```" if i % 2 else f"code {i}" for i in range(depth))
    return "[" * depth + "link" + "]" * depth + "(" * depth + ")" * depth


def _html_soup(parts: list[str]) -> str:
    tags = ["<div>", "</div>", "<p>", "<h1>", "</h2>", "<script>", "</script>", "<style>", "<br/>", "<li>",
            "<title>", "</title>", "<!--", "-->", "<![CDATA[", "]]>", "&amp;", "&#0;", "&#xD800;", "<svg><svg>", "<"]
    return "".join(p + tags[i % len(tags)] for i, p in enumerate(parts))


def _encode_mixed(parts: list[str]) -> bytes:
    out = b""
    for i, p in enumerate(parts):
        codec = ["utf-8", "latin-1", "utf-16-le", "cp1252", "utf-8-sig"][i % 5]
        out += p.encode(codec, errors="replace")
    return out


hostile_bytes = st.one_of(
    st.binary(max_size=4000),
    _words.map(lambda s: s.encode("utf-8")),
    st.builds(lambda w, n: (w * n).encode("utf-8"), _words, st.integers(0, 30_000)),  # huge lines
    st.builds(lambda d, k: _deep_markdown(d, k).encode(), st.integers(1, 1000),
              st.sampled_from(["headings", "lists", "quotes", "fences", "brackets"])),
    st.builds(lambda a, b: a.encode() + b"\x00" + b.encode(), _words, _words),  # NUL bytes
    st.lists(_words, max_size=12).map(_encode_mixed),
    st.lists(_words, max_size=40).map(lambda ps: _html_soup(ps).encode("utf-8")),
    st.builds(lambda d, tag, w: (f"<{tag}>" * d + w + f"</{tag}>" * d).encode(), st.integers(1, 1000),
              st.sampled_from(["div", "ul><li", "blockquote", "h1", "script", "table><tr"]), _words),  # deep HTML
    st.builds(lambda w: b"\xff\xfe" + w.encode("utf-16-le"), _words),  # BOM-marked UTF-16
    st.builds(lambda w: b"\xfe\xff" + w.encode("utf-8"), _words),  # a BOM that lies
    st.builds(lambda w: ("\r" * 50 + w + "\r\n" * 50).encode(), _words),
)


def _check_chunks(text: str, chunks) -> None:
    lines = text.split("\n")
    for c in chunks:
        assert c.text.strip(), "a passage is never empty"
        assert 1 <= c.start_line <= c.end_line <= len(lines), (c.start_line, c.end_line, len(lines))
        window = "\n".join(lines[c.start_line - 1:c.end_line])
        for line in c.text.split("\n"):
            assert line in window, "a passage's text comes from its line range"


@settings(max_examples=FUZZ_EXAMPLES, deadline=20_000, suppress_health_check=list(HealthCheck), derandomize=True)
@given(data=hostile_bytes, suffix=st.sampled_from(SUFFIXES))
def test_fuzz_loaders_and_chunker(data: bytes, suffix: str) -> None:
    RUN_COUNT["load+chunk"] += 1
    path = Path("fuzzed" + suffix)
    try:
        loaded = load_data(path, data)
    except SkipFile as skip:
        assert skip.reason and skip.detail
        return
    assert loaded.text.strip() and loaded.title.strip()
    chunks = chunk_text(loaded.text, loaded.kind, loaded.title, 100, 300)
    assert chunks, "text with content gives at least one passage"
    _check_chunks(loaded.text, chunks)
    n_source_lines = data.count(b"\n") + data.count(b"\r") + 1
    for c in chunks:
        first, last = loaded.source_line(c.start_line), loaded.source_line(c.end_line)
        assert 1 <= first <= last <= n_source_lines


@settings(max_examples=FUZZ_EXAMPLES, deadline=20_000, suppress_health_check=list(HealthCheck), derandomize=True)
@given(text=st.one_of(_words, st.lists(_words, max_size=60).map("\n".join),
                      st.builds(_deep_markdown, st.integers(1, 1000),
                                st.sampled_from(["headings", "lists", "quotes", "fences", "brackets"]))),
       kind=st.sampled_from(["markdown", "text", "rst", "org", "html", "pdf"]),
       sizes=st.tuples(st.integers(1, 400), st.integers(1, 400)))
def test_fuzz_chunker_any_text_any_sizes(text: str, kind: str, sizes: tuple[int, int]) -> None:
    RUN_COUNT["chunk"] += 1
    lo, hi = min(sizes), max(sizes)
    chunks = chunk_text(text, kind, "Title", lo, hi)
    _check_chunks(text, chunks)
    if text.strip():
        assert chunks


def test_fuzz_examples_were_run() -> None:
    """Runs after the fuzz tests in file order: the figure docs/reliability.md quotes."""
    total = sum(RUN_COUNT.values())
    print(f"fuzz examples run: {RUN_COUNT} (total {total})")
    if total:  # when run alone this test has nothing to count
        assert total >= FUZZ_EXAMPLES


# -- a folder of traps ---------------------------------------------------------------------------

HUGE_BYTES = 100 * 1024 * 1024
GOOD_FACT = "The lighthouse keeper of Arnholm is called Petra Vance."
OUTSIDE_FACT = "SECRET-OUTSIDE-ROOT the vault code is 4242."


@pytest.fixture
def trap_folder(tmp_path: Path) -> Path:
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "secret.md").write_text(f"# Secret\n\n{OUTSIDE_FACT}\n")
    root = tmp_path / "notes"
    root.mkdir()
    (root / "good.md").write_text(f"# Good\n\n{GOOD_FACT}\n")
    sub = root / "sub"
    sub.mkdir()
    (sub / "inner.md").write_text("# Inner\n\nThe inner note names the Saltreach ferry.\n")
    os.symlink("..", sub / "loop")  # a directory symlink back to its parent
    os.symlink(root, root / "self")  # and one to the root itself
    os.symlink("b.md", root / "a.md")  # a file symlink loop
    os.symlink("a.md", root / "b.md")
    os.symlink(outside / "secret.md", root / "leak.md")  # a file outside the root
    os.symlink(outside, root / "outside-dir")  # a directory outside the root
    os.symlink("/dev/zero", root / "zero.md")  # a device, outside the root
    os.mkfifo(root / "pipe.md")  # reading it would block forever
    os.symlink("pipe.md", root / "pipe-link.md")  # a symlink to the FIFO, inside the root
    os.symlink("good.md", root / "alias.md")  # a symlink inside the root is fine
    (root / "locked.md").write_text("# Locked\n\nno access to this one\n")
    (root / "vanishing.md").write_text("# Vanishing\n\nthis file is deleted as it is opened\n")
    (root / "flaky.md").write_text("# Flaky\n\nthe disk fails while this file is read\n")
    with (root / "huge.txt").open("wb") as fh:  # sparse: 100 MB on paper, a few KB on disk
        fh.write(b"The start of a huge file.\n")
        fh.truncate(HUGE_BYTES)
    return root


def test_trap_folder_skips_each_with_a_reason(trap_folder: Path, settings_for, embedder, monkeypatch) -> None:
    root = trap_folder
    opened: list[str] = []
    real_open = loaders.open_regular

    def hostile_open(self: Path, *args, **kwargs):
        opened.append(self.name)
        if self.name == "locked.md":
            # running as root, a mode-000 file is readable: simulate what a normal user gets
            raise PermissionError(13, "Permission denied", str(self))
        if self.name == "vanishing.md":
            self.unlink()  # deleted between the folder walk and the read
        if self.name == "flaky.md":
            raise OSError(5, "Input/output error", str(self))
        return real_open(self, *args, **kwargs)

    monkeypatch.setattr(loaders, "open_regular", hostile_open)
    if os.geteuid() != 0:
        (root / "locked.md").chmod(0)
    idx = Index(settings_for(root), embedder)
    result: dict = {}
    worker = threading.Thread(target=lambda: result.update(report=idx.sync()), daemon=True)
    worker.start()
    worker.join(timeout=240)
    assert not worker.is_alive(), "indexing the trap folder hung"
    reasons = {s.path: (s.reason, s.detail) for s in idx.store.docs.skipped()}
    expect = {
        "a.md": "not-a-regular-file", "b.md": "not-a-regular-file",  # looping symlinks
        "leak.md": "outside-root", "zero.md": "outside-root",
        "pipe.md": "not-a-regular-file", "pipe-link.md": "not-a-regular-file",
        "locked.md": "unreadable", "flaky.md": "unreadable",
        "vanishing.md": "vanished", "huge.txt": "too-large",
        "outside-dir": "outside-root",  # a directory symlink out of the folder is listed, not silently dropped
    }
    for path, reason in expect.items():
        assert reasons.get(path, ("missing",))[0] == reason, (path, reasons.get(path))
        assert reasons[path][1], f"{path}: a reason always comes with a detail"
    assert "huge.txt" not in opened, "a file over max_file_bytes is skipped from its size, never read"
    docs = set(idx.store.docs.all())
    assert docs == {"good.md", "sub/inner.md", "alias.md"}, docs
    texts = [p.text for path in docs for p in idx.store.docs.passages_of(path)]
    assert any(GOOD_FACT in t for t in texts)
    assert not any("SECRET-OUTSIDE-ROOT" in t for t in texts), "a symlink was followed out of the root"
    assert all(t.strip() for t in texts)
    # nothing was entered through the directory symlinks (no self/…, sub/loop/…, outside-dir/… paths)
    assert not any(p.startswith(("self/", "sub/loop/", "outside-dir/")) for p in set(reasons) | docs)
    assert "self" not in reasons and "sub/loop" not in reasons, "links inside the folder are not news"
    # the vanished file is gone for good: the next sync forgets it; unchanged traps are not retried
    opened.clear()
    again = idx.sync()
    assert again.added == 0 and again.updated == 0
    assert "vanishing.md" not in {s.path for s in idx.store.docs.skipped()}
    assert "huge.txt" not in opened
    # an unreadable file is tried again (a chmod changes no mtime), and stays skipped while it fails
    assert "locked.md" in opened and {s.path: s.reason for s in idx.store.docs.skipped()}["locked.md"] == "unreadable"
    idx.close()


def test_device_file_inside_the_root_is_skipped(tmp_path: Path, settings_for, embedder) -> None:
    root = tmp_path / "dev"
    root.mkdir()
    (root / "ok.md").write_text("# Ok\n\nA plain note about the Brannoch vale walk.\n")
    try:
        os.mknod(root / "null.md", 0o644 | stat.S_IFCHR, os.makedev(1, 3))  # a copy of /dev/null
    except (PermissionError, OSError) as exc:
        pytest.skip(f"cannot create a device node here: {exc}")
    idx = Index(settings_for(root), embedder)
    idx.sync()
    reasons = {s.path: s.reason for s in idx.store.docs.skipped()}
    assert reasons == {"null.md": "not-a-regular-file"}
    assert set(idx.store.docs.all()) == {"ok.md"}
    idx.close()


def test_read_bytes_stops_at_the_limit_for_a_growing_file(tmp_path: Path, monkeypatch) -> None:
    """A file that is small when stat'ed but large when read is still bounded by max_file_bytes."""
    path = tmp_path / "grows.md"
    path.write_text("x" * 10)
    with path.open("ab") as fh:
        fh.truncate(5_000)
    real_stat = Path.stat
    monkeypatch.setattr(Path, "stat", lambda self, **kw: os.stat_result((0o100644, 0, 0, 1, 0, 0, 10, 0, 0, 0))
                        if self == path else real_stat(self, **kw))
    with pytest.raises(SkipFile) as err:
        loaders.read_bytes(path, 1_000)
    assert err.value.reason == "too-large"


# -- names, per-file failures, accounting --------------------------------------------------------------

@pytest.mark.skipif(not sys.platform.startswith("linux"),
                    reason="only Linux lets a file name be arbitrary bytes (macOS and Windows names are Unicode)")
def test_an_undecodable_file_name_is_indexed_and_the_rest_too(notes_dir: Path, settings_for, embedder) -> None:
    raw = os.fsencode(notes_dir) + b"/x\xff.md"
    with open(raw, "wb") as fh:
        fh.write(b"# Odd name\n\nThe Quarnby weir was rebuilt in stone.\n")
    os.mkdir(os.fsencode(notes_dir) + b"/dir\xfe")
    with open(os.fsencode(notes_dir) + b"/dir\xfe/in.md", "wb") as fh:
        fh.write(b"# In an odd folder\n\nThe Hollin mill grinds oats.\n")
    n_files = sum(1 for _ in notes_dir.rglob("*.md"))
    idx = Index(settings_for(notes_dir), embedder)
    report = idx.sync()
    docs = set(idx.store.docs.all())
    assert len(docs) == n_files and not report.skipped, (len(docs), n_files, report.skipped)
    assert {"x\\xff.md", "dir\\xfe/in.md"} <= docs
    for rel in ("x\\xff.md", "dir\\xfe/in.md"):  # the display form maps back to the very file
        assert (notes_dir / walker.fs_name(rel)).is_file()
    assert "Quarnby" in idx.store.docs.passages_of("x\\xff.md")[0].text
    again = idx.sync()  # and again, without a stumble
    assert again.unchanged + again.touched == n_files and not again.skipped
    idx.close()


@settings(max_examples=300, deadline=None, derandomize=True)
@given(name=st.binary(min_size=1, max_size=40).filter(lambda b: b"/" not in b and b"\x00" not in b))
def test_display_names_are_text_and_map_back(name: bytes) -> None:
    fs = os.fsdecode(name)
    shown = walker.display_name(fs)
    shown.encode("utf-8")  # valid text: SQLite, JSON and terminals take it
    assert walker.fs_name(shown) == fs
    if "\\" not in fs and fs.isprintable() and fs == name.decode("utf-8", "surrogateescape") and \
            not any(0xDC80 <= ord(c) <= 0xDCFF for c in fs):
        assert shown == fs, "a name that decodes is shown as it is"


def test_one_failing_file_never_stops_the_folder(notes_dir: Path, settings_for, embedder, monkeypatch) -> None:
    from localrag.ingest import sync as sync_module

    idx = Index(settings_for(notes_dir), embedder)
    idx.sync()
    before = [p.sha256 for p in idx.store.docs.passages_of("orlinsford.md")]
    (notes_dir / "orlinsford.md").write_text("# Orlinsford\n\nRewritten: the bridge is now of iron.\n")
    (notes_dir / "fresh.md").write_text("# Fresh\n\nThe Wendle ferry runs at dawn.\n")
    real_chunk = sync_module.chunk_text

    def chunk_that_breaks(text, kind, title, *a, **kw):
        if "bridge is now of iron" in text:
            raise ValueError("simulated parser bug")
        return real_chunk(text, kind, title, *a, **kw)

    monkeypatch.setattr(sync_module, "chunk_text", chunk_that_breaks)
    report = idx.sync()
    assert [(s.path, s.reason) for s in report.skipped] == [("orlinsford.md", "error")]
    assert "simulated parser bug" in report.skipped[0].detail
    assert "fresh.md" in idx.store.docs.all() and report.added == 1
    assert [p.sha256 for p in idx.store.docs.passages_of("orlinsford.md")] == before, "the old version is kept"
    assert {s.path: s.reason for s in idx.store.docs.skipped()} == {"orlinsford.md": "error"}
    assert report.accounted == report.files_seen
    monkeypatch.setattr(sync_module, "chunk_text", real_chunk)
    fixed = idx.sync()  # the fixed file is read again (its old document's stat differs)
    assert fixed.updated == 1 and not idx.store.docs.skipped()
    idx.close()


def test_the_sync_summary_accounts_for_every_file(notes_dir: Path, settings_for, embedder, tmp_path) -> None:
    outside = tmp_path / "elsewhere"
    outside.mkdir()
    (outside / "far.md").write_text("# Far\n\nnot in the folder\n")
    idx = Index(settings_for(notes_dir), embedder)
    first = idx.sync()
    assert first.accounted == first.files_seen
    old = time.time() - 3600  # outside the racy window, so unchanged files are not re-read
    for f in notes_dir.rglob("*.md"):
        os.utime(f, (old, old))
    idx.sync()
    (notes_dir / "quillhaven.md").write_text("# Quillhaven\n\nEdited.\n")  # changed
    (notes_dir / "new.md").write_text("# New\n\nThe Oster dam.\n")  # added
    (notes_dir / "saltreach.md").rename(notes_dir / "saltreach-moved.md")  # moved
    (notes_dir / "orlinsford.md").unlink()  # removed
    os.utime(notes_dir / "kallendar-workshop.md")  # touched: same content, new mtime
    (notes_dir / "blank.md").write_text("   \n")  # skipped (empty)
    os.symlink(outside, notes_dir / "far-dir")  # skipped (outside the folder)
    report = idx.sync()
    assert (report.added, report.updated, report.moved, report.removed, report.touched) == (1, 1, 1, 1, 1)
    assert {s.path for s in report.skipped} == {"blank.md", "far-dir"}
    assert report.unchanged == report.files_seen - 6
    assert report.accounted == report.files_seen == sum(1 for _ in notes_dir.rglob("*.md")) + 1
    from localrag.commands.index import sync_summary

    line = sync_summary(report)
    assert line.startswith(f"{report.files_seen} files: 1 added, 1 changed, 1 touched (same content), 1 moved, "
                           f"{report.unchanged} unchanged, 2 skipped") and "1 removed" in line
    again = idx.sync()  # the empty file is now still-skipped, and still counted
    assert again.still_skipped == 1 and again.accounted == again.files_seen
    assert "2 skipped (1 unchanged since last time)" in sync_summary(again)
    idx.close()


def test_a_file_swapped_for_a_fifo_after_listing_is_not_waited_on(tmp_path: Path) -> None:
    path = tmp_path / "note.md"
    os.mkfifo(path)  # the walker saw a regular file; by the time it is read it is a FIFO
    result: dict = {}
    worker = threading.Thread(target=lambda: result.update(err=_skip_reason(path)), daemon=True)
    worker.start()
    worker.join(timeout=10)
    assert not worker.is_alive(), "reading a FIFO blocked"
    assert result["err"] == "not-a-regular-file"
    (tmp_path / "real.md").write_text("x")
    os.symlink(tmp_path / "real.md", tmp_path / "swapped.md")  # and a file swapped for a symlink
    assert _skip_reason(tmp_path / "swapped.md") == "not-a-regular-file"


def _skip_reason(path: Path) -> str:
    try:
        loaders.read_bytes(path, 10_000, follow_symlinks=False)
    except SkipFile as skip:
        return skip.reason
    return "read"


def test_a_folder_that_cannot_be_listed_keeps_what_was_indexed(notes_dir: Path, settings_for, embedder,
                                                               monkeypatch) -> None:
    idx = Index(settings_for(notes_dir), embedder)
    idx.sync()
    people = {p for p in idx.store.docs.all() if p.startswith("people/")}
    assert people
    real_scandir = os.scandir

    def scandir(path="."):
        if os.fspath(path).endswith("/people"):
            raise PermissionError(13, "Permission denied", os.fspath(path))
        return real_scandir(path)

    monkeypatch.setattr(os, "scandir", scandir)  # what a user gets after `chmod 000 people`
    report = idx.sync()
    assert report.removed == 0 and people <= set(idx.store.docs.all())
    assert {s.path: s.reason for s in idx.store.docs.skipped()} == {"people": "unreadable"}
    monkeypatch.setattr(os, "scandir", real_scandir)
    idx.sync()
    assert not idx.store.docs.skipped() and people <= set(idx.store.docs.all())
    idx.close()


def test_a_folder_nested_1200_deep_is_walked(tmp_path: Path) -> None:
    """os.walk recursed once per level: RecursionError stopped the whole sync at ~1,000 levels."""
    path = tmp_path / "deep"
    path.mkdir()
    for _ in range(1200):
        path = path / "d"
        path.mkdir()  # one level at a time: pathlib's mkdir(parents=True) recurses too
    (path / "deep.md").write_text("# Deep\n\nfar down\n")
    try:
        found, rejected = walker.walk(tmp_path / "deep", [".md"], [])
        assert [f.rel for f in found] == ["d/" * 1200 + "deep.md"] and not rejected
    finally:
        remove_deep_tree(path)


def remove_deep_tree(deepest: Path) -> None:
    """Bottom-up, one level at a time (shutil.rmtree, which pytest's clean-up uses, recurses too)."""
    for child in deepest.iterdir():
        child.unlink()
    while deepest.name == "d":
        deepest.rmdir()
        deepest = deepest.parent
