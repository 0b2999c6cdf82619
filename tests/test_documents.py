"""Documents (PDF, Word, PowerPoint, OpenDocument, EPUB, RTF): each loader keeps the known sentence,
its table as rows and the place a person finds it; a folder of them indexes completely and a
question finds each document's passage with its locator; broken, encrypted and scanned files are
skipped with their reason; an edited document keeps its unchanged passages."""

from __future__ import annotations

import io
import json
import shutil
import time
import zipfile
from pathlib import Path

import pytest
from document_fixtures import (KNOWN, docx_bytes, epub_bytes, odp_bytes, odt_bytes, pdf_bytes, pptx_bytes, rtf_bytes,
                               scanned_pdf_bytes, write_documents)

from localrag.api import Assistant, Index
from localrag.config import load_settings
from localrag.ingest.documents import packages
from localrag.ingest.loaders import SkipFile, load_data
from localrag.ingest.places import chunk_document, locator

WRITERS = {"pdf": pdf_bytes, "docx": docx_bytes, "pptx": pptx_bytes, "odt": odt_bytes, "odp": odp_bytes,
           "epub": epub_bytes, "rtf": rtf_bytes}
TITLES = {"pdf": "The Orwell Lighthouse", "docx": "The Harrowgate Bridge", "pptx": "Orchards of the Tamar",
          "odt": "The Kestrel Street Bakery", "odp": "Murrowby Glass", "epub": "The Voyage of the Pellucid",
          "rtf": "The Dunmere Choir"}

COMMITTED = Path(__file__).parent / "fixtures" / "documents"  # written by document_fixtures.py, one per format


def _passages(kind: str):
    known = KNOWN[kind]
    loaded = load_data(Path(known.name), WRITERS[kind]())
    assert loaded.layout is not None
    chunks = chunk_document(loaded.text, loaded.layout, loaded.title, 100, 300)
    return loaded, [(c, locator(c, loaded.layout)) for c in chunks]


@pytest.mark.parametrize("kind", sorted(KNOWN))
def test_each_loader_keeps_the_sentence_its_place_the_table_and_the_title(kind):
    known = KNOWN[kind]
    loaded, passages = _passages(kind)
    assert loaded.kind == kind and loaded.title == TITLES[kind]
    holding = [place for chunk, place in passages if known.sentence in " ".join(chunk.text.split())]
    assert holding == [known.locator]
    row = " | ".join(known.table_row)
    if kind == "pdf":  # a PDF has no table structure: PDFium gives a row as one line, cells in order
        assert " ".join(known.table_row) in loaded.text.split("\n")
    else:
        assert f"| {row} |" in loaded.text.split("\n")


def test_headings_become_the_heading_path_and_lists_stay_items():
    _, passages = _passages("docx")
    restoration = next(c for c, _ in passages if KNOWN["docx"].sentence in c.text)
    assert restoration.heading == "The Harrowgate Bridge > Restoration"
    loaded = load_data(Path("bridge.docx"), docx_bytes())
    assert "- Stone piers from an older crossing\n- Iron girders cast in Leeds" in loaded.text
    _, slides = _passages("pptx")
    assert [c.heading for c, place in slides if place == "slide 2"] == ["Orchards of the Tamar > Harvest calendar"]
    assert any("Mention the cider presses." in c.text for c, place in slides if place == "slide 2")  # speaker notes


def test_a_page_or_slide_is_never_split_across_passages_and_each_cites_its_own():
    _, pages = _passages("pdf")
    assert [place for _, place in pages] == ["p. 1", "p. 2", "p. 3"]


def test_a_300_page_pdf_is_read_in_seconds():
    data = pdf_bytes(pages=300)
    started, cpu = time.perf_counter(), time.process_time()
    loaded = load_data(Path("long.pdf"), data)
    chunks = chunk_document(loaded.text, loaded.layout, loaded.title, 100, 300)
    wall, cpu = time.perf_counter() - started, time.process_time() - cpu
    places = [locator(c, loaded.layout) for c in chunks]
    assert places[0] == "p. 1" and places[-1] == "p. 300" and len(set(places)) == 300
    assert wall < 10, f"300 pages took {wall:.1f} s wall, {cpu:.1f} s CPU"  # ~1 s on 2 loaded cores


