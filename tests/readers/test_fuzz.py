"""Every registered reader survives damaged input: it reports, it does not raise, and it finishes.

Each reader gets valid seeds (its fixtures under tests/fixtures/<NAME>/, else any fixture or
shipped sample its `detect` accepts), which hypothesis then damages with the mutations of
`mutations.py`: truncation, flipped bytes, garbage lines, shuffled or repeated lines, JSON values
of the wrong type, JSON nested 1,000-5,000 deep, lines of 100k+ spaces / separators / digits, and
binary garbage. Each input has a bound on its CPU time: far above what a linear reader needs, far below what
a quadratic one takes on such lines. benchmarks/fuzz_readers.py runs the same mutations on many
more inputs and measures the time per MB.
"""

from __future__ import annotations

import random
import tempfile
from collections.abc import Sequence
from pathlib import Path
from typing import TypeVar

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from mutations import MUTATIONS, RandomDraw, accepts, reader_module, seeds, stage, time_bound

from threadkeep.documents import is_document
from threadkeep.model import ReadResult
from threadkeep.readers import READER_MODULES, read_path

EXAMPLES = 30
# CPU seconds one input may take. A linear reader needs well under one on these inputs (<1 MB);
# a quadratic pattern takes minutes on a 100k-character run of spaces.
TIME_BOUND = 20.0
T = TypeVar("T")


class HypothesisDraw:
    """Choices drawn from hypothesis, so a failure shrinks to a small, labelled example."""

    def __init__(self, data: st.DataObject) -> None:
        self.data = data

    def integer(self, low: int, high: int) -> int:
        return self.data.draw(st.integers(low, high))

    def choice(self, options: Sequence[T]) -> T:
        return self.data.draw(st.sampled_from(options))

    def binary(self, low: int, high: int) -> bytes:
        # Large random blobs come from a seed, not byte by byte: hypothesis caps what it generates.
        size = self.data.draw(st.integers(low, high))
        rng = self.data.draw(st.randoms(use_true_random=False))
        return rng.randbytes(size)


def _check(module, target: Path) -> None:
    with time_bound(TIME_BOUND):
        accepts(module, target)
        result = module.read(target)
    assert isinstance(result, ReadResult)
    assert all(message.sent_at.tzinfo is not None for message in result.messages)


@pytest.mark.parametrize("name", READER_MODULES)
def test_reader_survives_damaged_input(name: str) -> None:
    module = reader_module(name)
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
            target, files = stage(seed, Path(work))
            victim = data.draw(st.sampled_from(files), label="file")
            mutation = data.draw(st.sampled_from(sorted(MUTATIONS)), label="mutation")
            victim.write_bytes(MUTATIONS[mutation](HypothesisDraw(data), victim.read_bytes()))
            _check(module, target)

    damaged()


@pytest.mark.parametrize("mutation", ["deep_nesting", "long_line", "binary_garbage"])
def test_every_reader_meets_each_hostile_mutation(mutation: str) -> None:
    """Each new mutation class on every reader at least once, whatever hypothesis happens to draw above."""
    for name in READER_MODULES:
        module = reader_module(name)
        for seed in seeds(module)[:1]:
            with tempfile.TemporaryDirectory(prefix="threadkeep-fuzz-") as work:
                target, files = stage(seed, Path(work))
                draw = RandomDraw(random.Random(f"{name}:{mutation}"))
                files[0].write_bytes(MUTATIONS[mutation](draw, files[0].read_bytes()))
                _check(module, target)


def test_the_folder_walk_survives_damaged_folders() -> None:
    """The walk (detection and dispatch for every file) never raises on a damaged mixed folder."""
    all_seeds = [seed for name in READER_MODULES for seed in seeds(reader_module(name))[:1]]

    @settings(max_examples=EXAMPLES, deadline=None, database=None, suppress_health_check=list(HealthCheck))
    @given(data=st.data())
    def damaged(data: st.DataObject) -> None:
        picked = data.draw(st.lists(st.sampled_from(all_seeds), min_size=1, max_size=3, unique=True), label="seeds")
        with tempfile.TemporaryDirectory(prefix="threadkeep-fuzz-") as work:
            victims: list[Path] = []
            for index, seed in enumerate(picked):
                place = Path(work) / str(index)
                place.mkdir()
                victims.extend(stage(seed, place)[1])
            victim = data.draw(st.sampled_from(victims), label="file")
            mutation = data.draw(st.sampled_from(sorted(MUTATIONS)), label="mutation")
            victim.write_bytes(MUTATIONS[mutation](HypothesisDraw(data), victim.read_bytes()))
            with time_bound(TIME_BOUND):
                result = read_path(work, is_document=is_document)
        assert isinstance(result, ReadResult)
        assert all(Path(skip.file).is_relative_to(work) for skip in [*result.skipped, *result.not_read])

    damaged()


@pytest.mark.parametrize("name", READER_MODULES)
def test_reader_survives_nothing_useful(name: str, tmp_path: Path) -> None:
    module = reader_module(name)
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
