"""Plain text: one section under the file's title, paragraphs separated by blank lines."""

from __future__ import annotations

import re
from pathlib import Path

from threadkeep.documents._parse import ParsedDocument, SectionBuilder, decode_text

_BLANK_LINES = re.compile(r"\n[ \t\u3000]*\n\s*")


def parse_text(data: bytes, path: Path) -> ParsedDocument:
    text = decode_text(data, path)
    builder = SectionBuilder()
    for paragraph in _BLANK_LINES.split(text):
        builder.block("\n".join(line.rstrip() for line in paragraph.split("\n")))
    title = path.stem
    return ParsedDocument(title=title, sections=builder.build(title))
