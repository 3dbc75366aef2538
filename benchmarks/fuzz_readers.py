"""Fuzz every reader with many damaged inputs; print inputs, failures and the slowest input per MB.

The mutations and seeds are those of the CI fuzz test (tests/readers/mutations.py): truncation,
flipped bytes, garbage lines, shuffled lines, wrong JSON types, empty files, binary garbage, and
the costly hostile classes, JSON nested 1,000-5,000 deep and lines of 100k-300k spaces /
separators / digits. Cheap mutations make most of the count; the hostile classes are a fixed
share of it (`--hostile-share`, 6 % by default, so thousands per reader at 100k inputs). Each
input is written over one file of a staged seed, then `detect` and `read` run under a bound on
CPU time; any exception is a failure (a reader must report bad input as skips), and so is
running past the bound. Times are the process's own CPU seconds, whatever the load.

Each reader's inputs run in chunks, one chunk at a time in a pool of one worker process (a
fresh process per chunk: what one chunk leaks cannot slow the next); with `--results FILE`
every finished chunk is appended to FILE and `--resume` counts the inputs already there and runs
only what is missing (the reader with the fewest inputs first), so a long run can be stopped and
continued; `--n 0 --resume` only prints the table of FILE.

    nice -n 19 python benchmarks/fuzz_readers.py --n 100000 --results /tmp/fuzz.jsonl --resume
    python benchmarks/fuzz_readers.py --readers wechat irc --n 2000 --save-failures /tmp/fuzz-failures
"""

from __future__ import annotations

import argparse
import contextlib
import json
import multiprocessing
import random
import sys
import tempfile
import time
import traceback
from dataclasses import asdict, dataclass, field
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests" / "readers"))

from mutations import MUTATIONS, InputTookTooLong, RandomDraw, reader_module, seeds, stage, time_bound

from threadkeep.readers import READER_MODULES

# Inputs smaller than this are not ranked per MB: their time is start-up, not reading.
PER_MB_FLOOR = 64 * 1024
HOSTILE = ("deep_nesting", "long_line")
# Prefer memory over disk for the thousands of rewrites per second.
SCRATCH = Path("/dev/shm") if Path("/dev/shm").is_dir() else None


@dataclass
class Tally:
    inputs: int = 0
    failures: int = 0
    timeouts: int = 0
    seconds: float = 0.0
    bytes_read: int = 0
    by_mutation: dict[str, int] = field(default_factory=dict)
    slowest: tuple[float, int, str] = (0.0, 0, "")  # seconds, size, mutation
    worst_per_mb: tuple[float, int, str] = (0.0, 0, "")  # seconds per MB, size, mutation
    kinds: dict[str, tuple[int, str]] = field(default_factory=dict)  # failure -> (count, first traceback)

    def add(self, other: Tally) -> None:
        self.inputs += other.inputs
        self.failures += other.failures
        self.timeouts += other.timeouts
        self.seconds += other.seconds
        self.bytes_read += other.bytes_read
        for mutation, count in other.by_mutation.items():
            self.by_mutation[mutation] = self.by_mutation.get(mutation, 0) + count
        self.slowest = max(self.slowest, tuple(other.slowest))
        self.worst_per_mb = max(self.worst_per_mb, tuple(other.worst_per_mb))
        for kind, (count, first) in other.kinds.items():
            self.kinds[kind] = (self.kinds.get(kind, (0, first))[0] + count, self.kinds.get(kind, (0, first))[1])


def _where(error: BaseException) -> str:
    frames = [frame for frame in traceback.extract_tb(error.__traceback__) if "threadkeep" in frame.filename]
    last = frames[-1] if frames else traceback.extract_tb(error.__traceback__)[-1]
    return f"{type(error).__name__} at {Path(last.filename).name}:{last.lineno}"


def _mutation_picker(draw: RandomDraw, hostile_share: float):
    cheap = sorted(set(MUTATIONS) - set(HOSTILE))

    def pick() -> str:
        if draw.rng.random() < hostile_share:
            return draw.choice(HOSTILE)
        return draw.choice(cheap)

    return pick


def fuzz_chunk(name: str, n: int, seed: str, bound: float, hostile_share: float, save: str | None) -> Tally:
    module = reader_module(name)
    tally = Tally()
    chosen = seeds(module)
    if not chosen:
        return tally
    draw = RandomDraw(random.Random(seed))
    pick = _mutation_picker(draw, hostile_share)
    with tempfile.TemporaryDirectory(prefix=f"threadkeep-fuzz-{name}-", dir=SCRATCH) as work:
        staged = []
        for index, chosen_seed in enumerate(chosen):
            place = Path(work) / str(index)
            place.mkdir()
            target, files = stage(chosen_seed, place)
            staged.append((target, [(file, file.read_bytes()) for file in files]))
        for _ in range(n):
            target, files = draw.choice(staged)
            victim, original = draw.choice(files)
            mutation = pick()
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
            tally.by_mutation[mutation] = tally.by_mutation.get(mutation, 0) + 1
            tally.seconds += spent
            tally.bytes_read += size
            if spent > tally.slowest[0]:
                tally.slowest = (spent, size, mutation)
            if size >= PER_MB_FLOOR and spent / (size / 1e6) > tally.worst_per_mb[0]:
                tally.worst_per_mb = (spent / (size / 1e6), size, mutation)
    return tally


