"""Ingest throughput: searchable (text and full text stored) and with vectors, against pure embedding.

    python benchmarks/ingest_throughput.py                          # LoCoMo, the real model, both layouts
    python benchmarks/ingest_throughput.py --conversation conv-30 --layouts 2x1
    python benchmarks/ingest_throughput.py --bundle ../shared/bench/irc/train/bundle --free
    python benchmarks/ingest_throughput.py --text-only              # searchable step only, several corpora

For each layout of the model (`1x2`: one process of two threads; `2x1`: two worker processes of
one thread each) on a fresh SQLite store:

- searchable: `ingest` without waiting (read, threads, chunks, messages, full-text index, commit);
- vectors: the embedding step after it (`fill_vectors`), and ingest + vectors together;
- pure embedding: the same inputs through the same layout with no store at all, and ingest with
  vectors divided by it (1.0 would be a pipeline that costs nothing besides the model).

Wall seconds and CPU seconds (this process and its workers) for each, and the machine's load
average when each layout ran: the machine may be shared, so CPU seconds are the steadier figure.
`--free` replaces the model by one that costs nothing (the pipeline's own speed, large bundles).

`--text-only` times the searchable step alone (no vectors, the real model's tokenizer for chunk
windows) on several corpora, LoCoMo conv-30 and all of LoCoMo, Ubuntu IRC dev (12,500 messages),
the `zh-crosswoz-mix` dev chats and the shipped sample, and prints messages per CPU second.
"""

from __future__ import annotations

import argparse
import os
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

from small_groups import shared_bench
from threadkeep.backfill import CLAIM_SIZE, EmbeddingPool, fill_vectors
from threadkeep.embed import get_embedder
from threadkeep.ingest import ingest_result
from threadkeep.model import ReadResult
from threadkeep.readers import read_path
from threadkeep.store import open_store

SHARED = shared_bench()
BUNDLE = SHARED / "locomo" / "bundle"


class FreeEmbedder:
    name = "free-8"
    dim = 8
    max_tokens = 512

    def embed_passages(self, texts):
        return np.tile(np.eye(1, self.dim, dtype=np.float32), (len(texts), 1))

    def embed_query(self, text):
        return np.eye(1, self.dim, dtype=np.float32)[0]

    def count_tokens(self, text):
        return len(text) // 2


class Clock:
    """Wall and CPU seconds (this process and the workers it has reaped) since it started."""

    def __init__(self) -> None:
        self.wall, self.cpu = time.perf_counter(), self._cpu()

    @staticmethod
    def _cpu() -> float:
        own, children = resource.getrusage(resource.RUSAGE_SELF), resource.getrusage(resource.RUSAGE_CHILDREN)
        return own.ru_utime + own.ru_stime + children.ru_utime + children.ru_stime

    def read(self) -> tuple[float, float]:
        return time.perf_counter() - self.wall, self._cpu() - self.cpu


def limited(result: ReadResult, limit: int) -> ReadResult:
    """Whole conversations, in the order they first appear, until they hold `limit` messages or more."""
    sizes: dict[str, int] = {}
    for message in result.messages:
        sizes[message.conversation] = sizes.get(message.conversation, 0) + 1
    keep: set[str] = set()
    count = 0
    for ref, size in sizes.items():
        if count >= limit:
            break
        keep.add(ref)
        count += size
    return ReadResult(
        result.format,
        [c for c in result.conversations if c.ref in keep],
        [m for m in result.messages if m.conversation in keep],
        result.skipped,
    )


def run_layout(result: ReadResult, embedder, processes: int) -> dict:
    with tempfile.TemporaryDirectory() as folder:
        store = open_store(Path(folder) / "bench.db")
        load = os.getloadavg()[0]
        clock = Clock()
        report = ingest_result(store, result, embedder)
        searchable = clock.read()
        clock = Clock()
        filled = fill_vectors(store, embedder, processes=processes)
        vectors = clock.read()
        found = store.db.execute("SELECT DISTINCT embedding_input FROM chunks WHERE embedding_input <> ''")
        inputs = [text for (text,) in found]
        store.close()
    clock = Clock()
    pool = EmbeddingPool(embedder, processes) if processes > 1 else None
    try:
        for start in range(0, len(inputs), CLAIM_SIZE):
            (pool or embedder).embed_passages(inputs[start : start + CLAIM_SIZE])
    finally:
        if pool is not None:
            pool.close()
    pure = clock.read()
    return {
        "load": (load + os.getloadavg()[0]) / 2,
        "searchable": searchable,
        "vectors": vectors,
        "pure": pure,
        "chunks": report.chunks,
        "embedded": filled.embedded,
    }


def row(layout: str, messages: int, figures: dict) -> str:
    (s_wall, s_cpu), (v_wall, v_cpu), (p_wall, p_cpu) = figures["searchable"], figures["vectors"], figures["pure"]
    return (
        f"| {layout} | {figures['load']:.1f} | {messages / s_wall:,.0f} ({s_wall:.1f} s) | {s_cpu:.1f} "
        f"| {v_wall:.1f} | {v_cpu:.1f} | {messages / (s_wall + v_wall):,.1f} | {s_cpu + v_cpu:.1f} "
        f"| {p_wall:.1f} | {p_cpu:.1f} | {(s_wall + v_wall) / p_wall:.2f} / {(s_cpu + v_cpu) / max(p_cpu, 1e-9):.2f} "
        f"| {figures['chunks']:,} / {figures['embedded']:,} |"
    )


