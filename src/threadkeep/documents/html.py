"""HTML into sections along the h1–h6 hierarchy.

Parsed with lxml (already required by python-docx), which copes with the
tag soup that help-centre exports and saved web pages tend to be. Page chrome
(scripts, styles, navigation) is dropped; tables become Markdown pipe tables and
<pre> becomes fenced code so the chunker keeps them whole.
"""

from __future__ import annotations

import re
from datetime import datetime
from pathlib import Path

import lxml.html
from lxml import etree

from threadkeep.documents._parse import (
    DocumentError,
    ParsedDocument,
    SectionBuilder,
    decode_text,
    fenced,
    parse_date,
    pipe_table,
)

_DROP = frozenset({"script", "style", "nav", "noscript", "template", "svg", "iframe", "head", "button", "select"})
_HEADINGS = {f"h{level}": level for level in range(1, 7)}
_LISTS = frozenset({"ul", "ol"})
_BLOCKS = frozenset(
    {
        "address", "article", "aside", "blockquote", "body", "dd", "details", "dialog", "div", "dl", "dt",
        "fieldset", "figcaption", "figure", "footer", "form", "header", "hr", "html", "li", "main", "p",
        "section", "summary",
    }
)  # fmt: skip
# Names under which pages state when they were last changed, most specific first.
_DATE_META = ("updated", "last-modified", "article:modified_time", "dcterms.modified", "date", "dc.date")
_SPACE = re.compile(r"[ \t\r\n\f\v]+")
_CHARSET = re.compile(rb"""<meta[^>]+charset\s*=\s*["']?([A-Za-z0-9_.:-]+)""", re.IGNORECASE)


class _Flow:
    """Inline text of the block being read, flushed into the builder at block boundaries."""

    def __init__(self, builder: SectionBuilder) -> None:
        self.builder = builder
        self.lines: list[list[str]] = [["", ""]]  # [list marker or indent, text]

    def text(self, text: str | None) -> None:
        if text:
            self.lines[-1][1] += _SPACE.sub(" ", text)

    def newline(self, prefix: str = "") -> None:
        if self.lines[-1][1].strip():
            self.lines.append([prefix, ""])
        elif not self.lines[-1][0]:
            # An item's marker stays on its first line even when the text comes in a <p>.
            self.lines[-1][0] = prefix

    def flush(self) -> None:
        kept = [prefix + text.strip() for prefix, text in self.lines if text.strip()]
        self.builder.block("\n".join(kept))
        self.lines = [["", ""]]


def parse_html(data: bytes, path: Path) -> ParsedDocument:
    if not data.strip():
        return ParsedDocument(title=path.stem, sections=[])
    root = _parse(data, path)
    meta_title, updated_at = _head_info(root, path)
    for element in list(root.iter(*_DROP)):
        if element.getparent() is not None:
            element.drop_tree()
    builder = SectionBuilder()
    flow = _Flow(builder)
    body = root.find(".//body")
    _walk(body if body is not None else root, flow, list_depth=0)
    flow.flush()
    title = builder.first_heading(1) or meta_title or path.stem
    return ParsedDocument(title=title, sections=builder.build(title), updated_at=updated_at)


def _parse(data: bytes, path: Path) -> etree._Element:
    text = _decode(data, path)
    parser = lxml.html.HTMLParser(encoding="utf-8", remove_comments=True)
    try:
        return lxml.html.document_fromstring(text.encode("utf-8"), parser=parser)
    except (etree.ParserError, ValueError) as error:
        raise DocumentError(path, f"cannot parse HTML: {error}") from error


def _decode(data: bytes, path: Path) -> str:
    # A declared charset wins (old help pages are often GBK or Big5); without one, or when
    # the declaration is wrong, guess as for any text file.
    declared = _CHARSET.search(data[:4096])
    if declared and not data.startswith((b"\xef\xbb\xbf", b"\xff\xfe", b"\xfe\xff")):
        try:
            return data.decode(declared.group(1).decode("ascii")).replace("\r\n", "\n")
        except (LookupError, UnicodeDecodeError):
            pass
    return decode_text(data, path)


def _head_info(root: etree._Element, path: Path) -> tuple[str, datetime | None]:
    title_element = root.find(".//title")
    title = _SPACE.sub(" ", title_element.text_content()).strip() if title_element is not None else ""
    found: dict[str, str] = {}
    for meta in root.iter("meta"):
        name = (meta.get("name") or meta.get("property") or meta.get("http-equiv") or "").strip().lower()
        content = (meta.get("content") or "").strip()
        if name in _DATE_META and content and name not in found:
            found[name] = content
    for name in _DATE_META:
        if name in found:
            return title, parse_date(found[name], path, f"<meta {name}>")
    return title, None


def _walk(element: etree._Element, flow: _Flow, list_depth: int) -> None:
    for child in element:
        _node(child, flow, list_depth)


def _node(element: etree._Element, flow: _Flow, list_depth: int) -> None:
    tag = element.tag.lower() if isinstance(element.tag, str) else None
    if tag in _HEADINGS:
        flow.flush()
        flow.builder.heading(_HEADINGS[tag], element.text_content())
    elif tag == "table":
        flow.flush()
        flow.builder.block(_table(element))
    elif tag == "pre":
        flow.flush()
        flow.builder.block(fenced(element.text_content(), _code_language(element)))
    elif tag == "br":
        flow.newline()
    elif tag in _LISTS:
        flow.newline()
        _walk_list(element, flow, list_depth)
        flow.newline()
    elif tag in _BLOCKS:
        # Inside a list item a paragraph is a new line of that item, not a new block.
        if list_depth:
            flow.newline("  " * list_depth)
        else:
            flow.flush()
        flow.text(element.text)
        _walk(element, flow, list_depth)
        if list_depth:
            flow.newline()
        else:
            flow.flush()
    elif tag is not None:
        flow.text(element.text)
        _walk(element, flow, list_depth)
    # Comments and processing instructions (tag is None) contribute only the text after them.
    flow.text(element.tail)


def _walk_list(element: etree._Element, flow: _Flow, list_depth: int) -> None:
    ordered = element.tag == "ol"
    indent = "  " * list_depth
    number = 0
    flow.text(element.text)
    for item in element:
        if isinstance(item.tag, str) and item.tag.lower() == "li":
            number += 1
            flow.newline(f"{indent}{number}. " if ordered else f"{indent}- ")
            flow.text(item.text)
            _walk(item, flow, list_depth + 1)
            flow.newline()
            flow.text(item.tail)
        else:
            _node(item, flow, list_depth + 1)


def _table(table: etree._Element) -> str:
    rows: list[list[str]] = []
    for row in table.xpath("./tr|./thead/tr|./tbody/tr|./tfoot/tr"):
        cells = [cell.text_content() for cell in row.xpath("./th|./td")]
        rows.append(cells)
    captions = table.xpath("./caption")
    caption = _SPACE.sub(" ", captions[0].text_content()).strip() if captions else ""
    return pipe_table(rows, caption)


def _code_language(pre: etree._Element) -> str:
    for element in (pre, *pre.iter("code")):
        for name in (element.get("class") or "").split():
            if name.startswith(("language-", "lang-")):
                return name.split("-", 1)[1]
    return ""