def _record(
    tally: Tally, kind: str, error: BaseException, victim: Path, data: bytes, save: str | None, name: str
) -> None:
    count, first = tally.kinds.get(kind, (0, ""))
    if not count:
        first = "".join(traceback.format_exception(error)[-6:])
        if save is not None:
            folder = Path(save)
            folder.mkdir(parents=True, exist_ok=True)
            (folder / f"{name}-{time.time_ns()}-{victim.name}").write_bytes(data)
    tally.kinds[kind] = (count + 1, first)


def _load(results: Path | None) -> dict[str, Tally]:
    """Finished chunks by id ("reader:size:index")."""
    done: dict[str, Tally] = {}
    if results is None or not results.exists():
        return done
    for line in results.read_text(encoding="utf-8").splitlines():
        row = json.loads(line)
        tally = Tally(**row["tally"])
        tally.slowest, tally.worst_per_mb = tuple(tally.slowest), tuple(tally.worst_per_mb)
        tally.kinds = {kind: tuple(value) for kind, value in tally.kinds.items()}
        done[row["chunk"]] = tally
    return done


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--n", type=int, default=100_000, help="inputs per reader (default 100,000)")
    parser.add_argument("--readers", nargs="*", default=list(READER_MODULES), help="reader names (default: all)")
    parser.add_argument("--seed", type=int, default=17, help="random seed (runs are reproducible per seed)")
    parser.add_argument("--time-bound", type=float, default=10.0, help="CPU seconds one input may take (default 10)")
    parser.add_argument(
        "--hostile-share",
        type=float,
        default=0.06,
        help="share of inputs that are deep nesting or 100k+ lines (default 0.06)",
    )
    parser.add_argument("--chunk", type=int, default=10_000, help="inputs per chunk (default 10,000)")
    parser.add_argument("--results", type=Path, default=None, help="append each finished chunk here (JSON lines)")
    parser.add_argument(
        "--resume", action="store_true", help="count the chunks already in --results and run only what is missing"
    )
    parser.add_argument("--save-failures", type=Path, default=None, help="write each new failing input here")
    args = parser.parse_args()
    done = _load(args.results) if args.resume else {}
    save = str(args.save_failures) if args.save_failures else None
    totals: dict[str, Tally] = {name: Tally() for name in args.readers}
    for chunk, tally in done.items():
        if chunk.split(":")[0] in totals:
            totals[chunk.split(":")[0]].add(tally)
    context = multiprocessing.get_context("fork")
    started = time.perf_counter()
    with context.Pool(1, maxtasksperchild=1) as pool:
        # The reader with the fewest inputs goes next: a run stopped early has covered every reader
        # alike. Each chunk has its own seed, so chunks of earlier runs add distinct inputs.
        barren: set[str] = set()  # readers without a seed: nothing to damage
        while short := [name for name in args.readers if totals[name].inputs < args.n and name not in barren]:
            name = min(short, key=lambda reader: totals[reader].inputs)
            index = 0
            while f"{name}:{args.chunk}:{index}" in done:
                index += 1
            chunk = f"{name}:{args.chunk}:{index}"
            size = min(args.chunk, args.n - totals[name].inputs)
            tally = pool.apply(
                fuzz_chunk, (name, size, f"{args.seed}:{chunk}", args.time_bound, args.hostile_share, save)
            )
            done[chunk] = tally
            if args.results is not None:
                with args.results.open("a", encoding="utf-8") as sink:
                    sink.write(json.dumps({"chunk": chunk, "tally": asdict(tally)}) + "\n")
            print(
                f"  {chunk}: {tally.inputs} inputs, {tally.failures} failures, {tally.timeouts} past the "
                f"bound, {tally.seconds:.0f} CPU s ({time.perf_counter() - started:.0f} s elapsed)",
                file=sys.stderr,
                flush=True,
            )
            totals[name].add(tally)
            if not tally.inputs:
                barren.add(name)
    _report(totals, args)


def _report(totals: dict[str, Tally], args: argparse.Namespace) -> None:
    print(
        f"| reader | inputs | hostile | failures | past {args.time_bound:g} s | MB read | CPU ms/input | "
        "slowest s (KB, mutation) | worst s/MB (KB, mutation) |"
    )
    print("|---|---|---|---|---|---|---|---|---|")
    total_failures = 0
    for name, tally in totals.items():
        total_failures += tally.failures + tally.timeouts
        per_input = 1000 * tally.seconds / tally.inputs if tally.inputs else 0.0
        hostile = sum(tally.by_mutation.get(mutation, 0) for mutation in HOSTILE)
        slow_s, slow_size, slow_mutation = tally.slowest
        mb_s, mb_size, mb_mutation = tally.worst_per_mb
        print(
            f"| {name} | {tally.inputs:,} | {hostile:,} | {tally.failures} | {tally.timeouts} | "
            f"{tally.bytes_read / 1e6:,.0f} | {per_input:.2f} | {slow_s:.3f} ({slow_size / 1024:,.0f} KB, "
            f"{slow_mutation}) | {mb_s:.3f} ({mb_size / 1024:,.0f} KB, {mb_mutation}) |"
        )
    for name, tally in totals.items():
        for kind, (count, first) in sorted(tally.kinds.items(), key=lambda item: -item[1][0]):
            print(f"{name}: {count} x {kind}\n" + "".join(f"    {line}\n" for line in first.strip().splitlines()))
    print(f"failures and inputs past the time bound, all readers: {total_failures}")


if __name__ == "__main__":
    main()
