"""Seeds and mutations for fuzzing the readers; shared by tests/readers/test_fuzz.py (hypothesis,
a few dozen inputs per reader) and benchmarks/fuzz_readers.py (random, 100k+ inputs per reader).

A mutation takes a `Draw` (where its choices come from) and a file's bytes, and returns new
bytes: truncation, flipped bytes, garbage lines, shuffled or repeated lines, JSON values of the
wrong type, an empty file, JSON nested 1,000-5,000 deep, lines of 100k+ spaces / separators /
digits, and binary garbage.
"""

from __future__ import annotations

import contextlib
import copy
import functools
import importlib
import json
import random
import shutil
import signal
from collections.abc import Callable, Iterator, Sequence
from pathlib import Path
from types import ModuleType
from typing import Any, Protocol, TypeVar

from threadkeep.readers._io import decode

ROOT = Path(__file__).resolve().parents[2]
FIXTURES = ROOT / "tests" / "fixtures"
SAMPLES = ROOT / "src" / "threadkeep" / "samples"
MAX_SEED_BYTES = 256 * 1024
MAX_FILE_SEEDS = 3

T = TypeVar("T")

WRONG_VALUES: list[Any] = [None, 0, -1, 1e308, True, "", "x", "2025-13-45T99:99:99Z", [], {}, [1, "a"], {"a": None}]
GARBAGE_LINES: list[bytes] = [
    b"",
    b"{",
    b"[]",
    b"null",
    b'{"type": 5}',
    b'{"type": "user", "message": []}',
    b'{"timestamp": {}, "type": "response_item", "payload": "x"}',
    b'{"$rewindTo": []}',
    b'{"$set": {"messages": 5}}',
    b">",
    b"> > >",
    b"\x00\xff\xfe",
    "乱码\ufffd".encode(),
    b"12/31/99, 25:61 - : ",
    b"[99:99] <> ",
    "甲 2023/09/16 2:51 PM".encode(),
]
# What long lines are made of: the runs that make backtracking patterns quadratic.
FILLERS: list[str] = [" ", "\t", ",", ", ", "-", "0", "9", ":", "/", ".", "<", "@", "[", "{", '"', "\\", "a", "甲"]
FILLERS.append("\u200e")  # the mark WhatsApp puts before system lines
LONG_LINE_CHARS = (100_000, 300_000)
NESTING_DEPTH = (1_000, 5_000)


class Draw(Protocol):
    def integer(self, low: int, high: int) -> int: ...
    def choice(self, options: Sequence[T]) -> T: ...
    def binary(self, low: int, high: int) -> bytes: ...


class RandomDraw:
    """Choices from a seeded `random.Random` (the benchmark: fast, reproducible by seed)."""

    def __init__(self, rng: random.Random) -> None:
        self.rng = rng

    def integer(self, low: int, high: int) -> int:
        return self.rng.randint(low, high)

    def choice(self, options: Sequence[T]) -> T:
        return options[self.rng.randrange(len(options))]

    def binary(self, low: int, high: int) -> bytes:
        return self.rng.randbytes(self.rng.randint(low, high))


# --- mutations ------------------------------------------------------------------------------------


def truncate(draw: Draw, raw: bytes) -> bytes:
    return raw[: draw.integer(0, max(len(raw) - 1, 0))]


def flip(draw: Draw, raw: bytes) -> bytes:
    if not raw:
        return raw
    out = bytearray(raw)
    for _ in range(draw.integer(1, 8)):
        out[draw.integer(0, len(out) - 1)] ^= draw.integer(1, 255)
    return bytes(out)


def garbage(draw: Draw, raw: bytes) -> bytes:
    lines = raw.split(b"\n")
    for _ in range(draw.integer(1, 4)):
        line = draw.choice(GARBAGE_LINES) if draw.integer(0, 1) else draw.binary(0, 40)
        lines.insert(draw.integer(0, len(lines)), line)
    return b"\n".join(lines)


def reorder(draw: Draw, raw: bytes) -> bytes:
    lines = raw.split(b"\n")
    if len(lines) > 1:
        for _ in range(draw.integer(1, len(lines))):
            a, b = draw.integer(0, len(lines) - 1), draw.integer(0, len(lines) - 1)
            lines[a], lines[b] = lines[b], lines[a]
        lines += lines[: draw.integer(0, 3)]
    return b"\n".join(lines)


