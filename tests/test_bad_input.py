"""Every kind of bad file is skipped with a specific reason; the rest of the folder still indexes."""

from __future__ import annotations

import os
import subprocess
import sys

import pytest

from localrag.api import Assistant, EmptyIndexError, Index
from localrag.ingest.loaders import SkipFile, load_file


@pytest.fixture
def messy(tmp_path):
    d = tmp_path / "messy"
    d.mkdir()
    (d / "good.md").write_text("# Good\n\nThe lighthouse keeper of Arnholm is called Petra Vance.\n")
    (d / "binary.md").write_bytes(b"\x89PNG\r\n\x1a\n\x00\x00\x00\rIHDR" + bytes(range(256)))
    (d / "latin1.txt").write_bytes("caf\xe9 cr\xe8me br\xfbl\xe9e".encode("latin-1"))  # indexed, with U+FFFD
    (d / "mostly-bytes.md").write_bytes(b"# N\n" + bytes(range(0x80, 0x100)) * 4)  # no NUL, hardly any text
    (d / "empty.md").write_text("")
    (d / "blank.txt").write_text("   \n\n  \n")
    (d / "broken.pdf").write_bytes(b"%PDF-1.4\n1 0 obj << /Type /Catalog >>\nthis is not a real pdf\n%%EOF")
    (d / "huge.txt").write_text("big line of text\n" * 4000)
    locked = d / "locked.md"
    locked.write_text("# Secret\n\nno access")
    locked.chmod(0)
    (d / "page.html").write_text("<html><head><title>Tide table</title><script>var x=1;</script></head>"
                                 "<body><h1>Tides</h1><p>High tide at Arnholm is at 06:12.</p></body></html>")
    (d / ".hidden.md").write_text("# hidden\n\nshould never be indexed")
    (d / "notes.tmp").write_text("ignored by glob")
    return d


EXPECTED = {
    "binary.md": "binary",
    "mostly-bytes.md": "binary",
    "empty.md": "empty",
    "blank.txt": "empty",
    "broken.pdf": "pdf-error",
    "huge.txt": "too-large",
}


def test_each_bad_file_has_its_reason_and_the_rest_indexes(messy, settings_for, embedder):
    settings = settings_for(messy, **{"index.max_file_bytes": 50_000})
    idx = Index(settings, embedder)
    report = idx.sync()
    reasons = {s.path: s.reason for s in idx.store.docs.skipped()}
    for path, reason in EXPECTED.items():
        assert reasons.get(path) == reason, (path, reasons.get(path))
    if os.geteuid() != 0:  # root can read a mode-000 file
        assert reasons.get("locked.md") == "unreadable"
    docs = set(idx.store.docs.all())
    assert {"good.md", "page.html"} <= docs
    assert ".hidden.md" not in docs and "notes.tmp" not in docs
    assert len(report.skipped) >= len(EXPECTED)
    # the HTML's visible text is indexed, its script is not, and line numbers point into the source
    html = idx.store.docs.passages_of("page.html")
    assert any("High tide at Arnholm" in p.text for p in html)
    assert all("var x" not in p.text for p in html)
    assert idx.store.docs.get("page.html").title == "Tide table"
    # bytes that are not UTF-8 are shown as U+FFFD, as an editor shows them, and the note is indexed with a warning
    assert [p.text for p in idx.store.docs.passages_of("latin1.txt")] == ["caf\ufffd cr\ufffdme br\ufffdl\ufffde"]
    warnings = dict(idx.status().warnings)
    assert warnings["latin1.txt"] == ("not valid UTF-8: 4 undecodable byte sequences shown as U+FFFD "
                                      "(the first: byte 0xe9 at offset 3)")
    # an unchanged bad file is not retried; a fixed one is indexed
    again = idx.sync()
    assert again.added == 0 and again.still_skipped >= len(EXPECTED) and again.accounted == again.files_seen
    (messy / "mostly-bytes.md").write_text("# Now text\n\nThe tide mill of Arnholm grinds rye.\n")
    (messy / "latin1.txt").write_text("now valid utf-8: café crème brûlée")
    fixed = idx.sync()
    assert fixed.added == 1 and fixed.updated == 1 and "mostly-bytes.md" not in {s.path for s in idx.store.docs.skipped()}
    assert "latin1.txt" not in dict(idx.status().warnings), "the warning goes with the bad bytes"
    idx.close()


