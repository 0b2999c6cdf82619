"""Chunks fit the embedder's real window (MiniLM's tokenizer), with exact line ranges."""

from __future__ import annotations

from localrag.api import Index
from localrag.ingest.chunker import chunk_text
from localrag.ingest.window import fit_chunk, fit_window, source_lines

# technical prose tokenises into far more wordpieces than regex tokens
LONG_LINE = " ".join(f"Configure dendron.yml's vaultSelectionModeOnCreate (v{i}.{i * 7}) and re-run initialiseWorkspace."
                     for i in range(40))
NOTE = f"""# Setup

## Options

{LONG_LINE}

Short closing line about the schema.

## Notes

A small section.
"""


def test_long_chunks_are_split_within_the_window_keeping_every_word(embedder):
    count, window = embedder.window_counter()
    chunks = chunk_text(NOTE, "markdown", "Setup", 100, 300)
    assert max(count([c.embed_text for c in chunks])) > window  # the case the step exists for
    fitted = fit_window(chunks, NOTE, embedder)
    assert len(fitted) > len(chunks)
    assert max(count([c.embed_text for c in fitted])) <= window
    assert " ".join(" ".join(c.text.split()) for c in fitted).split() == " ".join(
        " ".join(c.text.split()) for c in chunks).split()
    lines = NOTE.split("\n")
    for c in fitted:  # every piece cites the source lines that hold its text
        for piece_line in c.text.split("\n"):
            if piece_line.strip():
                assert any(piece_line.strip() in lines[n - 1] for n in range(c.start_line, c.end_line + 1))


def test_a_chunk_that_fits_is_left_alone(embedder):
    count, window = embedder.window_counter()
    chunks = chunk_text("# T\n\nA short note.\n", "markdown", "T", 100, 300)
    assert fit_chunk(chunks[0], "# T\n\nA short note.\n".split("\n"), count, window) == [chunks[0]]


def test_source_lines_follow_blank_lines_and_pieces():
    text = "# T\n\npara one\n\n\npara two\n"
    chunk = chunk_text(text, "markdown", "T", 1, 300)[0]
    numbers = source_lines(chunk, text.split("\n"))
    assert numbers[0] == chunk.start_line and numbers[-1] == chunk.end_line == 6


def test_sync_stores_only_passages_within_the_window(tmp_path, embedder, settings_for):
    folder = tmp_path / "notes"
    folder.mkdir()
    (folder / "setup.md").write_text(NOTE)
    index = Index(settings_for(folder), embedder)
    try:
        index.sync()
        count, window = embedder.window_counter()
        passages = index.store.docs.passages_of("setup.md")
        assert len(passages) >= 3
        lines = NOTE.split("\n")
        for p in passages:
            assert p.start_line <= p.end_line
            assert p.text.split("\n")[0].strip() in lines[p.start_line - 1]
        from localrag.kg.builder import extraction_text

        assert max(count([extraction_text(p) for p in passages])) <= window
    finally:
        index.close()


def _command_page(filler: int) -> str:
    """A command page in Chinese whose items are a lead-in ending in a full-width colon and its command."""
    items = [f"- 创建一个新的包并指定其第 {i} 个版本的安装地址和维护者的名字：\n\n`pkg new {{{{包名}}}} --version {i}`\n"
             for i in range(14)]
    return "# pkg new\n\n> " + "生成新的包规范文件。" * (1 + filler) + "\n\n" + "\n".join(items)


def test_a_lead_in_opens_the_next_piece_with_its_code(embedder):
    """Where the window cuts a chunk, a last line that announces the code below it goes with that code."""
    count, window = embedder.window_counter()
    cut = 0
    for filler in range(12):  # moves where the window falls, so some cut would land after a lead-in
        page = _command_page(filler)
        chunk = chunk_text(page, "markdown", "pkg new", 10_000, 10_000)[0]
        pieces = fit_chunk(chunk, page.split("\n"), count, window)
        assert max(count([p.embed_text for p in pieces])) <= window
        for piece in pieces[:-1]:
            cut += 1
            assert not piece.text.rstrip().endswith("："), piece.text[-80:]
        for piece in pieces[1:]:
            assert piece.text.lstrip().startswith(("- ", "`")), piece.text[:40]
    assert cut >= 12
