"""Decoding and line-reading helpers shared by the readers.

Exports come from every kind of machine: UTF-8 with or without a BOM, UTF-16
from Windows tools, GBK from Chinese Windows. Decoding never fails; what could
not be decoded exactly is reported as a `Skip`.
"""

from __future__ import annotations

import codecs
import contextvars
import hashlib
import json
import re
from collections.abc import Callable, Iterable, Iterator
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, Protocol

from threadkeep.errors import FileTooLargeError
from threadkeep.model import Message, ReadResult, Skip

MAX_LINE_CHARS = 5_000_000
# iter_json_lines remembers why this many distinct bad lines (each shorter than this) failed.
_FAILED_LINES_KEPT = 4_096
_FAILED_LINE_CHARS = 1_024
# Largest file a reader loads (readers hold a whole file in memory to parse it). Real exports
# are far smaller: a heavy ChatGPT user's conversations.json is a few hundred MB.
DEFAULT_MAX_FILE_BYTES = 1 << 30
max_file_bytes: contextvars.ContextVar[int] = contextvars.ContextVar("max_file_bytes", default=DEFAULT_MAX_FILE_BYTES)
_SPACE = re.compile(r"[ \t\r\n]*")


def size_text(size: int) -> str:
    for unit, factor in (("GB", 1 << 30), ("MB", 1 << 20), ("KB", 1 << 10)):
        if size >= factor:
            return f"{size / factor:.3g} {unit}"
    return f"{size} bytes"


def decode(data: bytes, file: str) -> tuple[str, list[Skip]]:
    """Decode bytes of unknown encoding; report lossy decoding instead of failing."""
    for bom, encoding in (
        (codecs.BOM_UTF8, "utf-8-sig"),
        (codecs.BOM_UTF16_LE, "utf-16"),
        (codecs.BOM_UTF16_BE, "utf-16"),
    ):
        if data.startswith(bom):
            return data.decode(encoding, errors="replace"), []
    if len(data) >= 4 and data[1:4:2] == b"\0\0" and data[0:3:2] != b"\0\0":
        return data.decode("utf-16-le", errors="replace"), []
    try:
        return data.decode("utf-8"), []
    except UnicodeDecodeError as utf8_error:
        try:
            return data.decode("gb18030"), []
        except UnicodeDecodeError:
            text = data.decode("utf-8", errors="replace")
            line = data[: utf8_error.start].count(b"\n") + 1
            return text, [Skip(file, line, "invalid UTF-8 bytes replaced with U+FFFD")]


# Python refuses to turn more than 4,300 digits into an int (the conversion is quadratic) and
# json raises a plain ValueError for it; a number that long is no id or time anyone wrote.
_INT_DIGITS = 4_300


def _json_int(digits: str) -> int | float:
    return int(digits) if len(digits) <= _INT_DIGITS else float(digits)


_DECODER = json.JSONDecoder(parse_int=_json_int)


def loads(text: str) -> Any:
    """`json.loads` that reads a number of any length (a huge one becomes a float) instead of raising ValueError."""
    return _DECODER.decode(text)


def json_error_reason(error: json.JSONDecodeError, text: str, unit: str = "file") -> str:
    """Why JSON text does not parse, with the column (the Skip carries the line), and whether it was cut short.

    `unit` is what `text` is (a file, or one line of a JSON-lines file): what ends too early.
    """
    message = error.msg.removesuffix(" starting at")
    cut = error.msg.startswith("Unterminated string") or error.pos >= len(text.rstrip())
    ending = f"; the {unit} ends there: cut short?" if cut else ""
    return f"not valid JSON ({message} at column {error.colno}){ending}"


def read_bytes(path: Path) -> bytes:
    """A file's bytes; `FileTooLargeError` (an OSError) above the size limit."""
    limit = max_file_bytes.get()
    size = path.stat().st_size
    if size > limit:
        message = f"file of {size_text(size)} is larger than the {size_text(limit)} limit (--max-file-size)"
        raise FileTooLargeError(message, size, limit)
    return path.read_bytes()


def read_text(path: Path) -> tuple[str, list[Skip]]:
    return decode(read_bytes(path), str(path))


def iter_json_lines(path: Path) -> Iterator[tuple[int, Any] | Skip]:
    """Yield (line number, parsed object) per line, or a `Skip` for a bad line."""
    try:
        text, problems = read_text(path)
    except OSError as error:
        yield Skip(str(path), None, f"cannot read: {error.strerror or error}")
        return
    yield from problems
    file = str(path)
    # Why each bad line failed, by its text: a file of one bad line repeated (a hostile or broken
    # writer) then costs one parse per distinct line, not one raised exception per line.
    failed: dict[str, str] = {}
    for number, line in enumerate(text.splitlines(), start=1):
        if not line.strip():
            continue
        if len(line) > MAX_LINE_CHARS:
            yield Skip(file, number, f"line of {len(line):,} characters is longer than {MAX_LINE_CHARS:,}")
            continue
        reason = failed.get(line)
        if reason is None:
            try:
                yield number, loads(line)
                continue
            except json.JSONDecodeError as error:
                reason = json_error_reason(error, line, "line")
            except RecursionError:
                reason = "JSON nested too deeply to read"
            if len(failed) < _FAILED_LINES_KEPT and len(line) < _FAILED_LINE_CHARS:
                failed[line] = reason
        yield Skip(file, number, reason)


