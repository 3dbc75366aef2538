"""Fuzz every reader with many damaged inputs; print inputs, failures and the slowest input per MB.

The mutations and seeds are those of the CI fuzz test (tests/readers/mutations.py): truncation,
flipped bytes, garbage lines, shuffled lines, wrong JSON types, empty files, JSON nested
1,000-5,000 deep, lines of 100k-300k spaces / separators / digits, binary garbage. Each input is
written over one file of a staged seed, then `detect` and `read` run under a time bound; any
exception is a failure (a reader must report bad input as skips), and so is running past the bound
(CPU seconds: the time measured is the process's own, whatever the load of the machine).

    nice -n 10 python benchmarks/fuzz_readers.py --n 100000
    python benchmarks/fuzz_readers.py --readers wechat irc --n 2000 --save-failures /tmp/fuzz-failures

`--budget` stops a reader after that many seconds (the inputs actually run are printed).
"""

from __future__ import annotations

import argparse
import contextlib
import random
import sys
import tempfile
import time
import traceback
from dataclasses import dataclass, field
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests" / "readers"))

from mutations import MUTATIONS, InputTookTooLong, RandomDraw, reader_module, seeds, stage, time_bound

from threadkeep.readers import READER_MODULES

# Inputs smaller than this are not ranked per MB: their time is start-up, not reading.
PER_MB_FLOOR = 64 * 1024


@dataclass
class Tally:
    inputs: int = 0
    failures: int = 0
    timeouts: int = 0
    seconds: float = 0.0
    bytes_read: int = 0
    slowest: tuple[float, int, str] = (0.0, 0, "")  # seconds, size, mutation
    worst_per_mb: tuple[float, int, str] = (0.0, 0, "")  # seconds per MB, size, mutation
    kinds: dict[str, tuple[int, str]] = field(default_factory=dict)  # failure -> (count, first traceback)


def _where(error: BaseException) -> str:
    frames = [frame for frame in traceback.extract_tb(error.__traceback__) if "threadkeep" in frame.filename]
    last = frames[-1] if frames else traceback.extract_tb(error.__traceback__)[-1]
    return f"{type(error).__name__} at {Path(last.filename).name}:{last.lineno}"


def fuzz_reader(name: str, n: int, rng: random.Random, bound: float, budget: float | None, save: Path | None) -> Tally:
    module = reader_module(name)
    tally = Tally()
    chosen = seeds(module)
    if not chosen:
        return tally
    draw = RandomDraw(rng)
    with tempfile.TemporaryDirectory(prefix=f"threadkeep-fuzz-{name}-") as work:
        staged = []
        for index, seed in enumerate(chosen):
            place = Path(work) / str(index)
            place.mkdir()
            target, files = stage(seed, place)
            staged.append((target, [(file, file.read_bytes()) for file in files]))
        started = time.perf_counter()
        for _ in range(n):
            if budget is not None and time.perf_counter() - started > budget:
                break
            target, files = draw.choice(staged)
            victim, original = draw.choice(files)
            mutation = draw.choice(sorted(MUTATIONS))
            data = MUTATIONS[mutation](draw, original)
            victim.write_bytes(data)
            size = sum(len(content) for _, content in files) - len(original) + len(data)
            begin = time.process_time()
            try:
                with time_bound(bound):
                    with contextlib.suppress(OSError):
                        module.detect(target)
                    module.read(target)
            except InputTookTooLong as error:
                tally.timeouts += 1
                _record(tally, f"no result within {bound:g} s ({mutation})", error, victim, data, save, name)
            except Exception as error:  # counting every escape is the point of a fuzzer
                tally.failures += 1
                _record(tally, _where(error), error, victim, data, save, name)
            spent = time.process_time() - begin
            victim.write_bytes(original)
            tally.inputs += 1
            tally.seconds += spent
            tally.bytes_read += size
            if spent > tally.slowest[0]:
                tally.slowest = (spent, size, mutation)
            if size >= PER_MB_FLOOR and spent / (size / 1e6) > tally.worst_per_mb[0]:
                tally.worst_per_mb = (spent / (size / 1e6), size, mutation)
    return tally


def _record(
    tally: Tally, kind: str, error: BaseException, victim: Path, data: bytes, save: Path | None, name: str
) -> None:
    count, first = tally.kinds.get(kind, (0, ""))
    if not count:
        first = "".join(traceback.format_exception(error)[-6:])
        if save is not None:
            save.mkdir(parents=True, exist_ok=True)
            (save / f"{name}-{len(tally.kinds)}-{victim.name}").write_bytes(data)
    tally.kinds[kind] = (count + 1, first)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--n", type=int, default=100_000, help="inputs per reader (default 100,000)")
    parser.add_argument("--readers", nargs="*", default=list(READER_MODULES), help="reader names (default: all)")
    parser.add_argument("--seed", type=int, default=17, help="random seed (runs are reproducible per seed)")
    parser.add_argument("--time-bound", type=float, default=10.0, help="seconds one input may take (default 10)")
    parser.add_argument("--budget", type=float, default=None, help="stop each reader after this many seconds")
    parser.add_argument("--save-failures", type=Path, default=None, help="write each new failing input here")
    args = parser.parse_args()
    print(f"{'reader':<14} {'inputs':>8} {'fail':>5} {'slow':>5} {'MB read':>8} {'s/input':>8} "
          f"{'slowest s':>9} {'(KB, mutation)':<26} {'worst s/MB':>10} {'(KB, mutation)'}")
    total_failures = 0
    for name in args.readers:
        tally = fuzz_reader(name, args.n, random.Random(f"{args.seed}:{name}"), args.time_bound, args.budget,
                            args.save_failures)
        total_failures += tally.failures + tally.timeouts
        per_input = tally.seconds / tally.inputs if tally.inputs else 0.0
        slow_s, slow_size, slow_mutation = tally.slowest
        mb_s, mb_size, mb_mutation = tally.worst_per_mb
        print(f"{name:<14} {tally.inputs:>8} {tally.failures:>5} {tally.timeouts:>5} {tally.bytes_read / 1e6:>8.1f} "
              f"{per_input:>8.4f} {slow_s:>9.3f} ({slow_size / 1024:,.0f} KB, {slow_mutation})".ljust(97)
              + f" {mb_s:>10.3f} ({mb_size / 1024:,.0f} KB, {mb_mutation})", flush=True)
        for kind, (count, first) in sorted(tally.kinds.items(), key=lambda item: -item[1][0]):
            print(f"    {count:>6} x {kind}\n" + "".join(f"        {line}\n" for line in first.strip().splitlines()))
    print(f"failures and inputs past the time bound, all readers: {total_failures}")


if __name__ == "__main__":
    main()
