"""Markdown (with optional YAML front matter) into sections along the heading hierarchy.

markdown-it-py finds the block structure, so a `#` inside a fenced code block or
an HTML block is never taken for a heading; each block's text is then sliced
from the source by the parser's line map, so tables, code and lists reach the
chunker exactly as written.
"""

from __future__ import annotations

import re
from functools import cache
from pathlib import Path
from typing import Any

import yaml
from markdown_it import MarkdownIt
from markdown_it.token import Token

from threadkeep.documents._parse import ParsedDocument, SectionBuilder, decode_text, parse_date
from threadkeep.errors import DocumentError

_FRONT_MATTER = re.compile(r"\A---[ \t]*\n(.*?\n)?(?:---|\.\.\.)[ \t]*(?:\n|\Z)", re.DOTALL)
_COMMENT_ONLY = re.compile(r"\A\s*<!--.*?-->\s*\Z", re.DOTALL)
_DATE_FIELDS = ("updated", "date")


@cache
def markdown_parser() -> MarkdownIt:
    """CommonMark plus GitHub tables and strikethrough: what product docs are written in."""
    return MarkdownIt("commonmark").enable(["table", "strikethrough"])


def parse_markdown(data: bytes, path: Path) -> ParsedDocument:
    text = decode_text(data, path)
    meta, body = split_front_matter(text, path)
    builder = SectionBuilder()
    lines = body.split("\n")
    tokens = markdown_parser().parse(body)
    # Each top-level block owns the lines from its start to the next block's start, so lines
    # the parser makes no token for (link reference definitions) are not lost.
    blocks = [(index, token, token.map) for index, token in enumerate(tokens) if token.level == 0 and token.map]
    _add_lines(builder, lines[: blocks[0][2][0] if blocks else len(lines)])
    for position, (index, token, (first_line, last_line)) in enumerate(blocks):
        end = blocks[position + 1][2][0] if position + 1 < len(blocks) else len(lines)
        if token.type == "heading_open":
            builder.heading(int(token.tag[1:]), inline_text(tokens[index + 1]))
            _add_lines(builder, lines[last_line:end])
        elif token.type == "html_block" and _COMMENT_ONLY.match(token.content):
            # Editors' notes in <!-- --> are not shown to readers, so they are not knowledge either.
            _add_lines(builder, lines[last_line:end])
        else:
            _add_lines(builder, lines[first_line:end])

    title = _string_field(meta, "title") or builder.first_heading(1) or path.stem
    updated_at = None
    for name in _DATE_FIELDS:
        if meta.get(name) not in (None, ""):
            updated_at = parse_date(meta[name], path, name)
            break
    return ParsedDocument(title=title, sections=builder.build(title), updated_at=updated_at)


def _add_lines(builder: SectionBuilder, lines: list[str]) -> None:
    builder.block("\n".join(lines))


def split_front_matter(text: str, path: Path) -> tuple[dict[str, Any], str]:
    """The YAML front matter as a dict (empty when absent) and the Markdown after it."""
    match = _FRONT_MATTER.match(text)
    if not match:
        return {}, text
    try:
        meta = yaml.safe_load(match.group(1) or "")
    except yaml.YAMLError as error:
        mark = getattr(error, "problem_mark", None)
        where = f" (line {mark.line + 1})" if mark is not None else ""
        raise DocumentError(path, f"invalid YAML front matter{where}: {error}") from error
    if meta is None:
        meta = {}
    if not isinstance(meta, dict):
        # "---" then a paragraph then "---" is a thematic break around text, not front matter.
        return {}, text
    # Keep the body's line numbers meaningful: blank lines stand in for the front matter.
    body = "\n" * match.group(0).count("\n") + text[match.end() :]
    return {str(key): value for key, value in meta.items()}, body


def _string_field(meta: dict[str, Any], name: str) -> str:
    value = meta.get(name)
    return " ".join(str(value).split()) if value not in (None, "") else ""


def inline_text(token: Token) -> str:
    """The visible text of an inline token: emphasis and links unwrapped, images by their alt text."""
    parts: list[str] = []
    for child in token.children or []:
        if child.type in ("text", "code_inline"):
            parts.append(child.content)
        elif child.type in ("softbreak", "hardbreak"):
            parts.append(" ")
        elif child.type == "image":
            parts.append(inline_text(child))
    return "".join(parts) if token.children is not None else token.content
