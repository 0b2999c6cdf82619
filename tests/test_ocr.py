"""Scanned PDFs: a page without a text layer is read by OCR when an engine is installed (RapidOCR,
the `ocr` extra; or tesseract on PATH), cited by its page like any PDF page; with index.ocr = "off"
or no engine it is skipped as "no text layer (scanned?)", and `status` says which engine there is."""

from __future__ import annotations

import dataclasses
import json
import os
import shutil
import time
from pathlib import Path

import numpy as np
import pytest
from document_fixtures import SCANNED, scanned_pdf_bytes, scanned_text_pdf_bytes

from localrag.api import Assistant, Index
from localrag.config import ConfigError, load_settings
from localrag.ingest.documents import ocr
from localrag.ingest.documents.ocr import OcrError, PageOcr, availability, find_engine, text_of_boxes
from localrag.ingest.loaders import SkipFile, load_data

rapidocr_installed = pytest.mark.skipif(not ocr._has_rapidocr(), reason="needs the ocr extra (rapidocr, onnxruntime)")
NOTE = "# Harbour\n\nThe harbour wall of Kelmouth was rebuilt in granite in 1907.\n"


@pytest.fixture(scope="module")
def scan() -> bytes:
    return scanned_text_pdf_bytes()


def _folder(root: Path, scan: bytes) -> Path:
    folder = root / "scans"
    folder.mkdir()
    (folder / SCANNED.name).write_bytes(scan)
    (folder / "harbour.md").write_text(NOTE)
    return folder


def _mcp_open(idx: Index, embedder, path: str, lines: str) -> dict:
    from localrag.mcp_server.tools import NotesTools, ServerOptions  # the MCP layer, for this test only

    tools = NotesTools(idx.settings, ServerOptions(readonly=True), embedder=embedder)
    try:
        return tools.open(path, lines)
    finally:
        tools.close()


def _no_engine(monkeypatch, tmp_path: Path) -> None:
    """This machine as one without the extra and without tesseract."""
    monkeypatch.setattr(ocr, "_has_rapidocr", lambda: False)
    monkeypatch.setenv("PATH", str(tmp_path / "empty-bin"))


def _tesseract_on_path(monkeypatch, tmp_path: Path, script: str) -> Path:
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    exe = bin_dir / "tesseract"
    exe.write_text("#!/bin/sh\n" + script)
    exe.chmod(0o755)
    monkeypatch.setenv("PATH", str(bin_dir))
    return exe


tesseract_installed = pytest.mark.skipif(shutil.which("tesseract") is None,
                                         reason="needs tesseract on PATH (Debian: tesseract-ocr; .ci/run installs it)")


@tesseract_installed
def test_real_tesseract_reads_a_scanned_pdf_found_by_search_and_cited_by_its_page(tmp_path, settings_for, embedder, scan):
    idx = Index(settings_for(_folder(tmp_path, scan), **{"index.ocr": "tesseract"}), embedder)
    try:
        report = idx.sync()
        assert report.skipped == [] and report.ocr_pages == 2
        top = Assistant(idx, llm=object()).retrieve(SCANNED.question, strategy="hybrid", k=3).passages[:3]
        found = [sp.passage for sp in top if sp.passage.path == SCANNED.name]
        assert found and found[0].location == f"{SCANNED.name} {SCANNED.locator}"
        assert SCANNED.sentence in " ".join(found[0].text.split())
        assert (SCANNED.name, "2 of 2 pages read by OCR (tesseract): words may be misread") in idx.status().warnings
    finally:
        idx.close()


