"""Ingest throughput and peak memory on the IRC train bundle (220k messages).

    python benchmarks/ingest_throughput.py                      # without embedding, whole bundle
    python benchmarks/ingest_throughput.py --embed --limit 3000 # with the real model, first 3,000 messages

"Without embedding" runs every stage (read, threads, chunks, SQLite writes, full-text
index) with an embedder that costs nothing, so the figure is the pipeline's own speed;
"with embedding" uses the default model on CPU. Each run uses a fresh store file.
"""

from __future__ import annotations

import argparse
import resource
import tempfile
import time
from pathlib import Path

import numpy as np

from threadkeep.embed import get_embedder
from threadkeep.ingest import ingest_result
from threadkeep.model import ReadResult
from threadkeep.readers import read_path
from threadkeep.store import open_store

BUNDLE = Path(__file__).resolve().parents[2] / "shared" / "bench" / "irc" / "train" / "bundle"


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


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--bundle", type=Path, default=BUNDLE)
    parser.add_argument("--embed", action="store_true", help="embed with the default model")
    parser.add_argument("--limit", type=int, default=0, help="only the first N messages (whole conversations)")
    args = parser.parse_args()

    started = time.perf_counter()
    result = read_path(args.bundle)
    read_seconds = time.perf_counter() - started
    if args.limit:
        keep: set[str] = set()
        count = 0
        for message in result.messages:
            if message.conversation not in keep:
                if count >= args.limit:
                    continue
                keep.add(message.conversation)
            count += 1
        result = ReadResult(
            result.format,
            [c for c in result.conversations if c.ref in keep],
            [m for m in result.messages if m.conversation in keep],
            result.skipped,
        )
    embedder = get_embedder() if args.embed else FreeEmbedder()
    with tempfile.TemporaryDirectory() as folder:
        store = open_store(Path(folder) / "bench.db")
        started = time.perf_counter()
        report = ingest_result(store, result, embedder)
        ingest_seconds = time.perf_counter() - started
        size = (Path(folder) / "bench.db").stat().st_size + sum(
            p.stat().st_size for p in Path(folder).glob("bench.db-*")
        )
        store.close()
    peak_mib = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    messages = len(result.messages)
    print(f"bundle {args.bundle} ({'embedding with ' + embedder.name if args.embed else 'without embedding'})")
    print(f"read      {messages:,} messages in {read_seconds:.1f} s")
    print(
        f"ingest    {messages / ingest_seconds:,.0f} messages/s ({ingest_seconds:.1f} s): "
        f"{report.threads:,} threads, {report.chunks:,} chunks, {report.embedded:,} embedded"
    )
    print(f"store     {size / 2**20:,.1f} MiB on disk; peak RSS {peak_mib:,.0f} MiB")


if __name__ == "__main__":
    main()
