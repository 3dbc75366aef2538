"""Read product documents (Markdown, HTML, plain text, PDF, DOCX) into `Document`s.

Every format ends up as the same thing: sections along the heading hierarchy,
each with its full heading path, whose text keeps tables as Markdown pipe rows
and code as fenced blocks so the chunker can keep them whole.

The format modules are imported on demand: PDF and DOCX support pulls in
pypdf and python-docx, which a chat-only run never needs.
"""

from __future__ import annotations

import hashlib
from collections.abc import Iterator
from datetime import UTC, datetime
from pathlib import Path
from typing import Protocol

from threadkeep.documents._parse import ParsedDocument
from threadkeep.errors import DocumentError
from threadkeep.model import Document

MARKDOWN_SUFFIXES = frozenset({".md", ".markdown", ".mdown", ".mkd"})
HTML_SUFFIXES = frozenset({".html", ".htm", ".xhtml"})
TEXT_SUFFIXES = frozenset({".txt", ".text"})
DOCUMENT_SUFFIXES: frozenset[str] = MARKDOWN_SUFFIXES | HTML_SUFFIXES | TEXT_SUFFIXES | {".pdf", ".docx"}


class _Parser(Protocol):
    def __call__(self, data: bytes, path: Path) -> ParsedDocument: ...


def is_document(path: Path | str) -> bool:
    """Whether the file is a document this package reads (by suffix; hidden and Office lock files excluded)."""
    path = Path(path)
    return path.suffix.lower() in DOCUMENT_SUFFIXES and not _is_hidden(path.name)


def _is_hidden(name: str) -> bool:
    # "~$name.docx" is the lock file Word leaves next to an open document.
    return name.startswith((".", "~$"))


def iter_documents(folder: Path | str) -> Iterator[Path]:
    """Every document file under folder, recursively, in sorted path order, skipping hidden files and folders."""
    folder = Path(folder)
    if folder.is_file():
        if is_document(folder):
            yield folder
        return
    for path in sorted(folder.rglob("*")):
        relative = path.relative_to(folder)
        if any(_is_hidden(part) for part in relative.parts):
            continue
        if path.is_file() and is_document(path):
            yield path


def read_document(path: Path, root: Path | None = None) -> Document:
    """Read one document file. Raises `DocumentError` if it cannot be read or parsed."""
    path = Path(path)
    parser = _parser_for(path)
    try:
        data = path.read_bytes()
        mtime = path.stat().st_mtime
    except OSError as error:
        raise DocumentError(path, f"cannot read file: {error.strerror or error}") from error
    parsed = parser(data, path)
    updated_at = parsed.updated_at or datetime.fromtimestamp(mtime, tz=UTC)
    return Document(
        id=_document_id(path, root),
        title=parsed.title or path.stem,
        updated_at=updated_at,
        path=str(path),
        sections=tuple(parsed.sections),
        content_hash=hashlib.sha256(data).hexdigest(),
    )


def _parser_for(path: Path) -> _Parser:
    suffix = path.suffix.lower()
    if suffix in MARKDOWN_SUFFIXES:
        from threadkeep.documents.markdown import parse_markdown

        return parse_markdown
    if suffix in HTML_SUFFIXES:
        from threadkeep.documents.html import parse_html

        return parse_html
    if suffix in TEXT_SUFFIXES:
        from threadkeep.documents.text import parse_text

        return parse_text
    if suffix == ".pdf":
        from threadkeep.documents.pdf import parse_pdf

        return parse_pdf
    if suffix == ".docx":
        from threadkeep.documents.docx import parse_docx

        return parse_docx
    raise DocumentError(path, f"unsupported document type {suffix or '(no suffix)'!r}")


def _document_id(path: Path, root: Path | None) -> str:
    if root is None:
        return path.name
    for candidate, base in ((path, Path(root)), (path.resolve(), Path(root).resolve())):
        try:
            return candidate.relative_to(base).as_posix()
        except ValueError:
            continue
    raise DocumentError(path, f"is not inside the ingested folder {root}")