@rapidocr_installed
def test_a_scanned_pdf_is_read_by_ocr_found_by_search_and_cited_by_its_page(tmp_path, settings_for, embedder, scan,
                                                                             monkeypatch):
    from localrag.commands.index import sync_summary  # the report line `localrag index` prints
    from localrag.commands.watch import cycle_line  # the line `localrag watch` prints
    from localrag.ingest.watcher import IndexCycle

    idx = Index(settings_for(_folder(tmp_path, scan)), embedder)
    try:
        events = []
        report = idx.sync(progress=events.append)
        assert report.skipped == [] and report.added == 2 and report.ocr_pages == 2
        assert [(e.done, e.total, e.path) for e in events if e.phase == "ocr"] == [(1, 2, SCANNED.name), (2, 2, SCANNED.name)]
        assert "2 pages read by OCR" in sync_summary(report)
        assert cycle_line(IndexCycle(None, sync=report)).endswith("; 2 pages read by OCR")
        top = Assistant(idx, llm=object()).retrieve(SCANNED.question, strategy="hybrid", k=3).passages[:3]
        found = [sp.passage for sp in top if sp.passage.path == SCANNED.name]
        assert found and found[0].location == f"{SCANNED.name} {SCANNED.locator}"
        assert SCANNED.sentence in " ".join(found[0].text.split())
        st = idx.status()
        assert st.ocr.engine.startswith("rapidocr") and "read by OCR" in st.ocr.summary
        assert (SCANNED.name, f"2 of 2 pages read by OCR ({st.ocr.engine}): words may be misread") in st.warnings
        monkeypatch.setattr(ocr, "_has_rapidocr", lambda: False)  # open must not read the pages again
        monkeypatch.setenv("PATH", str(tmp_path / "empty-bin"))
        opened = _mcp_open(idx, embedder, SCANNED.name, SCANNED.locator)
        assert opened["location"] == f"{SCANNED.name} p. 2" and opened["text"].strip() == found[0].text.strip()
        whole = _mcp_open(idx, embedder, SCANNED.name, "")
        assert whole["location"] == f"{SCANNED.name} p. 1–2" and SCANNED.sentence in " ".join(whole["text"].split())
        os.utime(idx.folder / SCANNED.name, ns=(time.time_ns(), time.time_ns() + 5_000_000_000))
        again = idx.sync()  # the same content with a new time: not read again
        assert again.touched >= 1 and again.updated == 0 and again.ocr_pages == 0
    finally:
        idx.close()


def test_with_ocr_off_a_scanned_pdf_is_skipped_with_the_reason_and_the_rest_indexes(tmp_path, settings_for, embedder,
                                                                                     scan):
    idx = Index(settings_for(_folder(tmp_path, scan), **{"index.ocr": "off"}), embedder)
    try:
        report = idx.sync()
        assert [(s.path, s.reason) for s in report.skipped] == [(SCANNED.name, "no-text-layer")]
        assert report.skipped[0].detail == "no text layer (scanned?): 2 pages, none with text"
        assert report.added == 1 and report.ocr_pages == 0
        assert idx.status().ocr.summary == 'off (index.ocr = "off"): PDF pages without a text layer are skipped'
    finally:
        idx.close()


@rapidocr_installed
def test_without_an_engine_status_says_how_to_get_one_and_the_pdf_is_read_once_there_is(tmp_path, settings_for,
                                                                                      embedder, scan, monkeypatch):
    folder = _folder(tmp_path, scan)
    past = time.time_ns() - 60_000_000_000  # not "racily clean": an unchanged file is not read again
    os.utime(folder / SCANNED.name, ns=(past, past))
    idx = Index(settings_for(folder), embedder)
    try:
        with monkeypatch.context() as m:
            _no_engine(m, tmp_path)
            report = idx.sync()
            assert [(s.path, s.reason, s.detail) for s in report.skipped] == [
                (SCANNED.name, "no-text-layer", "no text layer (scanned?): 2 pages, none with text")]
            st = idx.status().ocr
            assert st.engine == "" and "no OCR engine installed" in st.summary and "pip install 'localrag[ocr]'" in st.summary
            assert idx.sync().still_skipped == 1  # unchanged, and still nothing to read it with
        report = idx.sync()  # the extra is installed now: the skipped scan is read, though it did not change
        assert report.added == 1 and report.ocr_pages == 2 and idx.store.docs.skipped() == []
    finally:
        idx.close()


