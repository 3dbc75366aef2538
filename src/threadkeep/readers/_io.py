"""Decoding and line-reading helpers shared by the readers.

Exports come from every kind of machine: UTF-8 with or without a BOM, UTF-16
from Windows tools, GBK from Chinese Windows. Decoding never fails; what could
not be decoded exactly is reported as a `Skip`.
"""

from __future__ import annotations

import codecs
import json
from collections.abc import Iterator
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from threadkeep.model import Skip

MAX_LINE_CHARS = 5_000_000


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


def read_text(path: Path) -> tuple[str, list[Skip]]:
    return decode(path.read_bytes(), str(path))


def iter_json_lines(path: Path) -> Iterator[tuple[int, Any] | Skip]:
    """Yield (line number, parsed object) per line, or a `Skip` for a bad line."""
    text, problems = read_text(path)
    yield from problems
    for number, line in enumerate(text.splitlines(), start=1):
        if not line.strip():
            continue
        if len(line) > MAX_LINE_CHARS:
            yield Skip(str(path), number, f"line of {len(line):,} characters is longer than {MAX_LINE_CHARS:,}")
            continue
        try:
            yield number, json.loads(line)
        except json.JSONDecodeError as error:
            yield Skip(str(path), number, f"not valid JSON ({error.msg} at column {error.colno})")
        except RecursionError:
            yield Skip(str(path), number, "JSON nested too deeply to read")


def load_json(path: Path) -> tuple[Any, list[Skip]]:
    """Parse a whole JSON file; on failure return None and say where it broke."""
    text, problems = read_text(path)
    if not text.strip():
        return None, [*problems, Skip(str(path), None, "file is empty")]
    try:
        return json.loads(text), problems
    except json.JSONDecodeError as error:
        return None, [*problems, Skip(str(path), error.lineno, f"not valid JSON ({error.msg} at column {error.colno})")]
    except RecursionError:
        return None, [*problems, Skip(str(path), None, "JSON nested too deeply to read")]


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
