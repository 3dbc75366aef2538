"""Turn a `Document` into heading-aware chunks.

One chunk per section; a section too long for the model is split into
overlapping windows, and sections too small to say much on their own are merged
with their neighbours under the same parent heading. Every chunk's embedding
input starts with the title and heading path, because a bare "点击「修复」即可"
means nothing without knowing which page and section it came from.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

from threadkeep.chunks import chunk_id
from threadkeep.chunks.windows import Block, split_into_windows, truncate_to_tokens
from threadkeep.documents.markdown import markdown_parser
from threadkeep.model import Chunk, Document, Section

PATH_SEPARATOR = " > "
# Token types whose text must stay together: splitting a table or a code block
# in the middle leaves two halves that neither read nor embed well.
_ATOMIC_TOKENS = frozenset({"fence", "code_block", "table_open", "html_block"})


def chunk_document(
    doc: Document,
    count_tokens: Callable[[str], int],
    max_tokens: int = 480,
    overlap_tokens: int = 64,
    min_tokens: int = 40,
) -> list[Chunk]:
    """Chunks for one document; the token count of every chunk's `embedding_input` is at most max_tokens."""
    sections = [section for section in doc.sections if section.text.strip()]
    if not sections:
        return []
    empty_cost = count_tokens("")

    def content_tokens(text: str) -> int:
        return count_tokens(text) - empty_cost

    def fits(group: Sequence[Section]) -> bool:
        path = _common_path(group)
        return count_tokens(_embedding_input(doc.title, path, _body(group, path))) <= max_tokens

    def is_tiny(group: Sequence[Section]) -> bool:
        return content_tokens(_body(group, _common_path(group))) < min_tokens

    groups = _merge_tiny(sections, fits, is_tiny)

    chunks: list[Chunk] = []
    seen: set[str] = set()
    for group in groups:
        path = _common_path(group)
        body = _body(group, path)
        header = _embedding_header(doc.title, path)
        if count_tokens(header) > max_tokens // 2:
            # A pathological heading must not crowd out the text it heads.
            header = truncate_to_tokens(header, count_tokens, max_tokens // 2)
        if count_tokens(_join(header, body)) <= max_tokens:
            windows = [body]
        else:
            windows = split_into_windows(
                markdown_blocks(body),
                lambda text, header=header: count_tokens(_join(header, text)),
                max_tokens,
                overlap_tokens,
            )
        for index, window in enumerate(windows):
            text = _join(PATH_SEPARATOR.join(path), window)
            identity = chunk_id(doc.id, "/".join(path), str(index), text)
            # Two identical sections under identical headings would otherwise share an id.
            occurrence = 1
            while identity in seen:
                occurrence += 1
                identity = chunk_id(doc.id, "/".join(path), str(index), text, str(occurrence))
            seen.add(identity)
            chunks.append(
                Chunk(
                    id=identity,
                    source_type="document",
                    source_ref=doc.id,
                    text=text,
                    embedding_input=_join(header, window),
                    occurred_at=doc.updated_at,
                    title=doc.title,
                    heading_path=path,
                    evidence_ids=None,
                    resolution_state=None,
                )
            )
    return chunks


def _merge_tiny(
    sections: list[Section],
    fits: Callable[[Sequence[Section]], bool],
    is_tiny: Callable[[Sequence[Section]], bool],
) -> list[list[Section]]:
    """Group each tiny section with the following ones under the same parent, else with the preceding one."""
    groups: list[list[Section]] = []
    index = 0
    while index < len(sections):
        group = [sections[index]]
        parent = sections[index].heading_path[:-1]
        index += 1
        while (
            index < len(sections)
            and is_tiny(group)
            and _under(sections[index], parent)
            and fits([*group, sections[index]])
        ):
            group.append(sections[index])
            index += 1
        # The last tiny section under a heading has no next sibling: join the one before.
        if (
            groups
            and is_tiny(group)
            and all(_under(section, parent) for section in groups[-1])
            and fits([*groups[-1], *group])
        ):
            groups[-1].extend(group)
        else:
            groups.append(group)
    return groups


def _under(section: Section, parent: tuple[str, ...]) -> bool:
    return section.heading_path[: len(parent)] == parent


def _common_path(group: Sequence[Section]) -> tuple[str, ...]:
    path = group[0].heading_path
    for section in group[1:]:
        shared = 0
        for mine, theirs in zip(path, section.heading_path, strict=False):
            if mine != theirs:
                break
            shared += 1
        path = path[:shared]
    return path


def _body(group: Sequence[Section], path: tuple[str, ...]) -> str:
    """The group's text; members below the common path keep their own headings as Markdown headings."""
    if len(group) == 1 and group[0].heading_path == path:
        return group[0].text.strip()
    parts: list[str] = []
    previous = path
    for section in group:
        shared = len(path)
        while (
            shared < min(len(previous), len(section.heading_path)) and previous[shared] == section.heading_path[shared]
        ):
            shared += 1
        for depth in range(shared, len(section.heading_path)):
            parts.append(f"{'#' * min(depth + 1, 6)} {section.heading_path[depth]}")
        parts.append(section.text.strip())
        previous = section.heading_path
    return "\n\n".join(parts)


def _embedding_header(title: str, path: tuple[str, ...]) -> str:
    parts = path if path and path[0] == title else (title, *path)
    return PATH_SEPARATOR.join(part for part in parts if part)


def _embedding_input(title: str, path: tuple[str, ...], body: str) -> str:
    return _join(_embedding_header(title, path), body)


def _join(header: str, body: str) -> str:
    return f"{header}\n\n{body}" if header else body


def markdown_blocks(body: str) -> list[str | Block]:
    """Top-level Markdown blocks for `split_into_windows`: tables, code and raw HTML as `Block`s to keep whole."""
    lines = body.split("\n")
    tops = [token for token in markdown_parser().parse(body) if token.level == 0 and token.map is not None]
    blocks: list[str | Block] = []
    starts = [token.map[0] for token in tops if token.map is not None]
    if not tops or starts[0] > 0:
        blocks.append("\n".join(lines[: starts[0] if tops else len(lines)]))
    for position, token in enumerate(tops):
        end = starts[position + 1] if position + 1 < len(starts) else len(lines)
        text = "\n".join(lines[starts[position] : end]).strip("\n").rstrip()
        blocks.append(Block(text) if token.type in _ATOMIC_TOKENS else text)
    return [block for block in blocks if (block.text if isinstance(block, Block) else block).strip()]
