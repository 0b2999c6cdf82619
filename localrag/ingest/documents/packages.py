"""The zip container of .docx, .pptx, .odt, .odp and .epub files, checked before a library opens it."""

from __future__ import annotations

import io
import zipfile
import zlib

from localrag.ingest.documents.layout import DOCUMENT_ERROR, UNPACKS_TOO_LARGE, DocumentUnreadable

# what the parts may unpack to in all: the XML is parsed in memory (a zip bomb of a few MB would
# otherwise ask for gigabytes)
MAX_UNPACKED_BYTES = 200_000_000


def checked_zip(data: bytes, what: str) -> zipfile.ZipFile:
    """The document's zip, refused when it is not one, is damaged or unpacks past the limit."""
    try:
        package = zipfile.ZipFile(io.BytesIO(data))
        # zipfile stops each part at its declared size, so the sum bounds what testzip unpacks
        unpacked = sum(info.file_size for info in package.infolist())
        if unpacked > MAX_UNPACKED_BYTES:
            raise DocumentUnreadable(UNPACKS_TOO_LARGE, f"its parts unpack to {unpacked:,} bytes, over the limit of "
                                                        f"{MAX_UNPACKED_BYTES:,}")
        damaged = package.testzip()
    except (zipfile.BadZipFile, zipfile.LargeZipFile, EOFError, ValueError, NotImplementedError, OSError, zlib.error) as exc:
        raise DocumentUnreadable(DOCUMENT_ERROR, f"not a readable {what} file (its zip container is damaged: {exc})") from exc
    if damaged is not None:
        raise DocumentUnreadable(DOCUMENT_ERROR, f"not a readable {what} file (the part {damaged} is damaged)")
    return package
