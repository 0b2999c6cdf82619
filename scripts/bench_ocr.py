"""Scanned PDFs: seconds per page of OCR (wall and CPU) with localrag's PDF reader, and whether the
known sentence comes out word for word.

    .venv/bin/python scripts/bench_ocr.py [--engine rapidocr|tesseract|rapidocr-onnxruntime] [--out FILE]

Two documents made by tests/document_fixtures.py, the sentence on page 2 of each: the test fixture
(2 image-only pages, a few lines of 12-point type, 150 dpi) and one like a photocopy (2 full pages
of 9-point type at 200 dpi, turned by a degree, specks, grey paper, JPEG). The engine's start-up (its models loaded, ONNX Runtime's first
run) is timed apart: it is paid once a process. ``rapidocr-onnxruntime`` is the older RapidOCR
package (1.4, PP-OCRv4), measured for the choice; it runs in a venv of its own (docs/benchmarks.md).
"""

from __future__ import annotations

import argparse
import json
import resource
import sys
import time
from dataclasses import asdict, dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tests"))  # the fixture documents' writers

from document_fixtures import SCANNED, scanned_text_pdf_bytes  # noqa: E402

from localrag.ingest.documents.ocr import PageOcr, find_engine, text_of_boxes  # noqa: E402
from localrag.ingest.documents.pdf import extract_pdf  # noqa: E402

DOCUMENTS = {  # name -> writer
    "fixture (2 pages, 12 pt, 150 dpi)": lambda: scanned_text_pdf_bytes(),
    "photocopy-like (2 full pages, 9 pt, 200 dpi)": lambda: scanned_text_pdf_bytes(pages=2, dpi=200, rough=True),
}


@dataclass
class OcrRow:
    document: str
    engine: str
    pages: int
    wall_s_per_page: float
    cpu_s_per_page: float
    sentence_found: bool


class OnnxRuntimeRapidOcr:
    """rapidocr-onnxruntime 1.4 (its own API: a list of [box, text, score]), for the comparison only."""

    def __init__(self) -> None:
        from importlib.metadata import version

        from rapidocr_onnxruntime import RapidOCR

        self.name = f"rapidocr-onnxruntime {version('rapidocr-onnxruntime')}"
        self._ocr = RapidOCR()

    def read(self, page) -> str:
        import numpy as np

        found, _ = self._ocr(page)
        if not found:
            return ""
        return text_of_boxes(np.array([f[0] for f in found], dtype=float), [f[1] for f in found])


def _engine(name: str):
    if name == "rapidocr-onnxruntime":
        return OnnxRuntimeRapidOcr()
    engine = find_engine(name)
    if engine is None:
        sys.exit(f"{name} is not installed")
    return engine


def _cpu_seconds() -> float:
    """This process's CPU and its finished children's: tesseract runs as a child process a page."""
    own, children = resource.getrusage(resource.RUSAGE_SELF), resource.getrusage(resource.RUSAGE_CHILDREN)
    return own.ru_utime + own.ru_stime + children.ru_utime + children.ru_stime


def _timed(work):
    wall, cpu = time.perf_counter(), _cpu_seconds()
    result = work()
    return result, time.perf_counter() - wall, _cpu_seconds() - cpu


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--engine", default="rapidocr", choices=["rapidocr", "tesseract", "rapidocr-onnxruntime"])
    ap.add_argument("--out", type=Path, help="write the rows as JSON here")
    args = ap.parse_args()
    engine = _engine(args.engine)
    files = {name: write() for name, write in DOCUMENTS.items()}
    _, start_wall, start_cpu = _timed(lambda: extract_pdf(next(iter(files.values())), PageOcr(engine, 1)))
    print(f"{engine.name}: start-up and first page {start_wall:.1f} s wall, {start_cpu:.1f} s CPU")
    rows = []
    for name, data in files.items():
        extracted, wall, cpu = _timed(lambda: extract_pdf(data, PageOcr(engine, 0)))
        read = max(extracted.ocr_pages, 1)
        found = SCANNED.sentence in " ".join(extracted.text.split())
        rows.append(OcrRow(name, engine.name, read, round(wall / read, 2), round(cpu / read, 2), found))
        print(f"  {name}: {wall / read:.2f} s wall, {cpu / read:.2f} s CPU a page ({read} pages); "
              f"sentence {'found' if found else 'missed'}")
    if args.out:
        args.out.parent.mkdir(parents=True, exist_ok=True)
        args.out.write_text(json.dumps({"start_wall_s": round(start_wall, 2), "start_cpu_s": round(start_cpu, 2),
                                        "rows": [asdict(r) for r in rows]}, indent=2) + "\n")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
