"""Where a warm hybrid search's time goes, stage by stage, on a store written by store_scale.py.

    nice -n 15 python benchmarks/query_stages.py /tmp/vectors/scale/scale-1000000.db --real /tmp/vectors/snap/irc
    python benchmarks/query_stages.py DB --real PREFIX --rounds 200 --query-threads 2   # the model on both cores

Each search is `threadkeep.search.search` as store_scale.py's "warm hybrid" runs it (its questions, every
query embedded afresh, the benchmark's own query vectors), with the stages' functions wrapped by timers:
the query embedding, the vector file's stages (weighted Hamming scan, the histogram cut, the signed-bit
score, int8), the exact re-score in SQLite, full text (term plan, match, ids) and fetching the hits'
chunks; "other" is the rest of `search` (fusion, time decay, diversity). Printed per stage: wall and this
process's CPU time per search, p50 / p95 and mean, with the load average. Wall time under load is mostly
waiting for a core; CPU time is what a change moves.
"""

from __future__ import annotations

import os

os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")  # as importing threadkeep does (see store_scale.py)

import argparse
import time
from collections import defaultdict
from collections.abc import Callable
from concurrent.futures import Future
from pathlib import Path

import numpy as np

from store_scale import QUESTIONS, Data, FixedEmbedder, load_average
from threadkeep import search as search_module
from threadkeep.embed import E5Embedder
from threadkeep.store import open_store, vectors
from threadkeep.store import sqlite as sqlite_module
from threadkeep.store.sqlite import SQLiteStore

# Per search: stage -> [wall, CPU of the calling thread, CPU of the process] seconds, summed over the
# stage's calls in that search. The process's CPU counts every thread (the model's OpenMP threads, and
# whatever runs beside the stage: with the query embedded on a thread of its own, full text).
SPENT: dict[str, list[float]] = defaultdict(lambda: [0.0, 0.0, 0.0])


def timed(name: str, function: Callable) -> Callable:
    def wrapper(*args, **kwargs):
        tick, cpu, process = time.perf_counter(), time.thread_time(), time.process_time()
        try:
            return function(*args, **kwargs)
        finally:
            spent = SPENT[name]
            spent[0] += time.perf_counter() - tick
            spent[1] += time.thread_time() - cpu
            spent[2] += time.process_time() - process

    return wrapper


def wrap(owner: object, attribute: str, name: str) -> None:
    setattr(owner, attribute, timed(name, getattr(owner, attribute)))


def queries_of(real: str | None, count: int) -> np.ndarray:
    if real:
        queries = np.load(f"{real}-queries.npy")
        half = count // 2
        return np.vstack([queries[:half], queries[200 : 200 + count - half]])
    from store_scale import synthetic

    return synthetic(1_000, 384, count, seed=7).queries


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("db", type=Path, help="a store written by store_scale.py --folder (scale-N.db)")
    parser.add_argument("--real", help="the store was written by store_scale.py --real PREFIX: this PREFIX")
    parser.add_argument("--queries", type=int, default=100)
    parser.add_argument("--rounds", type=int, default=100)
    parser.add_argument("--profile", type=Path, help="also write a cProfile of the searches here")
    parser.add_argument(
        "--query-threads", type=int, choices=(1, 2), default=1,
        help="OpenMP threads embedding the query on its own thread (1, what search does; 2: both cores)",
    )  # fmt: skip
    args = parser.parse_args()
    if args.query_threads == 2 and hasattr(search_module, "one_openmp_thread"):
        search_module.one_openmp_thread = lambda: None

    store = open_store(args.db)
    assert isinstance(store, SQLiteStore)
    queries = queries_of(args.real, args.queries)
    embedder = FixedEmbedder(E5Embedder(), Data(np.zeros((0, 384), np.float32), np.zeros(0), queries, np.zeros(0)))
    # The stages, outermost first; each inner one's time is also in its outer one's.
    wrap(embedder.model._model, "query", "embedding")
    wrap(store, "dense_candidates", "dense")
    wrap(vectors.VectorIndex, "candidates", "dense: vector file")
    wrap(vectors, "hamming", "dense: file: weighted Hamming")
    wrap(vectors, "_nearest", "dense: file: histogram cut")
    wrap(vectors, "sign_scores", "dense: file: signed bits")
    wrap(store, "lexical_candidates", "full text")
    wrap(sqlite_module, "plan_terms", "full text: term plan")
    wrap(store, "get_chunks", "chunks of the hits")
    if hasattr(search_module, "_QUERIES"):  # the query embedded beside full text
        submit = search_module._QUERIES.submit

        def submitted(*args, **kwargs) -> Future:
            future = submit(*args, **kwargs)
            future.result = timed("waiting for the embedding", future.result)
            return future

        search_module._QUERIES.submit = submitted
    search = timed("search", search_module.search)
    for i in range(3):  # warm-up: the file mapped, the pages read
        search(store, embedder, QUESTIONS[i % len(QUESTIONS)], k=10)
    per_search: dict[str, list[tuple[float, ...]]] = defaultdict(list)
    profile = None
    if args.profile:
        import cProfile

        profile = cProfile.Profile()
        profile.enable()
    for i in range(args.rounds):
        SPENT.clear()
        search(store, embedder, QUESTIONS[i % len(QUESTIONS)], k=10)
        for name, spent in SPENT.items():
            per_search[name].append(tuple(spent))
    if profile:
        profile.disable()
        profile.dump_stats(args.profile)
    dense, in_file = per_search["dense"], per_search["dense: vector file"]
    per_search["dense: exact re-score in SQLite"] = [
        tuple(d[j] - f[j] for j in range(3)) for d, f in zip(dense, in_file, strict=True)
    ]
    stages = [name for name in per_search if name != "search"]
    # The embedding may run beside the other stages, on a thread of its own: then "other" is the search
    # less the stages on the search's thread, waiting for the vector included.
    outer = [name for name in stages if ":" not in name and name != "embedding"]
    per_search["other (fusion, decay, diversity)"] = []
    here = outer if hasattr(search_module, "_QUERIES") else [*outer, "embedding"]
    for i, total in enumerate(per_search["search"]):
        per_search["other (fusion, decay, diversity)"].append(
            tuple(total[j] - sum(per_search[name][i][j] for name in here if per_search[name]) for j in range(3))
        )
    print(f"{len(store._vectors.segment):,} chunks in the vector file, {args.rounds} searches; "
          f"{os.cpu_count()} cores, {load_average()}; ms per search, p50 / p95 (mean)")  # fmt: skip
    print(f"  {'stage':40s} {'wall':>24s} {'CPU, its thread':>24s} {'CPU, process':>24s}")
    for name in ["search", *stages, "other (fusion, decay, diversity)"]:
        columns = (1000 * np.array([spent[j] for spent in per_search[name]]) for j in range(3))
        figures = [f"{np.percentile(x, 50):6.2f} / {np.percentile(x, 95):6.2f} ({x.mean():6.2f})" for x in columns]
        print(f"  {name:40s} " + " ".join(f"{figure:>24s}" for figure in figures))
    store.close()


if __name__ == "__main__":
    main()
