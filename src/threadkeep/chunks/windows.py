"""Split long text into overlapping windows that fit an embedding model's input.

Pure functions over strings and a caller-supplied token counter, so the same
code serves document sections and long chat replies. A window is always an
exact substring of the joined input, so formatting (lists, tables, code) comes
through untouched.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass

CountTokens = Callable[[str], int]

# A sentence ends at Chinese/Japanese terminal punctuation wherever it occurs
# (CJK text has no spaces after it), at ASCII .!? only when whitespace or the end
# follows (so "v3.2.0" and "config.json" stay whole), and at every line
# break: in documents a line break ends a list item, table row, code line or
# heading far more often than it wraps prose, and cutting there is never mid-word.
_CLOSERS = "\"'”’）)」』】》]"
_SENTENCE_END = re.compile(
    rf"(?:[。！？；]+|…+|\.{{3,}})[{re.escape(_CLOSERS)}]*"
    rf"|(?<![.!?])[.!?]+[{re.escape(_CLOSERS)}]*(?=\s|$)"
    r"|\n"
)
# "e.g. the", "Mr. Li": a full stop after these does not end a sentence.
_ABBREVIATIONS = frozenset({"e.g", "i.e", "vs", "mr", "mrs", "ms", "dr", "cf", "fig", "approx"})
_PARAGRAPH_SEPARATOR = "\n\n"


@dataclass(frozen=True, slots=True)
class Block:
    """A piece of text to keep whole in one window (a table, a code block).

    Only when it alone exceeds the limit is it split, at line boundaries first.
    """

    text: str


@dataclass(frozen=True, slots=True)
class _Unit:
    start: int  # span in the joined text
    end: int
    atomic: bool
    cost: int  # tokens beyond count_tokens(""), counted alone


def split_sentences(text: str) -> list[str]:
    """Split text into sentences (stripped, non-empty) at CJK and ASCII sentence ends and line breaks."""
    return [text[start:end] for start, end in _sentence_spans(text, 0, len(text))]


def _sentence_spans(text: str, start: int, end: int) -> list[tuple[int, int]]:
    spans: list[tuple[int, int]] = []
    cursor = start
    for match in _SENTENCE_END.finditer(text, start, end):
        if match.group().startswith(".") and _is_abbreviation(text, match.start()):
            continue
        _append_stripped(text, cursor, match.end(), spans)
        cursor = match.end()
    _append_stripped(text, cursor, end, spans)
    return spans


def _is_abbreviation(text: str, dot: int) -> bool:
    word_start = dot
    while word_start > 0 and (text[word_start - 1].isalnum() or text[word_start - 1] == "."):
        word_start -= 1
    word = text[word_start:dot]
    if word.lower() in _ABBREVIATIONS:
        return True
    # "1. 下载安装包": an ordered-list marker at the start of a line.
    line_start = word_start
    while line_start > 0 and text[line_start - 1] in " \t":
        line_start -= 1
    return word.isdigit() and (line_start == 0 or text[line_start - 1] == "\n")


def _append_stripped(text: str, start: int, end: int, spans: list[tuple[int, int]]) -> None:
    while start < end and text[start].isspace():
        start += 1
    while end > start and text[end - 1].isspace():
        end -= 1
    if start < end:
        spans.append((start, end))


def _line_spans(text: str, start: int, end: int) -> list[tuple[int, int]]:
    spans: list[tuple[int, int]] = []
    cursor = start
    while cursor < end:
        newline = text.find("\n", cursor, end)
        line_end = end if newline == -1 else newline
        # Keep the line's indentation: code and nested lists depend on it.
        stripped_end = line_end
        while stripped_end > cursor and text[stripped_end - 1].isspace():
            stripped_end -= 1
        if stripped_end > cursor and not text[cursor:stripped_end].isspace():
            spans.append((cursor, stripped_end))
        cursor = line_end + 1
    return spans


def _is_word_char(ch: str) -> bool:
    # CJK ideographs and kana are words of their own, so a cut next to one is fine;
    # Latin letters and digits form words that must not be cut.
    return (ch.isalnum() or ch in "_-'") and not _is_cjk(ch)


def _is_cjk(ch: str) -> bool:
    code = ord(ch)
    return (
        0x2E80 <= code <= 0x9FFF
        or 0xAC00 <= code <= 0xD7AF
        or 0xF900 <= code <= 0xFAFF
        or 0xFF00 <= code <= 0xFFEF
        or 0x20000 <= code <= 0x3FFFF
    )


def _fits(text: str, count_tokens: CountTokens, max_tokens: int) -> bool:
    return count_tokens(text) <= max_tokens


def _cut_spans(text: str, start: int, end: int, count_tokens: CountTokens, max_tokens: int) -> list[tuple[int, int]]:
    """Cut text[start:end] into pieces that fit, at word boundaries, or characters if a word alone is too long."""
    pieces: list[tuple[int, int]] = []
    while start < end:
        while start < end and text[start].isspace():
            start += 1
        if start >= end:
            break
        # Token counts grow with length (near enough): gallop to a prefix that does not fit,
        # so a huge input is never tokenized whole, then binary search the longest that does.
        low, high, size = start, end + 1, max(8, max_tokens * 2)
        while True:
            probe = min(start + size, end)
            if not _fits(text[start:probe].rstrip(), count_tokens, max_tokens):
                high = probe
                break
            low = probe
            if probe == end:
                break
            size *= 2
        if low == end:
            pieces.append((start, end))
            break
        while high - low > 1:
            middle = (low + high) // 2
            if _fits(text[start:middle].rstrip(), count_tokens, max_tokens):
                low = middle
            else:
                high = middle
        cut = low
        if cut == start:
            raise ValueError(f"max_tokens={max_tokens} is too small to hold even one character")
        if _is_word_char(text[cut - 1]) and _is_word_char(text[cut]):
            boundary = cut
            while boundary > start and _is_word_char(text[boundary - 1]):
                boundary -= 1
            if boundary > start:
                cut = boundary
        piece_end = cut
        while piece_end > start and text[piece_end - 1].isspace():
            piece_end -= 1
        # Counting is not perfectly monotonic; make sure what we keep really fits.
        while piece_end > start + 1 and not _fits(text[start:piece_end], count_tokens, max_tokens):
            piece_end -= 1
        pieces.append((start, piece_end))
        start = piece_end
    return pieces


def truncate_to_tokens(text: str, count_tokens: CountTokens, max_tokens: int) -> str:
    """The longest prefix of text, cut at a word boundary, whose token count is within max_tokens."""
    spans = _cut_spans(text, 0, len(text), count_tokens, max_tokens)
    return text[spans[0][0] : spans[0][1]] if spans else ""


def split_into_windows(
    blocks: str | Sequence[str | Block],
    count_tokens: CountTokens,
    max_tokens: int,
    overlap_tokens: int,
) -> list[str]:
    """Pack text into windows of at most max_tokens, each repeating ~overlap_tokens of the previous one's end.

    `blocks` is one text or a sequence of paragraphs (joined by blank lines);
    `Block`s are kept whole in one window unless they alone exceed the limit.
    Windows break between sentences; a sentence too long on its own is cut at a
    word (or, for a single giant word, character) boundary. `count_tokens` is
    applied to each candidate window as is, so it may add any fixed context
    (a heading line, a model prefix): the fixed cost of `count_tokens("")` is not
    counted against the overlap.
    """
    if max_tokens <= 0:
        raise ValueError("max_tokens must be positive")
    if not 0 <= overlap_tokens < max_tokens:
        raise ValueError("overlap_tokens must be at least 0 and below max_tokens")
    items: Sequence[str | Block] = [blocks] if isinstance(blocks, str) else blocks
    joined, units = _units(items, count_tokens, max_tokens)
    if not units:
        return []
    base_cost = count_tokens("")

    def span_text(first: int, last: int) -> str:
        return joined[units[first].start : units[last].end]

    windows: list[str] = []
    first = 0
    while True:
        last = _window_end(first, units, span_text, count_tokens, max_tokens, base_cost)
        windows.append(span_text(first, last))
        if last + 1 >= len(units):
            return windows
        first = _overlap_start(first, last, units, span_text, count_tokens, max_tokens, overlap_tokens, base_cost)


def _window_end(
    first: int,
    units: list[_Unit],
    span_text: Callable[[int, int], str],
    count_tokens: CountTokens,
    max_tokens: int,
    base_cost: int,
) -> int:
    """The last unit of the longest window starting at `first` that fits."""
    # Token counts are close to additive across sentence boundaries, so summing the units'
    # own costs lands on (or next to) the answer; exact counts of the window then settle it.
    last, estimate = first, base_cost + units[first].cost
    while last + 1 < len(units) and estimate + units[last + 1].cost <= max_tokens:
        last += 1
        estimate += units[last].cost
    while last > first and not _fits(span_text(first, last), count_tokens, max_tokens):
        last -= 1
    while last + 1 < len(units) and _fits(span_text(first, last + 1), count_tokens, max_tokens):
        last += 1
    return last


def _overlap_start(
    first: int,
    last: int,
    units: list[_Unit],
    span_text: Callable[[int, int], str],
    count_tokens: CountTokens,
    max_tokens: int,
    overlap_tokens: int,
    base_cost: int,
) -> int:
    """Where the next window starts: trailing prose units of this one within the overlap budget."""
    start = last + 1
    # Never go back to the window's first unit (no progress) and never repeat a table or
    # code block: it is already whole in the previous window and a fragment helps no one.
    while (
        start - 1 > first
        and not units[start - 1].atomic
        and count_tokens(span_text(start - 1, last)) - base_cost <= overlap_tokens
    ):
        start -= 1
    # The overlap must leave room for at least the next new unit.
    while start <= last and not _fits(span_text(start, last + 1), count_tokens, max_tokens):
        start += 1
    return start


def _units(items: Sequence[str | Block], count_tokens: CountTokens, max_tokens: int) -> tuple[str, list[_Unit]]:
    parts: list[str] = []
    blocks: list[tuple[int, int, bool]] = []
    cursor = 0
    for item in items:
        atomic = isinstance(item, Block)
        text = (item.text if isinstance(item, Block) else item).strip("\n")
        if not text.strip():
            continue
        if parts:
            parts.append(_PARAGRAPH_SEPARATOR)
            cursor += len(_PARAGRAPH_SEPARATOR)
        parts.append(text)
        blocks.append((cursor, cursor + len(text), atomic))
        cursor += len(text)
    joined = "".join(parts)

    base_cost = count_tokens("")
    units: list[_Unit] = []
    for start, end, atomic in blocks:
        if atomic:
            cost = count_tokens(joined[start:end])
            if cost <= max_tokens:
                units.append(_Unit(start, end, atomic=True, cost=cost - base_cost))
                continue
            spans = _line_spans(joined, start, end)
        else:
            spans = _sentence_spans(joined, start, end)
        for span_start, span_end in spans:
            cost = count_tokens(joined[span_start:span_end])
            if cost <= max_tokens:
                units.append(_Unit(span_start, span_end, atomic=atomic, cost=cost - base_cost))
                continue
            for piece_start, piece_end in _cut_spans(joined, span_start, span_end, count_tokens, max_tokens):
                cost = count_tokens(joined[piece_start:piece_end]) - base_cost
                units.append(_Unit(piece_start, piece_end, atomic=atomic, cost=cost))
    return joined, units