@functools.lru_cache(maxsize=64)
def _json_shape(raw: bytes) -> tuple[tuple[str, ...], bool, tuple[tuple[int, tuple], ...]] | None:
    """The seed's JSON texts, whether it is JSON lines, and every (document, path) in it; None if not JSON.

    Cached: the same seeds are damaged over and over, and walking a document is the slow part.
    """
    text, _ = decode(raw, "seed")
    try:
        texts, jsonl = (text,), False
        documents = [json.loads(text)]
    except (json.JSONDecodeError, RecursionError):
        try:
            texts, jsonl = tuple(line for line in text.splitlines() if line.strip()), True
            documents = [json.loads(line) for line in texts]
        except (json.JSONDecodeError, RecursionError):
            return None
    targets = tuple((index, path) for index, document in enumerate(documents) for path in _paths(document))
    return texts, jsonl, targets


def _json_documents(raw: bytes) -> tuple[list[Any], bool, tuple[tuple[int, tuple], ...]] | None:
    """Fresh (mutable) JSON documents of the seed, whether it is JSON lines, and their paths; None if not JSON."""
    shape = _json_shape(raw)
    if shape is None:
        return None
    texts, jsonl, targets = shape
    return [json.loads(text) for text in texts], jsonl, targets


def _paths(value: Any, path: tuple = ()) -> list[tuple]:
    found = [path] if path else []
    if isinstance(value, dict):
        for key, item in value.items():
            found.extend(_paths(item, (*path, key)))
    elif isinstance(value, list):
        for index, item in enumerate(value):
            found.extend(_paths(item, (*path, index)))
    return found


def _replace(value: Any, path: tuple, new: Any) -> None:
    for step in path[:-1]:
        value = value[step]
    value[path[-1]] = new


def _dump(documents: list[Any], jsonl: bool) -> str:
    if jsonl:
        return "\n".join(json.dumps(document, ensure_ascii=False) for document in documents)
    return json.dumps(documents[0], ensure_ascii=False)


def wrong_types(draw: Draw, raw: bytes) -> bytes:
    parsed = _json_documents(raw)
    if not parsed or not parsed[2]:
        return flip(draw, raw)
    documents, jsonl, targets = parsed
    for _ in range(draw.integer(1, 6)):
        index, path = draw.choice(targets)
        with contextlib.suppress(KeyError, IndexError, TypeError):  # an earlier replacement removed this path
            _replace(documents[index], path, copy.deepcopy(draw.choice(WRONG_VALUES)))
    return _dump(documents, jsonl).encode()


def empty(draw: Draw, raw: bytes) -> bytes:
    return b""


def _nested(draw: Draw) -> str:
    depth = draw.integer(*NESTING_DEPTH)
    shape = draw.integer(0, 3)
    if shape == 0:
        return "[" * depth + "]" * depth
    if shape == 1:
        return '{"a":' * depth + "1" + "}" * depth
    if shape == 2:
        return '[{"text":' * depth + '"x"' + "}]" * depth
    return "[" * depth  # never closed: nested and cut short


def deep_nesting(draw: Draw, raw: bytes) -> bytes:
    """A value nested 1,000-5,000 deep: in place of a JSON value, or as a line of its own."""
    nested = _nested(draw)
    parsed = _json_documents(raw)
    if parsed and parsed[2] and draw.integer(0, 3):
        documents, jsonl, targets = parsed
        index, path = draw.choice(targets)
        sentinel = "\u2063deep\u2063"
        _replace(documents[index], path, sentinel)
        return _dump(documents, jsonl).replace(json.dumps(sentinel, ensure_ascii=False), nested, 1).encode()
    lines = raw.split(b"\n")
    lines.insert(draw.integer(0, len(lines)), nested.encode())
    return b"\n".join(lines)


