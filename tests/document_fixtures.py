"""Small real documents, one per format, each with a known sentence at a known place and a table.

Made with the libraries that write each format (python-docx, python-pptx, odfdo, reportlab; the
EPUB and RTF files are written as those formats are specified: a zip of XHTML with its OPF, and
RTF control words). The files in tests/fixtures/documents/ were written by
``python tests/document_fixtures.py tests/fixtures/documents``; tests index those, and make the
variants (encrypted, damaged, 300 pages, scanned) with these functions.
"""

from __future__ import annotations

import io
import sys
import zipfile
from dataclasses import dataclass
from pathlib import Path


@dataclass(frozen=True)
class Known:
    """The sentence a document holds, where a person finds it, and a question it answers."""

    name: str  # file name
    sentence: str
    locator: str  # as a citation shows it after the file name
    question: str
    table_row: tuple[str, ...]  # one row of its table, cells in order


KNOWN = {
    "pdf": Known("lighthouse.pdf", "The Orwell lighthouse keeper logged 412 storms between 1880 and 1895.", "p. 2",
                 "How many storms did the Orwell lighthouse keeper log?", ("1884", "31", "2")),
    "docx": Known("bridge.docx", "The Harrowgate bridge was repainted in ochre in the spring of 1911.", "§ Restoration",
                  "What colour was the Harrowgate bridge repainted?", ("North span", "42", "Iron")),
    "pptx": Known("orchard.pptx", "Quince orchards in the Vale of Tamar ripen two weeks after the pears.", "slide 2",
                  "When do the quince orchards in the Vale of Tamar ripen?", ("Quince", "October")),
    "odt": Known("bakery.odt", "The Kestrel Street bakery sold its first rye loaf on a Tuesday in 1952.", "§ History",
                 "When did the Kestrel Street bakery sell its first rye loaf?", ("Rye", "1952")),
    "odp": Known("glass.odp", "Glassblowers in Murrowby heat their furnaces with beech charcoal.", "slide 2",
                 "What do the glassblowers in Murrowby heat their furnaces with?", ("Beech", "Charcoal")),
    "epub": Known("voyage.epub", "Captain Ilsa Varga mapped the coral shoals of the Pellucid Sea by lantern light.",
                  "§ The Shoals", "Who mapped the coral shoals of the Pellucid Sea?", ("Outer shoal", "3")),
    "rtf": Known("choir.rtf", "The Dunmere choir rehearses the winter cantata every Thursday evening.", "¶ 1–4",
                 "When does the Dunmere choir rehearse the winter cantata?", ("Soprano", "12")),
}

FILLER = ("Each section of this document says something ordinary about its subject so that the passage has "
          "enough words to stand alone. ")


def write_documents(folder: Path) -> dict[str, Path]:
    """Every fixture document written into ``folder``; kind -> path."""
    folder.mkdir(parents=True, exist_ok=True)
    writers = {"pdf": pdf_bytes, "docx": docx_bytes, "pptx": pptx_bytes, "odt": odt_bytes, "odp": odp_bytes,
               "epub": epub_bytes, "rtf": rtf_bytes}
    out = {}
    for kind, write in writers.items():
        path = folder / KNOWN[kind].name
        path.write_bytes(write())
        out[kind] = path
    return out


# -- PDF ---------------------------------------------------------------------------------------


def pdf_bytes(pages: int = 3, encrypt_with: str = "") -> bytes:
    """A PDF whose page 2 holds the known sentence and page 3 a ruled table; more pages of filler."""
    from reportlab.lib.pagesizes import A4  # the test-only PDF writer, loaded for PDFs only
    from reportlab.pdfgen import canvas

    k = KNOWN["pdf"]
    buf = io.BytesIO()
    pdf = canvas.Canvas(buf, pagesize=A4, encrypt=encrypt_with or None)
    pdf.setTitle("The Orwell Lighthouse")
    for number in range(1, pages + 1):
        pdf.setFont("Helvetica", 11)
        y = 780
        if number == 1:
            pdf.setFont("Helvetica-Bold", 16)
            pdf.drawString(72, y, "The Orwell Lighthouse")
            pdf.setFont("Helvetica", 11)
            y -= 30
        for line in _wrapped(f"Page {number} of the keeper's record. " + FILLER * 2):
            pdf.drawString(72, y, line)
            y -= 15
        if number == 2:
            pdf.drawString(72, y - 10, k.sentence)
        if number == 3:
            _pdf_table(pdf, 72, y - 20, [("Year", "Storms", "Ships lost"), ("1883", "27", "1"), k.table_row])
        pdf.showPage()
    pdf.save()
    return buf.getvalue()