def head_lines(path: Path, size: int) -> list[str]:
    """The whole lines within the first `size` bytes of a file, for format detection ([] if unreadable)."""
    try:
        with path.open("rb") as handle:
            data = handle.read(size)
    except OSError:
        return []
    if len(data) == size and b"\n" in data:
        data = data[: data.rfind(b"\n") + 1]
    return decode(data, str(path))[0].splitlines()


def load_json(path: Path) -> tuple[Any, list[Skip]]:
    """Parse a whole JSON file; on failure return None and say where it broke."""
    try:
        text, problems = read_text(path)
    except OSError as error:
        return None, [Skip(str(path), None, f"cannot read: {error.strerror or error}")]
    if not text.strip():
        return None, [*problems, Skip(str(path), None, "file is empty")]
    try:
        return loads(text), problems
    except json.JSONDecodeError as error:
        return None, [*problems, Skip(str(path), error.lineno, json_error_reason(error, text))]
    except RecursionError:
        return None, [*problems, Skip(str(path), None, "JSON nested too deeply to read")]


def load_export(path: Path, file_name: str, skipped: list[Skip]) -> tuple[Path, Any]:
    """An export's JSON file (`file_name` when `path` is its folder) and its data; None if unreadable."""
    if path.is_dir():
        path = path / file_name
    data, problems = load_json(path)
    skipped.extend(problems)
    return path, data


def parse_time(value: Any, *, assume_utc: bool = False) -> datetime:
    """Parse an ISO-8601 string or epoch seconds into an aware datetime.

    Raises ValueError with a readable reason.
    """
    if isinstance(value, bool):
        raise ValueError(f"time is a boolean ({value!r})")
    if isinstance(value, int | float):
        try:
            return datetime.fromtimestamp(float(value), tz=UTC)
        except (OverflowError, OSError, ValueError) as error:
            raise ValueError(f"time {value!r} is out of range") from error
    if not isinstance(value, str) or not value.strip():
        raise ValueError(f"time is not a string ({value!r})")
    moment = datetime.fromisoformat(value.strip())
    if moment.tzinfo is None:
        if not assume_utc:
            raise ValueError(f"time {value!r} has no UTC offset")
        moment = moment.replace(tzinfo=UTC)
    return moment


def skip_space(text: str, position: int) -> int:
    match = _SPACE.match(text, position)
    return match.end() if match else position


def json_array_items(text: str, start: int, file: str) -> Iterator[tuple[int, Any] | Skip]:
    """Yield (line, value) for each element of the JSON array opening at `text[start]`.

    Parsing element by element keeps everything before a break: an export cut off
    mid-write (a full disk, a killed exporter) loses only its tail, reported as a Skip.
    """
    decoder = _DECODER
    position = skip_space(text, start + 1)
    line = text.count("\n", 0, position) + 1
    counted_to = position
    if text.startswith("]", position):
        return
    while True:
        line += text.count("\n", counted_to, position)
        counted_to = position
        try:
            value, end = decoder.raw_decode(text, position)
        except json.JSONDecodeError as error:
            reason = f"not valid JSON ({error.msg} at column {error.colno}); rest of the array lost"
            yield Skip(file, error.lineno, reason)
            return
        except RecursionError:
            yield Skip(file, line, "JSON nested too deeply; rest of the array lost")
            return
        yield line, value
        position = skip_space(text, end)
        if text.startswith(",", position):
            position = skip_space(text, position + 1)
            continue
        if not text.startswith("]", position):
            broken = text.count("\n", 0, position) + 1
            yield Skip(file, broken, "array not closed (file cut short?); rest of the array lost")
        return


def read_text_or_skip(path: Path, skipped: list[Skip]) -> str | None:
    """The decoded text of `path`, or None with a Skip saying why it could not be read."""
    try:
        text, problems = read_text(path)
    except OSError as error:
        skipped.append(Skip(str(path), None, f"cannot read: {error.strerror or error}"))
        return None
    skipped.extend(problems)
    return text


def read_filled_text(path: Path, skipped: list[Skip], blank: str = "\ufeff \t\r\n") -> str | None:
    """`read_text_or_skip`, also None (with a Skip) for a file holding nothing but `blank` characters."""
    text = read_text_or_skip(path, skipped)
    if text is not None and not text.strip(blank):
        skipped.append(Skip(str(path), None, "file is empty"))
        return None
    return text


class LineMessage(Protocol):
    """One message of a line-per-message text export, as its reader parsed it."""

    line: int
    moment: datetime
    sender: str  # "" for an event line
    text: str
    continuation: list[str]