TEXT_CORPORA: tuple[tuple[str, Path, str | None], ...] = (
    ("locomo conv-30", BUNDLE, "conv-30"),
    ("locomo", BUNDLE, None),
    ("irc-dev", SHARED / "irc" / "dev" / "bundle", None),
    ("zh-mix-dev", SHARED / "zh-crosswoz-mix" / "dev" / "bundle", None),
    ("sample", Path(__file__).resolve().parents[1] / "src" / "threadkeep" / "samples" / "support_group", None),
)


def text_only(repeat: int) -> None:
    """The searchable step on each corpus, each run in a fresh process (no cache warmed by an earlier
    run): the best of `repeat` runs, CPU seconds of the process that ran it."""
    print(f"{os.cpu_count()} cores; CPU seconds of the process (the step only: reading excluded), best of {repeat}")
    print("| corpus | messages | chunks | load | searchable CPU-s | msg/cpu-s | wall s |")
    print("|---|---|---|---|---|---|---|")
    for name, bundle, _ in TEXT_CORPORA:
        if not bundle.exists():
            continue
        runs = []
        for _ in range(repeat):
            command = [sys.executable, __file__, "--text-child", name]
            found = subprocess.run(command, check=True, capture_output=True, text=True).stdout.split()
            runs.append((float(found[2]), float(found[3]), float(found[4]), int(found[0]), int(found[1])))
        cpu, wall, _, messages, chunks = min(runs)
        load = sum(run[2] for run in runs) / len(runs)
        print(
            f"| {name} | {messages:,} | {chunks:,} | {load:.1f} | {cpu:.2f} | {messages / cpu:,.0f} | {wall:.1f} |",
            flush=True,
        )


def text_child(name: str) -> None:
    """One timed searchable step: prints messages, chunks, CPU seconds, wall seconds, load."""
    _, bundle, conversation = next(corpus for corpus in TEXT_CORPORA if corpus[0] == name)
    result = read_path(bundle)
    if conversation:
        result = ReadResult(
            result.format,
            [c for c in result.conversations if c.ref == conversation],
            [m for m in result.messages if m.conversation == conversation],
            result.skipped,
        )
    embedder = get_embedder()
    embedder.count_tokens("")  # the tokenizer loads before the clock starts
    with tempfile.TemporaryDirectory() as folder:
        store = open_store(Path(folder) / "bench.db")
        load = os.getloadavg()[0]
        wall, cpu = time.perf_counter(), time.process_time()
        report = ingest_result(store, result, embedder)
        cpu, wall = time.process_time() - cpu, time.perf_counter() - wall
        store.close()
    print(len(result.messages), report.chunks, cpu, wall, (load + os.getloadavg()[0]) / 2)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--bundle", type=Path, default=BUNDLE)
    parser.add_argument("--free", action="store_true", help="a model that costs nothing: the pipeline alone")
    parser.add_argument("--limit", type=int, default=0, help="only the first N messages (whole conversations)")
    parser.add_argument("--conversation", help="only this conversation (e.g. conv-30, LoCoMo's smallest)")
    parser.add_argument("--layouts", nargs="+", default=["1x2", "2x1"], choices=["1x1", "1x2", "2x1"])
    parser.add_argument("--text-only", action="store_true", help="the searchable step alone, several corpora")
    parser.add_argument("--repeat", type=int, default=3, help="runs per corpus with --text-only (the best counts)")
    parser.add_argument("--child", help=argparse.SUPPRESS)
    parser.add_argument("--text-child", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.text_only:
        text_only(args.repeat)
        return
    if args.text_child:
        text_child(args.text_child)
        return

    started = time.perf_counter()
    result = read_path(args.bundle)
    read_seconds = time.perf_counter() - started
    if args.conversation:
        result = ReadResult(
            result.format,
            [c for c in result.conversations if c.ref == args.conversation],
            [m for m in result.messages if m.conversation == args.conversation],
            result.skipped,
        )
    if args.limit:
        result = limited(result, args.limit)
    messages = len(result.messages)
    if args.child:
        processes = int(args.child.split("x")[0])
        embedder = FreeEmbedder() if args.free else get_embedder()
        print(row(args.child, messages, run_layout(result, embedder, processes)), flush=True)
        return
    print(f"bundle {args.bundle}: {messages:,} messages used, read in {read_seconds:.1f} s; {os.cpu_count()} cores")
    print(
        "| layout | load | searchable msg/s (wall) | CPU-s | vectors wall s | CPU-s | ingest + vectors msg/s | CPU-s "
        "| pure embedding wall s | CPU-s | (ingest + vectors) / pure, wall / CPU | chunks / embedded |"
    )
    print("|---|---|---|---|---|---|---|---|---|---|---|---|")
    for layout in ["1x1"] if args.free else args.layouts:
        threads = layout.split("x")[1]
        # Each layout in a process of its own: the engine reads OMP_NUM_THREADS once, when it loads.
        command = [sys.executable, __file__, "--bundle", str(args.bundle), "--limit", str(args.limit)]
        command += ["--conversation", args.conversation] if args.conversation else []
        command += ["--child", layout, *(["--free"] if args.free else [])]
        subprocess.run(command, env={**os.environ, "OMP_NUM_THREADS": threads}, check=True)


if __name__ == "__main__":
    main()