def _pdf_table(pdf, x: float, y: float, rows: list[tuple[str, ...]]) -> None:
    width, height = 110, 20
    for r, row in enumerate(rows):
        for c, cell in enumerate(row):
            pdf.rect(x + c * width, y - (r + 1) * height, width, height)
            pdf.drawString(x + c * width + 5, y - (r + 1) * height + 6, cell)


def _wrapped(text: str, width: int = 85) -> list[str]:
    lines, cur = [], ""
    for word in text.split():
        if cur and len(cur) + 1 + len(word) > width:
            lines.append(cur)
            cur = word
        else:
            cur = f"{cur} {word}".strip()
    return lines + [cur] if cur else lines


def scanned_pdf_bytes() -> bytes:
    """A PDF of one page that holds only a picture (no text layer), as a scanner writes it."""
    from reportlab.lib.pagesizes import A4  # the test-only PDF writer, loaded for PDFs only
    from reportlab.lib.utils import ImageReader
    from reportlab.pdfgen import canvas
    from PIL import Image  # reportlab's own dependency: the "scan"

    image = Image.new("L", (200, 100), color=200)
    buf = io.BytesIO()
    pdf = canvas.Canvas(buf, pagesize=A4)
    pdf.drawImage(ImageReader(image), 72, 500, width=400, height=200)
    pdf.showPage()
    pdf.save()
    return buf.getvalue()


# A scanned document: pages of text kept only as pictures, as a scanner or "print to image" writes them
SCANNED = Known("ferry-scan.pdf", "The Saltmarsh ferry carried 96 passengers across the estuary each morning.",
                "p. 2", "How many passengers did the Saltmarsh ferry carry each morning?", ())