@pytest.mark.parametrize(("name", "data", "reason", "says"), [
    ("secret.pdf", lambda: pdf_bytes(encrypt_with="hunter2"), "encrypted", "needs a password"),
    ("scan.pdf", scanned_pdf_bytes, "no-text-layer", "no text layer (scanned?)"),
    ("broken.docx", lambda: docx_bytes()[:3000], "document-error", "zip container is damaged"),
    ("not-a-deck.pptx", lambda: b"this is plain text, not a deck", "document-error", "not a readable .pptx"),
    ("broken.odt", lambda: odt_bytes()[:-200], "document-error", "not a readable .odt"),
    ("broken.epub", lambda: _zip({"mimetype": "application/epub+zip"}), "document-error", "container.xml"),
    ("plain.rtf", lambda: b"just words", "document-error", "does not start with {\\rtf"),
])
def test_a_file_that_cannot_be_read_is_skipped_with_its_reason(name, data, reason, says):
    with pytest.raises(SkipFile) as err:
        load_data(Path(name), data())
    assert err.value.reason == reason and says in err.value.detail


def test_a_zip_that_unpacks_past_the_limit_is_refused_before_it_is_parsed(monkeypatch):
    monkeypatch.setattr(packages, "MAX_UNPACKED_BYTES", 1_000_000)
    bomb = _zip({"word/document.xml": "<w/>" + " " * 2_000_000})  # 2 MB of spaces pack to a few KB
    assert len(bomb) < 20_000
    with pytest.raises(SkipFile) as err:
        load_data(Path("bomb.docx"), bomb)
    assert err.value.reason == "unpacks-too-large"


def test_drm_encrypted_epub_is_skipped():
    data = io.BytesIO(epub_bytes())
    with zipfile.ZipFile(data, "a") as z:
        z.writestr("META-INF/encryption.xml",
                   '<encryption xmlns="urn:oasis:names:tc:opendocument:xmlns:container" '
                   'xmlns:enc="http://www.w3.org/2001/04/xmlenc#"><enc:EncryptedData><enc:CipherData>'
                   '<enc:CipherReference URI="OEBPS/text/c2.xhtml"/></enc:CipherData></enc:EncryptedData></encryption>')
    with pytest.raises(SkipFile) as err:
        load_data(Path("locked.epub"), data.getvalue())
    assert err.value.reason == "encrypted"


def _zip(parts: dict[str, str]) -> bytes:
    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w", zipfile.ZIP_DEFLATED) as z:
        for name, text in parts.items():
            z.writestr(name, text)
    return buf.getvalue()


# -- the folder, indexed ---------------------------------------------------------------------


@pytest.fixture
def documents_index(tmp_path, settings_for, embedder):
    folder = tmp_path / "documents"
    shutil.copytree(COMMITTED, folder)  # the committed documents, as a user's folder would hold them
    (folder / "secret.pdf").write_bytes(pdf_bytes(encrypt_with="hunter2"))
    (folder / "broken.docx").write_bytes(docx_bytes()[:3000])
    idx = Index(settings_for(folder), embedder)
    report = idx.sync()
    yield idx, report
    idx.close()


def test_the_committed_documents_are_the_ones_the_fixture_module_writes(tmp_path):
    written = write_documents(tmp_path / "written")
    assert sorted(p.name for p in COMMITTED.iterdir()) == sorted(p.name for p in written.values())
    for kind, path in written.items():
        committed = load_data(Path(path.name), (COMMITTED / path.name).read_bytes())
        assert committed.text == load_data(Path(path.name), path.read_bytes()).text, kind
        assert KNOWN[kind].sentence in " ".join(committed.text.split()), kind


def test_the_folder_indexes_completely_and_each_question_finds_its_document_and_place(documents_index):
    idx, report = documents_index
    assert {s.path: s.reason for s in report.skipped} == {"secret.pdf": "encrypted", "broken.docx": "document-error"}
    assert set(idx.store.docs.all()) == {k.name for k in KNOWN.values()}
    assistant = Assistant(idx, llm=object())
    for kind, known in KNOWN.items():
        top = assistant.retrieve(known.question, strategy="hybrid", k=3).passages[:3]
        found = [sp.passage for sp in top if sp.passage.path == known.name]
        assert found, (kind, [sp.passage.location for sp in top])
        assert found[0].location == f"{known.name} {known.locator}"
        assert known.sentence in " ".join(found[0].text.split())


def test_an_edited_document_keeps_its_unchanged_passages(documents_index):
    idx, _ = documents_index
    path = idx.folder / KNOWN["docx"].name
    before = {p.sha256: p.id for p in idx.store.docs.passages_of(path.name)}
    path.write_bytes(docx_bytes(extra_paragraph="The new railings were forged in Sheffield."))
    report = idx.sync()
    after = idx.store.docs.passages_of(path.name)
    assert report.updated == 1 and report.passages_added == 1 and report.passages_removed == 1
    kept = [p for p in after if p.sha256 in before]
    assert len(kept) == len(after) - 1 and all(before[p.sha256] == p.id for p in kept)
    assert any("Sheffield" in p.text and p.locator == "§ Restoration" for p in after)