def line_messages(
    ref: str,
    raws: Iterable[LineMessage],
    recalled: Callable[[str], bool],
    media: Callable[[str], tuple[str, str]],
) -> tuple[list[Message], set[str]]:
    """The messages of a line-per-message export's parsed lines, and the speakers among them.

    `recalled(body)` tells a "message deleted" placeholder, `media(body)` gives (kind, text) of
    an attachment line or ("text", body)."""
    seen: dict[str, int] = {}
    speakers: set[str] = set()
    messages = []
    for raw in raws:
        body = "\n".join([raw.text, *raw.continuation]).rstrip("\n") if raw.continuation else raw.text
        system = raw.sender == ""
        gone = not system and recalled(body.strip())
        kind, body = ("system", body.strip()) if system else media(body)
        sender = "system" if system else raw.sender
        if not system:
            speakers.add(sender)
        messages.append(
            Message(
                id=text_message_id(ref, raw.moment, sender, body, seen),
                conversation=ref,
                sender=sender,
                sender_name="" if system else sender,
                sent_at=raw.moment,
                text=body,
                kind=kind,
                role="system" if system else "member",
                recalled=gone,
                metadata={"line": raw.line},
            )
        )
    return messages, speakers


def files_to_read(
    path: Path, claims: Callable[[Path], bool], what: str, skipped: list[Skip], recursive: bool = False
) -> list[Path]:
    """`path` itself, or every file in the folder `path` that `claims` recognises (a Skip when none)."""
    if not path.is_dir():
        return [path]
    children = path.rglob("*") if recursive else path.glob("*")
    files = sorted(child for child in children if child.is_file() and claims(child))
    if not files:
        skipped.append(Skip(str(path), None, f"no {what} files found"))
    return files


_JSON_STRUCTURE = re.compile(r'[\[\]{}"\\\n]')
DEEP_NESTING = 500


def deep_nesting_line(text: str, limit: int = DEEP_NESTING) -> int | None:
    """The line where JSON `text` first nests deeper than `limit`, for reporting a RecursionError."""
    depth = 0
    line = 1
    in_string = False
    escaped_at = -1
    for token in _JSON_STRUCTURE.finditer(text):
        char, position = token.group(), token.start()
        if char == "\n":
            line += 1
        elif in_string:
            if char == "\\" and escaped_at != position:
                escaped_at = position + 1
            elif char == '"' and escaped_at != position:
                in_string = False
        elif char == '"':
            in_string = True
        elif char in "[{":
            depth += 1
            if depth > limit:
                return line
        elif char in "]}":
            depth -= 1
    return None


def too_deep(text: str, file: str, what: str = "") -> Skip:
    """The Skip for JSON nested too deeply to parse, at the line where the nesting gets deep."""
    return Skip(file, deep_nesting_line(text), f"JSON nested too deeply to read{what}")


def inside(root: Path, path: Path) -> bool:
    """Whether `path`, with symlinks followed, stays within `root`: readers never read outside what they were given."""
    try:
        return path.resolve().is_relative_to(root.resolve())
    except (OSError, RuntimeError):  # a symlink loop
        return False


def confined(root: Path, files: list[Path], skipped: list[Skip]) -> list[Path]:
    """`files` that stay within `root` once symlinks are followed; a Skip for each that leads out."""
    if not root.is_dir():
        return files
    kept = []
    for file in files:
        if inside(root, file):
            kept.append(file)
        else:
            skipped.append(Skip(str(file), None, "symlink to outside the folder given; not followed"))
    return kept


def list_unclaimed(path: Path, read: list[Path], what: str, skipped: list[Skip], recursive: bool = False) -> None:
    """A Skip for each file of the folder `path` not in `read`: a reader forced on a folder says what it left out."""
    if not path.is_dir():
        return
    chosen = set(read)
    for child in sorted(path.rglob("*") if recursive else path.glob("*")):
        if child.is_file() and child not in chosen:
            skipped.append(Skip(str(child), None, f"not recognised by the {what} reader; left out"))


def read_line_files(
    path: Path,
    name: str,
    what: str,
    detect: Callable[[Path], bool],
    read_file: Callable[[Path, ReadResult], None],
    recursive: bool = False,
) -> ReadResult:
    """A line-format reader's `read`: each file it claims under `path` read into one result, in time order.

    Files it does not claim are listed as skips, and symlinks leading out of `path` are not followed.
    """
    result = ReadResult(format=name)
    files = files_to_read(path, detect, what, result.skipped, recursive=recursive)
    list_unclaimed(path, files, what, result.skipped, recursive=recursive)
    for file in confined(path, files, result.skipped):
        read_file(file, result)
    result.messages.sort(key=lambda message: message.sent_at)
    return result


def text_message_id(conversation: str, moment: datetime, sender: str, text: str, seen: dict[str, int]) -> str:
    """A stable id for a message of a format that has none: conversation, time and a hash of who said what.

    `seen` numbers repeats (the same words from the same person in the same second), so every id is unique
    and a re-read of the same export gives the same ids.
    """
    digest = hashlib.sha1(f"{sender}\n{text}".encode()).hexdigest()[:10]
    base = f"{conversation}:{moment:%Y%m%dT%H%M%S}:{digest}"
    seen[base] = seen.get(base, 0) + 1
    return base if seen[base] == 1 else f"{base}-{seen[base]}"
