"""What the document format parsers share: what a parser returns, text decoding, dates, tables,
and the builder that cuts text into sections along the heading hierarchy."""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from datetime import UTC, date, datetime, time
from pathlib import Path

from threadkeep.errors import DocumentError
from threadkeep.model import Section


@dataclass(slots=True)
class ParsedDocument:
    """What a format parser found; `read_document` adds identity, hash and fallbacks."""

    title: str
    sections: list[Section]
    updated_at: datetime | None = None


def decode_text(data: bytes, path: Path) -> str:
    """Decode a text file: a BOM wins, then UTF-8, then GB18030 (legacy Chinese Windows files)."""
    if data.startswith(b"\xef\xbb\xbf"):
        encodings: tuple[str, ...] = ("utf-8-sig",)
    elif data.startswith((b"\xff\xfe", b"\xfe\xff")):
        encodings = ("utf-16",)
    else:
        encodings = ("utf-8", "gb18030")
    for encoding in encodings:
        try:
            text = data.decode(encoding)
        except UnicodeDecodeError:
            continue
        if "\x00" in text:
            break
        return text.replace("\r\n", "\n").replace("\r", "\n")
    raise DocumentError(path, "not a text file, or in an unknown text encoding")


_CJK_DATE = re.compile(r"^\s*(\d{4})\s*[年/.-]\s*(\d{1,2})\s*[月/.-]\s*(\d{1,2})\s*日?\s*$")


def parse_date(value: object, path: Path, field_name: str) -> datetime:
    """A front-matter/meta date as an aware UTC datetime; a date alone means midnight UTC, naive means UTC."""
    if isinstance(value, datetime):
        moment = value
    elif isinstance(value, date):
        moment = datetime.combine(value, time(0, 0))
    elif isinstance(value, str):
        text = value.strip()
        try:
            moment = datetime.fromisoformat(text.replace("Z", "+00:00"))
        except ValueError:
            match = _CJK_DATE.match(text)
            if not match:
                raise DocumentError(path, f"{field_name}: {value!r} is not a date (use YYYY-MM-DD)") from None
            try:
                moment = datetime(int(match[1]), int(match[2]), int(match[3]))
            except ValueError as error:
                raise DocumentError(path, f"{field_name}: {value!r} is not a valid date") from error
    else:
        raise DocumentError(path, f"{field_name}: {value!r} is not a date (use YYYY-MM-DD)")
    if moment.tzinfo is None:
        return moment.replace(tzinfo=UTC)
    return moment.astimezone(UTC)


def fenced(code: str, language: str = "") -> str:
    """Code as a Markdown fenced block, with a fence longer than any backtick run inside."""
    longest = max((len(run) for run in re.findall(r"`+", code)), default=0)
    fence = "`" * max(3, longest + 1)
    return f"{fence}{language}\n{code.strip(chr(10))}\n{fence}"


def pipe_table(rows: list[list[str]], caption: str = "") -> str:
    """Rows of cell texts as a Markdown pipe table (the first row as header), so it stays one block."""
    rows = [row for row in rows if any(cell.strip() for cell in row)]
    if not rows:
        return caption
    width = max(len(row) for row in rows)

    def line(cells: list[str]) -> str:
        cells = [_table_cell(cell) for cell in cells] + [""] * (width - len(cells))
        return "| " + " | ".join(cells) + " |"

    lines = [line(rows[0]), "| " + " | ".join(["---"] * width) + " |", *(line(row) for row in rows[1:])]
    if caption:
        lines.insert(0, caption)
    return "\n".join(lines)


def _table_cell(text: str) -> str:
    return re.sub(r"\s+", " ", text).strip().replace("|", "\\|")


@dataclass(slots=True)
class _PendingSection:
    headings: tuple[tuple[int, str], ...]
    blocks: list[str] = field(default_factory=list)


class SectionBuilder:
    """Collects headings and text blocks in reading order and turns them into `Section`s.

    The heading path always starts with the document title. When the document has
    a single top-level heading (the usual `# Title` followed by `##` sections), that
    heading is the first element; otherwise every heading sits under the title.
    """

    def __init__(self) -> None:
        self._sections: list[_PendingSection] = [_PendingSection(headings=())]
        self._stack: list[tuple[int, str]] = []

    def heading(self, level: int, text: str) -> None:
        text = " ".join(text.split())
        if not text:
            return
        while self._stack and self._stack[-1][0] >= level:
            self._stack.pop()
        self._stack.append((level, text))
        self._sections.append(_PendingSection(headings=tuple(self._stack)))

    def block(self, text: str) -> None:
        if text.strip():
            self._sections[-1].blocks.append(text.strip("\n").rstrip())

    def first_heading(self, level: int) -> str | None:
        for section in self._sections:
            if section.headings and section.headings[-1][0] == level:
                return section.headings[-1][1]
        return None

    def build(self, title: str) -> list[Section]:
        top_level = min((s.headings[0][0] for s in self._sections if s.headings), default=None)
        top_headings = [s for s in self._sections if len(s.headings) == 1 and s.headings[0][0] == top_level]
        # A lone "## Notes" under a front-matter title is a section, not the document's root.
        single_root = len(top_headings) == 1 and (top_level <= 1 or top_headings[0].headings[0][1] == title)
        sections: list[Section] = []
        for pending in self._sections:
            if not pending.blocks:
                continue
            names = tuple(name for _, name in pending.headings)
            if single_root and names:
                path = names
            elif single_root:
                # Text before the document's one top heading belongs to that heading.
                path = (top_headings[0].headings[0][1],)
            elif names and names[0] == title:
                # The title came from this heading (first of several H1s): do not say it twice.
                path = names
            else:
                path = (title, *names)
            sections.append(Section(heading_path=path, text="\n\n".join(pending.blocks)))
        return sections