# -- where a document's passage is shown: status, the TUI, MCP ----------------------------------


def test_status_counts_documents_per_format(documents_index):
    idx, _ = documents_index
    assert idx.status().by_kind == {kind: 1 for kind in KNOWN}


def test_mcp_open_gives_a_documents_page_by_its_locator_and_by_its_lines(documents_index, embedder):
    from localrag.mcp_server.tools import NotesTools, ServerOptions  # the MCP layer, for this test only

    idx, _ = documents_index
    tools = NotesTools(idx.settings, ServerOptions(readonly=True), embedder=embedder)
    try:
        page = tools.open("lighthouse.pdf", "p. 2")
        assert page["location"] == "lighthouse.pdf p. 2" and KNOWN["pdf"].sentence in page["text"]
        assert "Page 3" not in page["text"]
        cited = next(p for p in idx.store.docs.passages_of("voyage.epub") if KNOWN["epub"].sentence in p.text)
        opened = tools.open("voyage.epub", f"{cited.start_line}-{cited.end_line}")
        assert opened["text"].strip() == cited.text.strip() and opened["location"] == "voyage.epub ch. 2"
        found = tools.search(KNOWN["pptx"].question, k=3)["passages"]
        assert any(r["location"] == "orchard.pptx slide 2" and r["locator"] == "slide 2" for r in found)
    finally:
        tools.close()


UNIT_LOCATORS = ["p. 12", "p. 1–2", "slide 3", "slide 3–4", "ch. 2", "ch. 10–11", "¶ 7", "¶ 7–9"]


def test_a_unit_locator_is_written_and_read_by_one_pair_of_functions():
    from localrag.ingest.documents.layout import CHAPTER, PAGE, PARAGRAPH, SLIDE, Units, format_units, parse_units

    for text in UNIT_LOCATORS:
        assert format_units(parse_units(text)) == text
    for unit in (PAGE, SLIDE, CHAPTER, PARAGRAPH):
        for units in (Units(unit, 3, 3), Units(unit, 12, 14)):
            assert parse_units(format_units(units)) == units
    assert parse_units("p. 1–2") == Units(PAGE, 1, 2)
    for heading in ("§ Results", "§ Stage 2", "§ 3", "", "12-14", "p. 12-13", "page 12"):
        assert parse_units(heading) is None, heading  # a heading, a line range, a person's way of writing it


@pytest.mark.parametrize("kind", sorted(KNOWN))
def test_every_locator_a_loader_writes_reads_back_as_its_units(kind):
    from localrag.ingest.documents.layout import format_units, parse_units
    from localrag.ingest.places import range_locator

    loaded, passages = _passages(kind)
    lines = len(loaded.text.split("\n"))
    written = [place for _, place in passages] + [range_locator(loaded.layout, 1, lines)]
    for place in written:
        units = parse_units(place)
        assert place.startswith("§ ") if units is None else format_units(units) == place, place
    assert parse_units(written[-1]).last == loaded.layout.unit_at(lines)  # the whole text: its last unit


def test_indexed_text_finds_units_by_number_and_never_a_heading_that_ends_in_one():
    from localrag.ingest.places import IndexedText
    from localrag.records import Passage

    def passage(i: int, start: int, end: int, locator: str) -> Passage:
        return Passage(i, 1, "a.pdf", "a", i, "", "\n".join(f"line {n}" for n in range(start, end + 1)), "x", start, end,
                       locator=locator)

    pages = IndexedText.of([passage(1, 1, 2, "p. 1"), passage(2, 3, 5, "p. 2"), passage(3, 6, 6, "p. 3")])
    assert (pages.place("p. 2"), pages.place("page 3"), pages.place("p. 4")) == ((3, 5), (6, 6), None)
    assert (pages.locator(1, 2), pages.locator(2, 6), pages.locator(4, 5)) == ("p. 1", "p. 1–3", "p. 2")
    headed = IndexedText.of([passage(1, 1, 2, "§ Stage 2"), passage(2, 3, 4, "§ Stage 3")])
    assert headed.place("p. 2") is None
    assert headed.locator(1, 4) == "§ Stage 2–§ Stage 3"


