"""Documents: extraction speed per format with localrag's own loaders, and three PDF libraries
compared on the same files (text recall of a known sentence, a table's rows, speed).

    .venv/bin/python scripts/bench_documents.py [--pdf FILE::SENTENCE ...] [--out FILE]

The documents are made by tests/document_fixtures.py (long versions: 300 pages, 200 sections,
100 slides, ...); ``--pdf`` adds real PDFs, each with a sentence it holds (found in the file by
a person, so a library that loses words, order or hyphenation misses it). CPU seconds are given
beside wall seconds because the machine is shared.
"""

from __future__ import annotations

import argparse
import io
import json
import logging
import re
import sys
import time
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Callable

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tests"))  # the fixture documents' writers

from document_fixtures import (KNOWN, docx_bytes, epub_bytes, odp_bytes, odt_bytes, pdf_bytes,  # noqa: E402
                               pptx_bytes, rtf_bytes)

from localrag.ingest.loaders import load_data  # noqa: E402

LONG = {  # kind -> (file name, writer of a long document)
    "pdf": ("long.pdf", lambda: pdf_bytes(pages=300)),
    "docx": ("long.docx", lambda: docx_bytes(sections=200)),
    "pptx": ("long.pptx", lambda: pptx_bytes(slides=100)),
    "odt": ("long.odt", lambda: odt_bytes(sections=200)),
    "odp": ("long.odp", lambda: odp_bytes(slides=100)),
    "epub": ("long.epub", lambda: epub_bytes(chapters_more=100)),
    "rtf": ("long.rtf", lambda: rtf_bytes(paragraphs=400)),
}
REPEATS = 3  # the median of three runs


@dataclass
class FormatRow:
    kind: str
    bytes: int
    units: int  # pages, slides, chapters or paragraphs
    unit: str
    wall_s: float
    cpu_s: float

    @property
    def mb_per_s(self) -> float:
        return self.bytes / 1e6 / self.wall_s

    @property
    def units_per_s(self) -> float:
        return self.units / self.wall_s


@dataclass
class PdfRow:
    file: str
    library: str
    pages: int
    wall_s: float
    cpu_s: float
    sentence_found: bool
    table_rows_found: int | None  # of the generated PDF's 3 rows; None for a real PDF


def _timed(work: Callable[[], object]) -> tuple[object, float, float]:
    runs = []
    for _ in range(REPEATS):
        wall, cpu = time.perf_counter(), time.process_time()
        result = work()
        runs.append((time.perf_counter() - wall, time.process_time() - cpu, result))
    runs.sort(key=lambda r: r[0])
    wall_s, cpu_s, result = runs[len(runs) // 2]
    return result, wall_s, cpu_s


def format_rows() -> list[FormatRow]:
    rows = []
    for kind, (name, write) in LONG.items():
        data = write()
        loaded, wall_s, cpu_s = _timed(lambda: load_data(Path(name), data))
        rows.append(FormatRow(kind, len(data), max(loaded.layout.units), loaded.layout.unit, wall_s, cpu_s))
    return rows


def _pypdf(data: bytes) -> list[str]:
    from pypdf import PdfReader  # compared library, loaded for its run only

    logging.getLogger("pypdf").setLevel(logging.ERROR)
    return [page.extract_text() or "" for page in PdfReader(io.BytesIO(data)).pages]


def _pdfplumber(data: bytes) -> list[str]:
    import pdfplumber  # compared library, loaded for its run only

    with pdfplumber.open(io.BytesIO(data)) as pdf:
        return [page.extract_text() or "" for page in pdf.pages]


def _pypdfium2(data: bytes) -> list[str]:
    loaded = load_data(Path("x.pdf"), data)  # localrag's own loader (ingest/documents/pdf.py)
    return [loaded.text]


LIBRARIES: dict[str, Callable[[bytes], list[str]]] = {"pypdf": _pypdf, "pypdfium2 (localrag)": _pypdfium2,
                                                      "pdfplumber": _pdfplumber}


def _flat(text: str) -> str:
    return " ".join(text.replace("\\", "").split())


def pdf_rows(real: list[tuple[Path, str]]) -> list[PdfRow]:
    generated = pdf_bytes(pages=3)
    table = [("Year", "Storms", "Ships lost"), ("1883", "27", "1"), KNOWN["pdf"].table_row]
    cases = [("generated 3 pages (reportlab)", generated, KNOWN["pdf"].sentence, table)]
    cases += [(path.name, path.read_bytes(), sentence, None) for path, sentence in real]
    rows = []
    for name, data, sentence, rows_expected in cases:
        for library, read in LIBRARIES.items():
            pages, wall_s, cpu_s = _timed(lambda: read(data))
            text = "\n".join(pages)
            lines = {" ".join(line.split()) for line in text.replace("\\", "").split("\n")}
            found_rows = sum(" ".join(r) in lines for r in rows_expected) if rows_expected else None
            rows.append(PdfRow(name, library, _page_count(data), wall_s, cpu_s, _flat(sentence) in _flat(text),
                               found_rows))
    return rows


def _page_count(data: bytes) -> int:
    import pypdfium2 as pdfium  # the page count, the same for every library

    pdf = pdfium.PdfDocument(data)
    try:
        return len(pdf)
    finally:
        pdf.close()


def _real_pdf(spec: str) -> tuple[Path, str]:
    path, sep, sentence = spec.partition("::")
    if not sep or not sentence.strip():
        raise SystemExit(f"--pdf wants FILE::SENTENCE, got {spec!r}")
    return Path(path), sentence


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--pdf", action="append", default=[], help="FILE::SENTENCE: a real PDF and a sentence it holds")
    parser.add_argument("--out", type=Path, help="write the figures as JSON here too")
    args = parser.parse_args()
    formats = format_rows()
    print("| format | size | units | wall s | CPU s | MB/s | units/s |\n|---|---:|---:|---:|---:|---:|---:|")
    for r in formats:
        print(f"| {r.kind} | {r.bytes / 1e6:.2f} MB | {r.units} {r.unit}s | {r.wall_s:.2f} | {r.cpu_s:.2f} | "
              f"{r.mb_per_s:.2f} | {r.units_per_s:.0f} |")
    pdfs = pdf_rows([_real_pdf(s) for s in args.pdf])
    print("\n| PDF | library | pages | wall s | CPU s | pages/s | known sentence | table rows |\n"
          "|---|---|---:|---:|---:|---:|---|---|")
    for r in pdfs:
        rows = "" if r.table_rows_found is None else f"{r.table_rows_found}/3"
        print(f"| {r.file} | {r.library} | {r.pages} | {r.wall_s:.3f} | {r.cpu_s:.3f} | {r.pages / r.wall_s:.0f} | "
              f"{'found' if r.sentence_found else 'missed'} | {rows} |")
    if args.out:
        args.out.write_text(json.dumps({"formats": [asdict(r) for r in formats], "pdf": [asdict(r) for r in pdfs]},
                                       indent=2) + "\n", encoding="utf-8")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