def test_a_note_with_one_bad_byte_is_found_by_search(tmp_path, settings_for, embedder):
    d = tmp_path / "notes"
    d.mkdir()
    (d / "mill.md").write_bytes(b"# Tide mill\n\nThe tide mill of Arnholm grinds rye \xff every spring tide.\n")
    (d / "other.md").write_text("# Harbour\n\nThe harbour master keeps the gate keys.\n")
    idx = Index(settings_for(d), embedder)
    report = idx.sync()
    assert report.skipped == [] and set(idx.store.docs.all()) == {"mill.md", "other.md"}
    found = Assistant(idx, llm=object()).retrieve("Which mill grinds rye in Arnholm?", "hybrid", 2)
    assert found.passages[0].passage.path == "mill.md" and "rye \ufffd every" in found.passages[0].passage.text
    assert "byte 0xff at offset 49" in dict(idx.status().warnings)["mill.md"]
    idx.close()


def test_status_command_shows_reasons(messy, tmp_path):
    env = dict(os.environ, LOCALRAG_INDEX_MAX_FILE_BYTES="50000")
    run = lambda *a: subprocess.run([sys.executable, "-m", "localrag", *a], capture_output=True, text=True, env=env, timeout=300)
    r = run("index", str(messy), "--no-graph", "--quiet")
    assert r.returncode == 0, r.stderr
    r = run("status", str(messy), "--json")
    assert r.returncode == 0, r.stderr
    import json

    data = json.loads(r.stdout)
    got = {s["path"]: s["reason"] for s in data["skipped"]}
    for path, reason in EXPECTED.items():
        assert got[path] == reason
    assert data["documents"] >= 3 and "latin1.txt" not in got
    assert "not valid UTF-8" in dict((w["path"], w["warning"]) for w in data["warnings"])["latin1.txt"]
    r = run("status", str(messy))  # the table names the note and its warning too
    assert r.returncode == 0 and "latin1.txt" in r.stdout and "not valid UTF-8" in r.stdout, r.stdout


def test_pdf_loads_text(tmp_path):
    pypdf = pytest.importorskip("pypdf")
    from pypdf import PdfWriter
    from pypdf.generic import NameObject

    w = PdfWriter()
    w.add_blank_page(width=200, height=200)
    path = tmp_path / "blank.pdf"
    with path.open("wb") as fh:
        w.write(fh)
    with pytest.raises(SkipFile) as err:
        load_file(path, 10**6)
    assert err.value.reason == "no-text-layer"  # a PDF with no text layer says so
    assert err.value.detail.startswith("no text layer (scanned?)")


def test_question_on_empty_index_says_so(tmp_path, settings_for, embedder):
    d = tmp_path / "nothing"
    d.mkdir()
    idx = Index(settings_for(d), embedder)
    idx.sync()
    with pytest.raises(EmptyIndexError, match="no passages"):
        Assistant(idx, llm=object()).retrieve("anything?")
    idx.close()


def test_missing_and_corrupt_model_files_give_one_clear_error(tmp_path):
    from localrag.llm.base import LLMError
    from localrag.llm.discovery import discover

    with pytest.raises(LLMError, match="not found: .*nope.gguf"):
        discover(str(tmp_path / "nope.gguf"))
    bad = tmp_path / "bad.gguf"
    bad.write_bytes(b"<html>404 not found</html>")
    with pytest.raises(LLMError, match="not a GGUF"):
        discover(str(bad))
    truncated = tmp_path / "trunc.gguf"
    truncated.write_bytes(b"GGUF" + b"\x03\x00\x00\x00" + b"\x00" * 64)
    from localrag.config import LLMSettings
    from localrag.llm.llamacpp import LlamaCppLLM

    with pytest.raises(LLMError, match="could not load .*trunc.gguf"):
        LlamaCppLLM(truncated, LLMSettings())


def test_cli_reports_missing_model_without_traceback(notes_dir):
    r = subprocess.run([sys.executable, "-m", "localrag", "ask", "who?", "-f", str(notes_dir), "--model", "/no/such.gguf"],
                       capture_output=True, text=True, timeout=300)
    assert r.returncode == 1
    assert "model file not found: /no/such.gguf" in r.stderr
    assert "Traceback" not in r.stderr