def scanned_text_pdf_bytes(pages: int = 2, dpi: int = 150, rough: bool = False) -> bytes:
    """A PDF of ``pages`` image-only pages (no text layer) whose page 2 shows ``SCANNED.sentence``.

    The text is typeset by reportlab and drawn to pixels by PDFium, so the pictures hold real glyphs;
    ``rough`` makes them look like a photocopy: a full page of small type, turned by a degree, specks
    of noise, a grey paper tone and JPEG compression."""
    import pypdfium2 as pdfium  # the project's PDF reader: draws the typeset pages
    from PIL import Image, ImageFilter  # reportlab's own dependency: the "scan"
    from reportlab.lib.pagesizes import A4
    from reportlab.pdfgen import canvas

    typeset = io.BytesIO()
    pdf = canvas.Canvas(typeset, pagesize=A4)
    for number in range(1, pages + 1):
        size = 9 if rough else 12
        pdf.setFont("Times-Roman", size)
        y = 780
        for line in _wrapped(f"Page {number} of the harbour log. " + FILLER * (40 if rough else 2), 110 if rough else 80):
            pdf.drawString(60, y, line)
            y -= size + 3
        if number == 2:
            pdf.drawString(60, y - 10, SCANNED.sentence)
        pdf.showPage()
    pdf.save()
    document = pdfium.PdfDocument(typeset.getvalue())
    images = []
    for index in range(len(document)):
        image = document[index].render(scale=dpi / 72, grayscale=True).to_pil().convert("L")
        if rough:
            image = image.rotate(0.8, resample=Image.Resampling.BICUBIC, expand=False, fillcolor=255)
            specks = Image.effect_noise(image.size, 40).point(lambda v: 0 if v < 20 else 255)
            image = Image.composite(image, specks, specks).filter(ImageFilter.GaussianBlur(0.6))
            image = image.point(lambda v: 40 + v * 190 // 255)  # grey paper, grey ink
            buf = io.BytesIO()
            image.save(buf, "JPEG", quality=55)
            image = Image.open(io.BytesIO(buf.getvalue()))
        images.append(image)
    document.close()
    out = io.BytesIO()
    images[0].save(out, "PDF", resolution=dpi, save_all=True, append_images=images[1:])
    return out.getvalue()


# -- Word, PowerPoint --------------------------------------------------------------------------


def docx_bytes(extra_paragraph: str = "", sections: int = 0) -> bytes:
    """The Word fixture; ``sections`` more headed sections of filler make a long one (benchmarks)."""
    import docx  # python-docx, loaded for this fixture only

    k = KNOWN["docx"]
    doc = docx.Document()
    doc.core_properties.title = "The Harrowgate Bridge"
    doc.add_heading("The Harrowgate Bridge", level=0)
    doc.add_heading("Background", level=1)
    doc.add_paragraph("The bridge crosses the river Nidd in three spans. " + FILLER)
    doc.add_paragraph("Stone piers from an older crossing", style="List Bullet")
    doc.add_paragraph("Iron girders cast in Leeds", style="List Bullet")
    doc.add_heading("Restoration", level=1)
    doc.add_paragraph(k.sentence + " " + FILLER)
    if extra_paragraph:
        doc.add_paragraph(extra_paragraph)
    for number in range(sections):
        doc.add_heading(f"Inspection {number + 1}", level=1)
        doc.add_paragraph(FILLER * 3)
    doc.add_heading("Spans", level=1)
    table = doc.add_table(rows=0, cols=3)
    for row in [("Span", "Length (m)", "Material"), ("South span", "38", "Stone"), k.table_row]:
        cells = table.add_row().cells
        for cell, value in zip(cells, row):
            cell.text = value
    buf = io.BytesIO()
    doc.save(buf)
    return buf.getvalue()


def pptx_bytes(slides: int = 0) -> bytes:
    """The deck fixture; ``slides`` more slides of filler make a long one (benchmarks)."""
    from pptx import Presentation  # python-pptx, loaded for this fixture only
    from pptx.util import Inches

    k = KNOWN["pptx"]
    deck = Presentation()
    deck.core_properties.title = "Orchards of the Tamar"
    first = deck.slides.add_slide(deck.slide_layouts[0])
    first.shapes.title.text = "Orchards of the Tamar"
    first.placeholders[1].text = "A season in the valley"
    second = deck.slides.add_slide(deck.slide_layouts[1])
    second.shapes.title.text = "Harvest calendar"
    body = second.placeholders[1].text_frame
    body.text = k.sentence
    body.add_paragraph().text = "Apples are picked from late August."
    second.notes_slide.notes_text_frame.text = "Mention the cider presses."
    third = deck.slides.add_slide(deck.slide_layouts[5])
    third.shapes.title.text = "Months"
    rows = [("Fruit", "Month"), ("Pear", "September"), k.table_row]
    shape = third.shapes.add_table(len(rows), 2, Inches(1), Inches(2), Inches(6), Inches(2))
    for r, row in enumerate(rows):
        for c, value in enumerate(row):
            shape.table.cell(r, c).text = value
    for number in range(slides):
        slide = deck.slides.add_slide(deck.slide_layouts[1])
        slide.shapes.title.text = f"Orchard {number + 1}"
        slide.placeholders[1].text_frame.text = FILLER
    buf = io.BytesIO()
    deck.save(buf)
    return buf.getvalue()


# -- OpenDocument ------------------------------------------------------------------------------


def odt_bytes(sections: int = 0) -> bytes:
    """The OpenDocument text fixture; ``sections`` more headed sections make a long one (benchmarks)."""
    from odfdo import Header, List, ListItem, Paragraph, Table  # odfdo, loaded for this fixture only

    k = KNOWN["odt"]
    doc, body = _odf_document("text", "The Kestrel Street Bakery")
    body.append(Header(1, "The Kestrel Street Bakery"))
    body.append(Header(2, "History"))
    body.append(Paragraph(k.sentence + " " + FILLER))
    items = List()
    for text in ("Ovens fired with ash wood", "Flour from the Wensum mill"):
        items.append(ListItem(text))
    body.append(items)
    body.append(Header(2, "Loaves"))
    table = Table("Loaves", width=2, height=3)
    table.set_values([("Loaf", "First sold"), ("Wheat", "1949"), k.table_row])
    body.append(table)
    for number in range(sections):
        body.append(Header(2, f"Oven {number + 1}"))
        body.append(Paragraph(FILLER * 3))
    return _odf_bytes(doc)


def odp_bytes(slides: int = 0) -> bytes:
    """The OpenDocument presentation fixture; ``slides`` more slides make a long one (benchmarks)."""
    from odfdo import DrawPage, Frame, Paragraph, Table  # odfdo, loaded for this fixture only

    k = KNOWN["odp"]
    doc, body = _odf_document("presentation", "Murrowby Glass")
    pages = [("Murrowby Glass", ["A craft of the northern coast"]), ("Furnaces", [k.sentence, "The glory hole burns hottest."])]
    for number, (title, lines) in enumerate(pages, start=1):
        page = DrawPage(f"page{number}", name=title)
        page.append(Frame.text_frame(title, size=("20cm", "2cm"), position=("1cm", "1cm"), presentation_class="title"))
        page.append(Frame.text_frame([Paragraph(line) for line in lines], size=("20cm", "8cm"), position=("1cm", "4cm"),
                                     presentation_class="outline"))
        body.append(page)
    page = DrawPage("page3", name="Fuels")
    page.append(Frame.text_frame("Fuels", size=("20cm", "2cm"), position=("1cm", "1cm"), presentation_class="title"))
    table = Table("Fuels", width=2, height=3)
    table.set_values([("Wood", "Form"), ("Oak", "Logs"), k.table_row])
    frame = Frame(size=("20cm", "6cm"), position=("1cm", "4cm"))
    frame.append(table)
    page.append(frame)
    body.append(page)
    for number in range(4, slides + 4):
        page = DrawPage(f"page{number}", name=f"Kiln {number}")
        page.append(Frame.text_frame(f"Kiln {number}", size=("20cm", "2cm"), position=("1cm", "1cm"),
                                     presentation_class="title"))
        page.append(Frame.text_frame([Paragraph(FILLER)], size=("20cm", "8cm"), position=("1cm", "4cm"),
                                     presentation_class="outline"))
        body.append(page)
    return _odf_bytes(doc)


def _odf_document(kind: str, title: str):
    """An empty OpenDocument of ``kind`` ("text", "presentation") titled ``title``, and its body."""
    from odfdo import Document  # odfdo, loaded for this fixture only

    doc = Document(kind)
    doc.meta.title = title
    doc.body.clear()
    return doc, doc.body


def _odf_bytes(doc) -> bytes:
    buf = io.BytesIO()
    doc.save(buf)
    return buf.getvalue()


# -- EPUB, RTF ---------------------------------------------------------------------------------


def epub_bytes(chapters_more: int = 0) -> bytes:
    """The EPUB fixture; ``chapters_more`` more chapters of filler make a long one (benchmarks)."""
    k = KNOWN["epub"]
    chapters = [
        ("The Harbour", f"<h1>The Harbour</h1><p>The ship left the harbour at dawn. {FILLER}</p>"),
        ("The Shoals", f"<h1>The Shoals</h1><p>{k.sentence} {FILLER}</p>"
                       "<ul><li>Brass lantern</li><li>Lead line</li></ul>"
                       "<table><tr><th>Shoal</th><th>Depth (fathoms)</th></tr><tr><td>Inner shoal</td><td>1</td></tr>"
                       f"<tr><td>{k.table_row[0]}</td><td>{k.table_row[1]}</td></tr></table>"),
    ] + [(f"Log {n}", f"<h1>Log {n}</h1>" + f"<p>{FILLER * 3}</p>" * 3) for n in range(1, chapters_more + 1)]
    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w") as z:
        z.writestr(zipfile.ZipInfo("mimetype"), "application/epub+zip")  # first and stored, as the format asks
        z.writestr("META-INF/container.xml",
                   '<?xml version="1.0"?><container version="1.0" xmlns="urn:oasis:names:tc:opendocument:xmlns:container">'
                   '<rootfiles><rootfile full-path="OEBPS/content.opf" media-type="application/oebps-package+xml"/>'
                   "</rootfiles></container>")
        manifest = "".join(f'<item id="c{i}" href="text/c{i}.xhtml" media-type="application/xhtml+xml"/>'
                           for i in range(1, len(chapters) + 1))
        spine = "".join(f'<itemref idref="c{i}"/>' for i in range(1, len(chapters) + 1))
        z.writestr("OEBPS/content.opf",
                   '<?xml version="1.0"?><package xmlns="http://www.idpf.org/2007/opf" version="3.0" unique-identifier="id">'
                   '<metadata xmlns:dc="http://purl.org/dc/elements/1.1/"><dc:identifier id="id">voyage</dc:identifier>'
                   "<dc:title>The Voyage of the Pellucid</dc:title><dc:language>en</dc:language></metadata>"
                   f"<manifest>{manifest}</manifest><spine>{spine}</spine></package>")
        for i, (title, body) in enumerate(chapters, start=1):
            z.writestr(f"OEBPS/text/c{i}.xhtml",
                       '<?xml version="1.0" encoding="utf-8"?><html xmlns="http://www.w3.org/1999/xhtml">'
                       f"<head><title>{title}</title></head><body>{body}</body></html>")
    return buf.getvalue()


def rtf_bytes(paragraphs: int = 0) -> bytes:
    """The RTF fixture; ``paragraphs`` more paragraphs of filler make a long one (benchmarks)."""
    k = KNOWN["rtf"]
    rows = [("Voice", "Singers"), ("Alto", "9"), k.table_row]
    table = "".join("\\trowd\\cellx2000\\cellx4000 " + "".join(f"\\intbl {cell}\\cell " for cell in row) + "\\row\n"
                    for row in rows)
    return ("{\\rtf1\\ansi\\deff0{\\fonttbl{\\f0 Times New Roman;}}{\\info{\\title The Dunmere Choir}}\n"
            f"\\pard The Dunmere choir was founded by the parish in 1888. {FILLER}\\par\n"
            f"\\pard {k.sentence} {FILLER}\\par\n"
            f"{table}\\pard Rehearsals end with tea.\\par\n"
            + f"\\pard {FILLER * 3}\\par\n" * paragraphs + "}").encode("ascii")


if __name__ == "__main__":
    for kind, path in write_documents(Path(sys.argv[1])).items():
        print(f"{kind:5} {path}")
