"""Every registered reader survives damaged input: it reports, it does not raise.

Each reader gets valid seeds (its fixtures under tests/fixtures/<NAME>/, else any
fixture or shipped sample its `detect` accepts), which hypothesis then damages:
truncation, flipped bytes, garbage lines, shuffled or repeated lines, and JSON
values swapped for values of the wrong type.
"""

from __future__ import annotations

import copy
import importlib
import json
import shutil
import tempfile
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from threadkeep.model import ReadResult
from threadkeep.readers import READER_MODULES
from threadkeep.readers._io import decode

ROOT = Path(__file__).resolve().parents[2]
FIXTURES = ROOT / "tests" / "fixtures"
SAMPLES = ROOT / "src" / "threadkeep" / "samples"
MAX_SEED_BYTES = 256 * 1024
MAX_FILE_SEEDS = 3
EXAMPLES = 30

WRONG_VALUES: list[Any] = [None, 0, -1, 1e308, True, "", "x", "2025-13-45T99:99:99Z", [], {}, [1, "a"], {"a": None}]
GARBAGE_LINES: list[bytes] = [
    b"",
    b"{",
    b"[]",
    b"null",
    b'{"type": 5}',
    b'{"type": "user", "message": []}',
    b'{"timestamp": {}, "type": "response_item", "payload": "x"}',
    b">",
    b"> > >",
    b"\x00\xff\xfe",
    "乱码\ufffd".encode(),
    b"12/31/99, 25:61 - : ",
    b"[99:99] <> ",
]


def _module(name: str) -> ModuleType:
    return importlib.import_module(f"threadkeep.readers.{name}")


def _accepts(module: ModuleType, path: Path) -> bool:
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
    own = FIXTURES / module.NAME
    files = [p for p in _small_files(own) if _accepts(module, p)]
    if not files:
        # No fixtures of its own yet: anything valid it recognises will do (shipped samples, say).
        files = [p for folder in (FIXTURES, SAMPLES) for p in _small_files(folder) if _accepts(module, p)]
    # Damage clean inputs first: a seed that already fails to parse tests little.
    files.sort(key=lambda p: not _is_clean(module, p))
    chosen = files[:MAX_FILE_SEEDS]
    folders = sorted(p for p in own.rglob("*") if p.is_dir()) if own.is_dir() else []
    folder = next((p for p in [own, *folders] if own.is_dir() and _accepts(module, p)), None)
    if folder is not None and sum(f.stat().st_size for f in _small_files(folder)) <= 4 * MAX_SEED_BYTES:
        chosen.append(folder)
    return chosen


def _stage(seed: Path, work: Path) -> tuple[Path, list[Path]]:
    """Copy a seed (with its sibling files, which some formats need) and say what to read and damage."""
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


def _truncate(data: st.DataObject, raw: bytes) -> bytes:
    return raw[: data.draw(st.integers(0, max(len(raw) - 1, 0)), label="cut")]


def _flip(data: st.DataObject, raw: bytes) -> bytes:
    if not raw:
        return raw
    out = bytearray(raw)
    for _ in range(data.draw(st.integers(1, 8), label="flips")):
        position = data.draw(st.integers(0, len(out) - 1), label="at")
        out[position] ^= data.draw(st.integers(1, 255), label="mask")
    return bytes(out)


def _garbage(data: st.DataObject, raw: bytes) -> bytes:
    lines = raw.split(b"\n")
    for _ in range(data.draw(st.integers(1, 4), label="inserts")):
        line = data.draw(st.sampled_from(GARBAGE_LINES) | st.binary(max_size=40), label="garbage")
        lines.insert(data.draw(st.integers(0, len(lines)), label="where"), line)
    return b"\n".join(lines)


def _reorder(data: st.DataObject, raw: bytes) -> bytes:
    lines = raw.split(b"\n")
    if len(lines) > 1:
        lines = data.draw(st.permutations(lines), label="order")
        lines += lines[: data.draw(st.integers(0, 3), label="repeat")]
    return b"\n".join(lines)


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


def _wrong_types(data: st.DataObject, raw: bytes) -> bytes:
    text, _ = decode(raw, "seed")
    try:
        documents = [json.loads(text)]
        jsonl = False
    except json.JSONDecodeError:
        try:
            documents = [json.loads(line) for line in text.splitlines() if line.strip()]
        except json.JSONDecodeError:
            return _flip(data, raw)
        jsonl = True
    targets = [(index, path) for index, document in enumerate(documents) for path in _paths(document)]
    if not targets:
        return _flip(data, raw)
    for _ in range(data.draw(st.integers(1, 6), label="replacements")):
        index, path = data.draw(st.sampled_from(targets), label="target")
        try:
            value = copy.deepcopy(data.draw(st.sampled_from(WRONG_VALUES), label="value"))
            _replace(documents[index], path, value)
        except (KeyError, IndexError, TypeError):
            continue  # an earlier replacement removed this path
    if jsonl:
        return "\n".join(json.dumps(document, ensure_ascii=False) for document in documents).encode()
    return json.dumps(documents[0], ensure_ascii=False).encode()


MUTATIONS = [_truncate, _flip, _garbage, _reorder, _wrong_types, lambda data, raw: b""]


@pytest.mark.parametrize("name", READER_MODULES)
def test_reader_survives_damaged_input(name: str) -> None:
    module = _module(name)
    chosen = seeds(module)
    if not chosen:
        pytest.skip(f"no fixture under tests/fixtures/{name}/ that {name}.detect accepts")

    @settings(
        max_examples=EXAMPLES,
        deadline=None,
        database=None,
        suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
    )
    @given(data=st.data())
    def damaged(data: st.DataObject) -> None:
        seed = data.draw(st.sampled_from(chosen), label="seed")
        with tempfile.TemporaryDirectory(prefix="threadkeep-fuzz-") as work:
            target, files = _stage(seed, Path(work))
            victim = data.draw(st.sampled_from(files), label="file")
            mutate = data.draw(st.sampled_from(MUTATIONS), label="mutation")
            victim.write_bytes(mutate(data, victim.read_bytes()))
            result = module.read(target)
        assert isinstance(result, ReadResult)
        assert all(message.sent_at.tzinfo is not None for message in result.messages)

    damaged()


@pytest.mark.parametrize("name", READER_MODULES)
def test_reader_survives_nothing_useful(name: str, tmp_path: Path) -> None:
    module = _module(name)
    empty_file = tmp_path / "conversations.json"
    empty_file.write_bytes(b"")
    binary = tmp_path / "messages.jsonl"
    binary.write_bytes(bytes(range(256)) * 4)
    empty_folder = tmp_path / "empty"
    empty_folder.mkdir()
    for path in (empty_file, binary, empty_folder, tmp_path):
        try:
            result = module.read(path)
        except OSError:
            # A path the reader does not claim may be refused with a clear I/O error; one it claims may not.
            assert not module.detect(path)
            continue
        assert isinstance(result, ReadResult)
