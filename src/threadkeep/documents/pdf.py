"""PDF into sections: by the outline (bookmarks) when the file has one, else one section per page.

pypdf extracts the text. An outline entry's section runs from where its title
appears on its page to where the next entry's title appears, so several
headings on one page still get their own sections.
"""

from __future__ import annotations

import io
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from pypdf import PdfReader
from pypdf.errors import PyPdfError
from pypdf.generic import Destination

from threadkeep.documents._parse import ParsedDocument, SectionBuilder
from threadkeep.errors import DocumentError

PAGE_HEADING = "Page {number}"
# Titles some PDF producers write instead of the real one.
_JUNK_TITLE = re.compile(r"^(untitled|microsoft (word|powerpoint) - .*|.*\.(docx?|pptx?|pdf))$", re.IGNORECASE)


@dataclass(frozen=True, slots=True)
class _Entry:
    level: int
    title: str
    page: int


def parse_pdf(data: bytes, path: Path) -> ParsedDocument:
    # pypdf reports damaged files through its own errors and, deeper in the object
    # parser, through plain ValueError/KeyError/TypeError.
    damaged = (PyPdfError, ValueError, KeyError, TypeError, OSError)
    try:
        reader = PdfReader(io.BytesIO(data))
        locked = reader.is_encrypted and not reader.decrypt("")
    except damaged as error:
        raise DocumentError(path, f"cannot read PDF: {error}") from error
    if locked:
        raise DocumentError(path, "the PDF is password-protected")
    try:
        pages = [_page_text(page) for page in reader.pages]
        entries = _outline(reader)
        title = _metadata_title(reader)
    except damaged as error:
        raise DocumentError(path, f"cannot read PDF: {error}") from error
    if not any(text.strip() for text in pages):
        raise DocumentError(path, "the PDF has no extractable text (a scanned image?)")
    title = title or path.stem
    builder = SectionBuilder()
    if entries:
        _sections_by_outline(pages, entries, builder)
    else:
        for number, text in enumerate(pages, start=1):
            if text.strip():
                builder.heading(2, PAGE_HEADING.format(number=number))
                builder.block(text)
    return ParsedDocument(title=title, sections=builder.build(title))


def _page_text(page: Any) -> str:
    text = page.extract_text() or ""
    lines = (line.rstrip() for line in text.replace("\r\n", "\n").replace("\r", "\n").split("\n"))
    return "\n".join(lines).strip("\n")


def _metadata_title(reader: PdfReader) -> str:
    metadata = reader.metadata
    title = " ".join(str(metadata.title or "").split()) if metadata is not None else ""
    return "" if _JUNK_TITLE.match(title) else title


def _outline(reader: PdfReader) -> list[_Entry]:
    entries: list[_Entry] = []

    def visit(items: list[Any], level: int) -> None:
        for item in items:
            if isinstance(item, list):
                visit(item, level + 1)
            elif isinstance(item, Destination):
                page = reader.get_destination_page_number(item)
                title = " ".join(str(item.title or "").split())
                if page is not None and page >= 0 and title:
                    entries.append(_Entry(level, title, page))

    visit(list(reader.outline), 1)
    # Outlines are usually in reading order; a stable sort fixes the rare one that is not.
    return sorted(entries, key=lambda entry: entry.page)


def _sections_by_outline(pages: list[str], entries: list[_Entry], builder: SectionBuilder) -> None:
    page_starts: list[int] = []
    offset = 0
    for text in pages:
        page_starts.append(offset)
        offset += len(text) + 1
    full = "\n".join(pages)

    # Where each entry's text starts (after its title), and where its title itself starts.
    starts: list[tuple[int, int]] = []
    cursor = 0
    for entry in entries:
        page_start = max(page_starts[entry.page], cursor)
        page_end = page_starts[entry.page + 1] if entry.page + 1 < len(pages) else len(full)
        match = _title_pattern(entry.title).search(full, page_start, max(page_end, page_start))
        if match:
            starts.append((match.start(), match.end()))
            cursor = match.end()
        else:
            starts.append((page_start, page_start))
            cursor = page_start
    builder.block(full[: starts[0][0]])
    for index, entry in enumerate(entries):
        end = starts[index + 1][0] if index + 1 < len(entries) else len(full)
        builder.heading(entry.level, entry.title)
        builder.block(full[starts[index][1] : end].strip())


def _title_pattern(title: str) -> re.Pattern[str]:
    # Extracted text may break or space a heading differently from the outline entry.
    characters = [re.escape(ch) for ch in title if not ch.isspace()]
    return re.compile(r"\s*".join(characters))