def long_line(draw: Draw, raw: bytes) -> bytes:
    """100k-300k characters of one filler: a new line, inside an existing line, or the whole file."""
    filler = draw.choice(FILLERS)
    run = (filler * (draw.integer(*LONG_LINE_CHARS) // len(filler) + 1)).encode()
    lines = raw.split(b"\n")
    where = draw.integer(0, 2)
    if where == 0 or not raw:
        lines.insert(draw.integer(0, len(lines)), run)
    elif where == 1:
        index = draw.integer(0, len(lines) - 1)
        line = lines[index]
        cut = draw.integer(0, len(line))
        lines[index] = line[:cut] + run + line[cut:]
    else:
        return run
    return b"\n".join(lines)


def binary_garbage(draw: Draw, raw: bytes) -> bytes:
    """Random bytes inserted somewhere, or in place of the whole file."""
    if draw.integer(0, 3) == 0:
        return draw.binary(1, 65_536)
    at = draw.integer(0, len(raw))
    return raw[:at] + draw.binary(1, 4_096) + raw[at:]


MUTATIONS: dict[str, Callable[[Draw, bytes], bytes]] = {
    "truncate": truncate,
    "flip": flip,
    "garbage": garbage,
    "reorder": reorder,
    "wrong_types": wrong_types,
    "empty": empty,
    "deep_nesting": deep_nesting,
    "long_line": long_line,
    "binary_garbage": binary_garbage,
}


# --- seeds and staging ----------------------------------------------------------------------------


def reader_module(name: str) -> ModuleType:
    return importlib.import_module(f"threadkeep.readers.{name}")


def accepts(module: ModuleType, path: Path) -> bool:
    try:
        return bool(module.detect(path))
    except OSError:
        return False


def _is_clean(module: ModuleType, path: Path) -> bool:
    result = module.read(path)
    return bool(result.messages) and not result.skipped


def _small_files(folder: Path) -> list[Path]:
    if not folder.is_dir():
        return []
    return sorted(p for p in folder.rglob("*") if p.is_file() and p.stat().st_size <= MAX_SEED_BYTES)


def seeds(module: ModuleType) -> list[Path]:
    """Valid inputs to damage: the reader's fixtures under tests/fixtures/<NAME>/, else any it accepts."""
    own = FIXTURES / module.NAME
    files = [p for p in _small_files(own) if accepts(module, p)]
    if not files:
        files = [p for folder in (FIXTURES, SAMPLES) for p in _small_files(folder) if accepts(module, p)]
    # Damage clean inputs first: a seed that already fails to parse tests little.
    files.sort(key=lambda p: not _is_clean(module, p))
    chosen = files[:MAX_FILE_SEEDS]
    folders = sorted(p for p in own.rglob("*") if p.is_dir()) if own.is_dir() else []
    folder = next((p for p in [own, *folders] if own.is_dir() and accepts(module, p)), None)
    if folder is not None and sum(f.stat().st_size for f in _small_files(folder)) <= 4 * MAX_SEED_BYTES:
        chosen.append(folder)
    return chosen


def stage(seed: Path, work: Path) -> tuple[Path, list[Path]]:
    """Copy a seed (with its sibling files, which some formats need) into `work`: what to read, what to damage."""
    if seed.is_dir():
        target = work / seed.name
        shutil.copytree(seed, target)
        return target, sorted(p for p in target.rglob("*") if p.is_file())
    folder = work / "seed"
    folder.mkdir()
    for sibling in seed.parent.iterdir():
        if sibling.is_file() and sibling.stat().st_size <= MAX_SEED_BYTES:
            shutil.copy(sibling, folder / sibling.name)
    return folder / seed.name, [folder / seed.name]


# --- the time bound -------------------------------------------------------------------------------


class InputTookTooLong(Exception):
    """One fuzzed input ran past its time bound: a reader that is not linear, or one that hangs."""


@contextlib.contextmanager
def time_bound(seconds: float) -> Iterator[None]:
    """Raise `InputTookTooLong` in the block after `seconds` of this process's CPU time.

    CPU time, not wall time: on a loaded machine a linear reader waits for a core, and that
    must not count against it. (Main thread only; the regex engine checks for signals.)
    """

    def expire(signum: int, frame: object) -> None:
        raise InputTookTooLong(f"no result after {seconds:g} s of CPU time")

    previous = signal.signal(signal.SIGPROF, expire)
    signal.setitimer(signal.ITIMER_PROF, seconds)
    try:
        yield
    finally:
        signal.setitimer(signal.ITIMER_PROF, 0)
        signal.signal(signal.SIGPROF, previous)
