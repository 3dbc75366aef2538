"""Word .docx into sections: "Heading 1..9" paragraph styles (or an outline level) give the hierarchy.

python-docx reads the file; tables become Markdown pipe tables, one row per line,
so the chunker keeps each table whole.
"""

from __future__ import annotations

import io
import re
import zipfile
from pathlib import Path

import docx
from docx.opc.exceptions import OpcError
from docx.oxml.ns import qn
from docx.table import Table
from docx.text.paragraph import Paragraph
from lxml import etree

from threadkeep.documents._parse import ParsedDocument, SectionBuilder, pipe_table
from threadkeep.errors import DocumentError

# Word stores built-in style names in English whatever the UI language; "标题 N" covers
# documents whose styles were created by a Chinese WPS/Word as custom styles.
_HEADING_STYLE = re.compile(r"^(?:heading|标题)\s*(\d)$", re.IGNORECASE)
_TITLE_STYLES = frozenset({"title", "标题"})


def parse_docx(data: bytes, path: Path) -> ParsedDocument:
    try:
        document = docx.Document(io.BytesIO(data))
        builder = SectionBuilder()
        first_title = _read_body(document, builder)
        core_title = " ".join((document.core_properties.title or "").split())
    except (OpcError, zipfile.BadZipFile, KeyError, etree.XMLSyntaxError) as error:
        raise DocumentError(path, f"cannot read DOCX: {error}") from error
    title = core_title or first_title or builder.first_heading(1) or path.stem
    return ParsedDocument(title=title, sections=builder.build(title))


def _read_body(document: docx.document.Document, builder: SectionBuilder) -> str:
    """Feed headings and blocks to the builder; returns the text of a Title-style paragraph, if any."""
    title = ""
    list_lines: list[str] = []

    def end_list() -> None:
        if list_lines:
            builder.block("\n".join(list_lines))
            list_lines.clear()

    for item in document.iter_inner_content():
        if isinstance(item, Table):
            end_list()
            builder.block(pipe_table(_table_rows(item)))
            continue
        text = item.text.strip()
        if not text:
            continue
        style = _style_name(item)
        level = _heading_level(item, style)
        if style.lower() in _TITLE_STYLES:
            end_list()
            title = title or " ".join(text.split())
            # Above "Heading 1", so the Title paragraph becomes the root of the heading path.
            builder.heading(0, text)
        elif level is not None:
            end_list()
            builder.heading(level, text)
        elif style.lower().startswith("list"):
            # Consecutive list paragraphs stay one block, as a Markdown list would.
            marker = "1." if "number" in style.lower() else "-"
            list_lines.append(f"{marker} {text}")
        else:
            end_list()
            builder.block(text)
    end_list()
    return title


def _style_name(paragraph: Paragraph) -> str:
    style = paragraph.style
    return (style.name or "") if style is not None else ""


def _heading_level(paragraph: Paragraph, style: str) -> int | None:
    match = _HEADING_STYLE.match(style.strip())
    if match:
        return max(1, int(match.group(1)))
    # Custom heading styles and direct formatting mark headings with an outline level (0-based; 9 = body).
    properties = paragraph._p.pPr
    outline = properties.find(qn("w:outlineLvl")) if properties is not None else None
    if outline is not None:
        value = outline.get(qn("w:val"))
        if value is not None and value.isdigit() and int(value) < 9:
            return int(value) + 1
    return None


def _table_rows(table: Table) -> list[list[str]]:
    rows: list[list[str]] = []
    for row in table.rows:
        cells: list[str] = []
        previous = None
        for cell in row.cells:
            # A merged cell is returned once per grid column it spans; keep it once.
            if cell._tc is previous:
                continue
            previous = cell._tc
            cells.append(" ".join(cell.text.split()))
        rows.append(cells)
    return rows
