"""The text of a scanned page by OCR, with an engine this machine has: RapidOCR (the ``ocr`` extra:
PP-OCRv6 models bundled in its wheel, run by ONNX Runtime; nothing is downloaded) or the
``tesseract`` command. ``index.ocr`` chooses: "auto" (RapidOCR, else tesseract), one of them, or "off".
docs/benchmarks.md "Documents" (scanned PDFs) measures them.
"""

from __future__ import annotations

import functools
import importlib.metadata
import importlib.util
import logging
import shutil
import subprocess
import threading
from dataclasses import dataclass
from typing import Callable, Protocol

import numpy as np

from localrag.errors import LocalragError

INSTALL_HINT = "pip install 'localrag[ocr]'"
TESSERACT_TIMEOUT_S = 120.0  # one page; a hung engine fails that page, not the folder


class OcrError(LocalragError):
    """A page the engine could not read (the document's other pages go on)."""

    internal = True


class OcrEngine(Protocol):
    name: str  # "rapidocr 3.10.0", "tesseract"

    def read(self, page: np.ndarray) -> str:
        """The text of a grayscale page image (height x width, uint8): a line a line, a blank line between blocks."""
        ...


@dataclass(frozen=True)
class PageOcr:
    """How a PDF's pages without a text layer are read."""

    engine: OcrEngine
    max_pages: int  # pages of one document read by OCR; the rest are left out and said so (0: every page)
    on_page: Callable[[int, int], None] | None = None  # (page, pages), before a page is read: seconds each


@dataclass(frozen=True)
class OcrAvailability:
    """The `status` line: which engine reads scanned pages, or why none does."""

    setting: str  # index.ocr
    engine: str  # the engine's name, "" when none
    summary: str


class RapidOcrEngine:
    """RapidOCR, loaded on the first page (about a second) and kept for the process; one page at a time."""

    def __init__(self) -> None:
        try:
            version = importlib.metadata.version("rapidocr")
        except importlib.metadata.PackageNotFoundError:  # another distribution of the `rapidocr` module
            version = ""
        self.name = f"rapidocr {version}".strip()
        self._lock = threading.Lock()
        self._ocr = None

    def read(self, page: np.ndarray) -> str:
        with self._lock:
            try:
                if self._ocr is None:
                    self._ocr = _load_rapidocr()
                found = self._ocr(page)
            except Exception as exc:  # ONNX Runtime and OpenCV raise their own types
                raise OcrError(f"{type(exc).__name__}: {exc}") from exc
        if found.txts is None or found.boxes is None:
            return ""
        return text_of_boxes(np.asarray(found.boxes), list(found.txts))


def _load_rapidocr():
    from rapidocr import RapidOCR  # the `ocr` extra, loaded for the first scanned page only

    # its own handler writes to stderr, over the TUI; its errors reach the person as the page's failure
    rapid_log = logging.getLogger("RapidOCR")
    rapid_log.handlers[:] = [logging.NullHandler()]
    rapid_log.propagate = False
    return RapidOCR(params={"Global.log_level": "error"})  # "the text detection result is empty" is a warning


class TesseractEngine:
    """The tesseract command: the page goes in as a PGM image on stdin, its text comes out on stdout."""

    def __init__(self, path: str) -> None:
        self.path = path
        self.name = "tesseract"

    def read(self, page: np.ndarray) -> str:
        height, width = page.shape
        image = b"P5 %d %d 255\n" % (width, height) + np.ascontiguousarray(page, dtype=np.uint8).tobytes()
        try:
            done = subprocess.run([self.path, "stdin", "stdout"], input=image, capture_output=True,
                                  timeout=TESSERACT_TIMEOUT_S, check=False)
        except subprocess.TimeoutExpired as exc:
            raise OcrError(f"tesseract took over {TESSERACT_TIMEOUT_S:.0f} s") from exc
        except OSError as exc:
            raise OcrError(f"tesseract could not be run: {exc.strerror or exc}") from exc
        if done.returncode != 0:
            said = done.stderr.decode("utf-8", errors="replace").strip().splitlines()
            raise OcrError(f"tesseract exited with status {done.returncode}" + (f": {said[-1][:200]}" if said else ""))
        return done.stdout.decode("utf-8", errors="replace")


@functools.cache
def _rapidocr() -> RapidOcrEngine:
    return RapidOcrEngine()  # one per process: its models are loaded once


def _has_rapidocr() -> bool:
    # the onnxruntime check: rapidocr installed without its inference engine cannot run
    return importlib.util.find_spec("rapidocr") is not None and importlib.util.find_spec("onnxruntime") is not None


def find_engine(setting: str) -> OcrEngine | None:
    """The engine ``index.ocr`` asks for, when this machine has it."""
    if setting in ("auto", "rapidocr") and _has_rapidocr():
        return _rapidocr()
    if setting in ("auto", "tesseract") and (path := shutil.which("tesseract")):
        return TesseractEngine(path)
    return None


def page_ocr(setting: str, max_pages: int) -> PageOcr | None:
    engine = find_engine(setting)
    return PageOcr(engine, max_pages) if engine is not None else None


def availability(setting: str, max_pages: int) -> OcrAvailability:
    if setting == "off":
        return OcrAvailability(setting, "", 'off (index.ocr = "off"): PDF pages without a text layer are skipped')
    engine = find_engine(setting)
    if engine is None:
        wanted = "no OCR engine installed" if setting == "auto" else f"{setting} (index.ocr) is not installed"
        return OcrAvailability(setting, "", f"{wanted}: scanned PDFs are skipped; {INSTALL_HINT} reads them")
    cap = f", at most {max_pages} a document" if max_pages else ""
    return OcrAvailability(setting, engine.name, f"{engine.name}: PDF pages without a text layer are read by OCR{cap}")


def text_of_boxes(boxes: np.ndarray, texts: list[str]) -> str:
    """Boxes of text (n x 4 corner points) as lines: boxes side by side are one line, left to right;
    a gap taller than a line between two lines starts a new block."""
    tops, bottoms, lefts = boxes[:, :, 1].min(axis=1), boxes[:, :, 1].max(axis=1), boxes[:, :, 0].min(axis=1)
    rows: list[list[int]] = []
    for i in sorted(range(len(texts)), key=lambda i: (tops[i] + bottoms[i]) / 2):
        middle = (tops[i] + bottoms[i]) / 2
        if rows and tops[rows[-1][0]] <= middle <= bottoms[rows[-1][0]]:
            rows[-1].append(i)
        else:
            rows.append([i])
    heights = [float(bottoms[row[0]] - tops[row[0]]) for row in rows]
    line_height = float(np.median(heights)) if heights else 0.0
    lines: list[str] = []
    for n, row in enumerate(rows):
        if n and tops[row[0]] - bottoms[rows[n - 1][0]] > line_height:
            lines.append("")
        lines.append(" ".join(texts[i].strip() for i in sorted(row, key=lambda i: lefts[i]) if texts[i].strip()))
    return "\n".join(lines)
