"""Documents that are not plain text (PDF, Word, PowerPoint, OpenDocument, EPUB, RTF) read into
Markdown with the place each line came from, so a passage can be cited as ``report.pdf p. 12``."""