def test_status_on_the_command_line_names_the_ocr_engine(tmp_path, embedder, monkeypatch, capsys):
    import localrag.embed  # the CLI's default embedder: the session's, loaded once
    from localrag.cli import main  # the command line, in process

    monkeypatch.setattr(localrag.embed, "_DEFAULT", embedder)
    for name in [k for k in os.environ if k.startswith("LOCALRAG_")]:
        monkeypatch.delenv(name)
    folder = tmp_path / "notes"
    folder.mkdir()
    (folder / "harbour.md").write_text(NOTE)
    assert main(["index", str(folder), "--no-graph", "--quiet"]) == 0
    capsys.readouterr()
    expected = availability("auto", 50)
    assert main(["status", str(folder), "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["ocr"] == dataclasses.asdict(expected)
    assert main(["status", str(folder)]) == 0
    assert f"ocr {expected.summary}" in " ".join(capsys.readouterr().out.split())  # the table may wrap it
    _no_engine(monkeypatch, tmp_path)
    assert main(["status", str(folder)]) == 0
    assert "no OCR engine installed" in capsys.readouterr().out


@rapidocr_installed
def test_a_page_past_the_cap_is_left_out_and_said(scan):
    loaded = load_data(Path(SCANNED.name), scan, PageOcr(find_engine("rapidocr"), max_pages=1))
    assert loaded.ocr_pages == 1 and set(loaded.layout.units) == {1} and SCANNED.sentence not in loaded.text
    assert loaded.warning.endswith("1 page(s) from p. 2 not read: index.ocr_max_pages is 1")


class _FailsOnPage:
    """The real engine, raising as an engine does on the given pages (the order pages are read in)."""

    def __init__(self, engine, failing: set[int]) -> None:
        self.engine, self.failing, self.calls, self.name = engine, failing, 0, engine.name

    def read(self, page: np.ndarray) -> str:
        self.calls += 1
        if self.calls in self.failing:
            raise OcrError("RuntimeException: bad allocation")
        return self.engine.read(page)


@rapidocr_installed
def test_a_page_whose_ocr_fails_is_reported_and_the_other_pages_are_kept(scan):
    loaded = load_data(Path(SCANNED.name), scan, PageOcr(_FailsOnPage(find_engine("rapidocr"), {1}), max_pages=0))
    assert loaded.ocr_pages == 1 and SCANNED.sentence in " ".join(loaded.text.split())
    assert "OCR failed on p. 1 (RuntimeException: bad allocation)" in loaded.warning


def test_a_failing_engine_skips_the_scan_with_its_error_and_the_folder_goes_on(tmp_path, settings_for, embedder, scan,
                                                                              monkeypatch):
    _tesseract_on_path(monkeypatch, tmp_path, 'echo "Error opening data file eng.traineddata" >&2\nexit 1\n')
    idx = Index(settings_for(_folder(tmp_path, scan), **{"index.ocr": "tesseract"}), embedder)
    try:
        report = idx.sync()
        assert report.added == 1 and [(s.path, s.reason) for s in report.skipped] == [(SCANNED.name, "ocr-failed")]
        assert report.skipped[0].detail.startswith("no text layer (scanned?), and OCR (tesseract) failed: p. 1 (tesseract "
                                                   "exited with status 1: Error opening data file eng.traineddata)")
    finally:
        idx.close()


def test_tesseract_is_found_on_path_and_rapidocr_comes_first_for_auto(tmp_path, monkeypatch):
    exe = _tesseract_on_path(monkeypatch, tmp_path, "exit 0\n")
    found = find_engine("tesseract")
    assert isinstance(found, ocr.TesseractEngine) and found.path == str(exe)
    assert availability("tesseract", 0).summary == "tesseract: PDF pages without a text layer are read by OCR"
    if ocr._has_rapidocr():
        assert isinstance(find_engine("auto"), ocr.RapidOcrEngine)
    monkeypatch.setattr(ocr, "_has_rapidocr", lambda: False)
    assert isinstance(find_engine("auto"), ocr.TesseractEngine) and find_engine("rapidocr") is None
    monkeypatch.setenv("PATH", str(tmp_path / "empty-bin"))
    assert find_engine("auto") is None and find_engine("off") is None
    assert availability("tesseract", 50).summary.startswith("tesseract (index.ocr) is not installed: scanned PDFs are skipped")


@rapidocr_installed
def test_a_blank_scan_is_skipped_as_having_no_text_even_by_ocr():
    with pytest.raises(SkipFile) as err:
        load_data(Path("scan.pdf"), scanned_pdf_bytes(), PageOcr(find_engine("rapidocr"), 50))
    assert err.value.reason == "no-text-by-ocr"
    assert err.value.detail == "no text layer (scanned?), and OCR (%s) found no text on the 1 page it read of 1 page" % (
        find_engine("rapidocr").name)


def test_boxes_side_by_side_are_one_line_and_a_gap_starts_a_block():
    def box(left: int, top: int, right: int, bottom: int) -> list[list[int]]:
        return [[left, top], [right, top], [right, bottom], [left, bottom]]

    boxes = np.array([box(300, 12, 500, 30), box(10, 10, 200, 30), box(10, 40, 400, 60), box(10, 120, 300, 140)])
    assert text_of_boxes(boxes, ["right cell", "left cell", "second line", "new block"]) == (
        "left cell right cell\nsecond line\n\nnew block")


@pytest.mark.parametrize(("setting", "value", "says"), [
    ("index.ocr", "easyocr", "index.ocr must be one of auto, rapidocr, tesseract, off; got 'easyocr'"),
    ("index.ocr_max_pages", -1, "index.ocr_max_pages must be 0 (every page) or more, got -1"),
])
def test_an_ocr_setting_out_of_range_is_refused(tmp_path, setting, value, says):
    with pytest.raises(ConfigError, match=says.replace("(", r"\(").replace(")", r"\)")):
        load_settings(tmp_path, {setting: value}, env={})
