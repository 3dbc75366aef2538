"""One query's embedding on one OpenMP thread against two, taking turns in one process.

    python benchmarks/query_threads.py                 # store_scale.py's questions, 10 rounds of each
    python benchmarks/query_threads.py --rounds 30

Two threads embed store_scale.py's questions in turn, one set to one OpenMP thread
(`threadkeep.embed.one_openmp_thread`, as search does), the other left at the process's
setting (OMP_NUM_THREADS, one per core, passive waiting). Printed per setting: wall and
process CPU per query, p50 / p95, with the load average. Only a quiet machine's wall
times say which is faster: under load two threads wait for two cores.
"""

from __future__ import annotations

import argparse
import os
import time
from concurrent.futures import ThreadPoolExecutor

import numpy as np

from store_scale import QUESTIONS, load_average
from threadkeep.embed import E5Embedder, one_openmp_thread


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--rounds", type=int, default=10, help="times through the questions")
    args = parser.parse_args()
    model = E5Embedder()._model
    single = ThreadPoolExecutor(max_workers=1)
    single.submit(one_openmp_thread).result()
    every = ThreadPoolExecutor(max_workers=1)
    settings = {"1 OpenMP thread": single, f"{os.environ['OMP_NUM_THREADS']} OpenMP threads": every}
    times: dict[str, list[tuple[float, float]]] = {name: [] for name in settings}

    def timed(text: str) -> tuple[float, float]:
        tick, cpu = time.perf_counter(), time.process_time()
        model.query(text)
        return time.perf_counter() - tick, time.process_time() - cpu

    for pool in settings.values():  # warm-up
        pool.submit(timed, QUESTIONS[0]).result()
    for _ in range(args.rounds):
        for question in QUESTIONS:
            for name, pool in settings.items():
                times[name].append(pool.submit(timed, question).result())
    print(f"query embedding, {len(QUESTIONS) * args.rounds} queries each; {os.cpu_count()} cores, {load_average()}")
    for name, pairs in times.items():
        walls, cpus = (1000 * np.array([pair[j] for pair in pairs]) for j in (0, 1))
        print(f"  {name:18s} wall p50 {np.percentile(walls, 50):5.1f} p95 {np.percentile(walls, 95):5.1f} ms  "
              f"CPU p50 {np.percentile(cpus, 50):5.1f} p95 {np.percentile(cpus, 95):5.1f} ms")  # fmt: skip


if __name__ == "__main__":
    main()