def test_a_pdfs_indexed_text_is_its_extracted_text_line_for_line(documents_index):
    from localrag.ingest.loaders import load_file
    from localrag.ingest.places import IndexedText

    idx, _ = documents_index
    extracted = load_file(idx.folder / "lighthouse.pdf", idx.settings.index.max_file_bytes, None).text.split("\n")
    indexed = IndexedText.of(idx.store.docs.passages_of("lighthouse.pdf"))
    assert len(indexed.lines) == len(extracted) or extracted[len(indexed.lines):] == [""] * (len(extracted) - len(indexed.lines))
    assert [line for line in indexed.lines if line.strip()] == [line for line in extracted if line.strip()]
    assert indexed.place("page 2") is not None and indexed.place("p. 99") is None and indexed.place("3-4") is None


def test_the_tui_shows_a_documents_passage_under_its_locator(documents_index):
    from localrag.answer import Citation  # the TUI's citation record
    from localrag.tui.chat import citation_label  # Textual widgets, for this test only
    from localrag.tui.source import render_source  # Textual widgets, for this test only

    idx, _ = documents_index
    passage = next(p for p in idx.store.docs.passages_of("lighthouse.pdf") if KNOWN["pdf"].sentence in p.text)
    citation = Citation(1, passage, cited=True)
    assert "lighthouse.pdf p. 2" in citation_label(citation).plain
    table, note = render_source(citation, idx.folder)
    assert note == "a .pdf document is shown as its indexed text"
    assert table.row_count == len(passage.text.splitlines())


def test_ask_json_gives_each_citation_its_path_lines_and_locator_apart(tmp_path, embedder, monkeypatch, capsys):
    import localrag.embed  # the CLI's default embedder: the session's, loaded once
    from localrag.cli import main  # the command line, in process

    monkeypatch.setattr(localrag.embed, "_DEFAULT", embedder)
    for name in [k for k in __import__("os").environ if k.startswith("LOCALRAG_")]:
        monkeypatch.delenv(name)
    monkeypatch.setenv("LOCALRAG_ANSWER_WRITER", "quote")  # the quoting writer: no model load
    folder = tmp_path / "asked"
    folder.mkdir()
    (folder / KNOWN["pdf"].name).write_bytes(pdf_bytes())
    (folder / "harbour.md").write_text("# Harbour\n\nThe harbour wall of Kelmouth was rebuilt in granite in 1907.\n")

    def ask(question: str, *extra: str) -> dict:
        assert main(["ask", question, "-f", str(folder), "--json", "--strategy", "hybrid", *extra]) == 0
        return json.loads(capsys.readouterr().out)

    cited = ask(KNOWN["pdf"].question)["citations"][0]
    note = ask("What was the harbour wall of Kelmouth rebuilt in?", "--no-sync")["citations"][0]
    idx = Index(load_settings(folder, env={}), embedder)
    try:
        page = next(p for p in idx.store.docs.passages_of(KNOWN["pdf"].name) if KNOWN["pdf"].sentence in p.text)
        wall = idx.store.docs.passages_of("harbour.md")[0]
    finally:
        idx.close()
    assert (cited["path"], cited["start_line"], cited["end_line"], cited["locator"], cited["location"]) == (
        KNOWN["pdf"].name, page.start_line, page.end_line, "p. 2", f"{KNOWN['pdf'].name} p. 2")
    assert (note["path"], note["start_line"], note["end_line"], note["locator"], note["location"]) == (
        "harbour.md", wall.start_line, wall.end_line, "", f"harbour.md:{wall.start_line}-{wall.end_line}")


def test_an_index_from_before_locators_reads_its_pdfs_again(tmp_path, settings_for, embedder):
    folder = tmp_path / "old"
    folder.mkdir()
    (folder / "lighthouse.pdf").write_bytes(pdf_bytes())
    (folder / "note.md").write_text("# Note\n\nA note about the harbour wall.\n")
    settings = settings_for(folder)
    idx = Index(settings, embedder)
    idx.sync()
    with idx.store.transaction():  # the index as schema 11 left it: no locator column, migration 12 not run
        idx.store.execute("ALTER TABLE passages DROP COLUMN locator")
        idx.store.execute("DELETE FROM schema_migrations WHERE version = 12")
    idx.close()
    idx = Index(settings, embedder)
    try:
        report = idx.sync()
        # the PDF is read again (its passages' text is the same: kept, with their locators); the note is not
        assert report.updated == 1 and report.unchanged + report.touched == 1 and report.passages_kept == 3
        assert [p.location for p in idx.store.docs.passages_of("lighthouse.pdf")] == [
            "lighthouse.pdf p. 1", "lighthouse.pdf p. 2", "lighthouse.pdf p. 3"]
    finally:
        idx.close()
