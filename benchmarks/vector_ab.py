"""The embedded store's vector stages against another version of them, query by query in one process.

    git show 9b29b0b:src/threadkeep/store/vectors.py > /tmp/before.py
    nice -n 10 python benchmarks/vector_ab.py /tmp/tk-scale/scale-1000000.db /tmp/before.py --recall
    nice -n 10 python benchmarks/vector_ab.py /tmp/vectors/scale/scale-1000000.db /tmp/before.py \
        --recall --real /tmp/vectors/snap/irc      # a store written by store_scale.py --real

On a machine shared with other jobs, two runs minutes apart see different loads
(wall and even CPU times moved 2-3x between runs here), so a before/after taken
from separate runs measures the load. Here the versions of
`threadkeep/store/vectors.py` (this tree's and each file given) each build
their index in memory from the same store's vectors (versions may differ in
what the file holds), and take turns: each query runs on each in turn. Printed per version: vector
top-10 and top-50 (`dense_candidates`, wall and CPU p50 / p95) and warm hybrid
search with the query embedding (`search`, every query embedded afresh; the
vector is the benchmark's own, as in store_scale.py), with `--recall` recall@10
/ @50 against exact search over the benchmark's vectors (regenerated: 1.5 GB).
"""

from __future__ import annotations

import os

os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")  # as importing threadkeep does (see store_scale.py)

import argparse
import importlib.util
import sys
import time
from pathlib import Path

import numpy as np

from store_scale import QUESTIONS, Data, FixedEmbedder, index_of, load_average, percentiles, synthetic
from threadkeep.embed import E5Embedder
from threadkeep.search import search
from threadkeep.store import SearchFilters, open_store
from threadkeep.store import vectors as current
from threadkeep.store.sqlite import SQLiteStore


def other_version(path: Path):
    name = f"other_vectors_{path.stem}"
    spec = importlib.util.spec_from_file_location(name, path)
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module  # dataclasses look their module up there
    spec.loader.exec_module(module)
    return module


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("db", type=Path, help="a store written by store_scale.py --folder (scale-N.db)")
    parser.add_argument("others", type=Path, nargs="+", help="other versions of vectors.py (named by file)")
    parser.add_argument("--queries", type=int, default=100)
    parser.add_argument("--rounds", type=int, default=60, help="warm hybrid searches per version")
    parser.add_argument("--recall", action="store_true", help="regenerate the benchmark's vectors for recall")
    parser.add_argument("--real", help="the store was written by store_scale.py --real PREFIX: this PREFIX")
    args = parser.parse_args()

    store = open_store(args.db)
    assert isinstance(store, SQLiteStore)
    others = {path.stem: other_version(path) for path in args.others}
    n = int(args.db.stem.rpartition("-")[2])
    if args.real:
        from vector_recall import grown

        passages, queries = np.load(f"{args.real}-passages.npy"), np.load(f"{args.real}-queries.npy")
        half = args.queries // 2
        queries = np.vstack([queries[:half], queries[200 : 200 + args.queries - half]])
        made = grown(passages, n) if args.recall else np.zeros((0, 384), np.float32)
        data = Data(made, np.zeros(len(made)), queries, np.zeros(len(queries)))
    elif args.recall:
        data = synthetic(n, 384, args.queries, seed=7)
    else:  # queries of the same distribution (not the store_scale run's own), no vectors to compare with
        queries = synthetic(1_000, 384, args.queries, seed=7).queries
        data = Data(np.zeros((0, 384), np.float32), np.zeros(0), queries, np.zeros(0))
    queries = data.queries
    exact = queries @ data.vectors.T if len(data.vectors) else None
    index, dim = store._current_vectors()
    versions = {}
    for name, module in [*others.items(), ("this tree", current)]:
        cpu = time.process_time()
        versions[name] = module.VectorIndex(module.build(store._vector_rows("1", (), dim), dim), index.seq)
        print(f"  {name}: index built in memory in {time.process_time() - cpu:.1f} CPU s")
    print(f"{n:,} chunks; {os.cpu_count()} cores, {load_average()}")
    for k in (10, 50):
        walls = {name: [] for name in versions}
        cpus = {name: [] for name in versions}
        recalls = {name: [] for name in versions}
        for q, query in enumerate(queries):
            for name, version in versions.items():
                store._vectors = version
                tick, cpu = time.perf_counter(), time.process_time()
                found = store.dense_candidates(query, k, SearchFilters())
                walls[name].append(time.perf_counter() - tick)
                cpus[name].append(time.process_time() - cpu)
                if exact is not None:
                    truth = set(np.argpartition(-exact[q], k)[:k].tolist())
                    recalls[name].append(len({index_of(chunk_id) for chunk_id, _ in found} & truth) / k)
        for name in versions:
            recall = f"  recall@{k} {np.mean(recalls[name]):.4f}" if recalls[name] else ""
            print(f"  {name:14s} vector top-{k:<3d} {percentiles(walls[name][1:])}  "
                  f"CPU {percentiles(cpus[name][1:])}{recall}  ({load_average()})")  # fmt: skip
    embedder = FixedEmbedder(E5Embedder(), data)
    walls = {name: [] for name in versions}
    cpus = {name: [] for name in versions}
    for i in range(args.rounds + 3):
        for name, version in versions.items():
            store._vectors = version
            tick, cpu = time.perf_counter(), time.process_time()
            search(store, embedder, QUESTIONS[i % len(QUESTIONS)], k=10)
            if i >= 3:
                walls[name].append(time.perf_counter() - tick)
                cpus[name].append(time.process_time() - cpu)
    for name in versions:
        print(f"  {name:14s} warm hybrid search {percentiles(walls[name])}  CPU {percentiles(cpus[name])}  "
              f"(query embedding included; {load_average()})")  # fmt: skip
    store._vectors = None
    store.close()


if __name__ == "__main__":
    main()
