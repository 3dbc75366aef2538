"""Query-embedding latency with the model's OpenMP threads waiting passively or spinning, idle and under load.

    python benchmarks/embed_load.py [--queries 20] [--load 0 1 2]

Each setting runs in a fresh process (libgomp reads OMP_WAIT_POLICY once, when the engine loads).
"Load" is that many extra processes spinning on the CPU for the duration, like a browser or a second job.
Prints p50 / p95 per query and the machine's load average at the time.
"""

from __future__ import annotations

import argparse
import json
import multiprocessing
import os
import subprocess
import sys
import time

QUESTIONS = [
    "what is the gate code",
    "点图标没反应怎么办",
    "how do I restore an iPhone backup",
    "E1024 when syncing",
    "which version fixed the login crash",
]


def measure(queries: int) -> dict:
    from threadkeep.embed import get_embedder

    embedder = get_embedder("e5-small")
    embedder.embed_query("warm up")
    times = []
    for i in range(queries):
        start = time.perf_counter()
        embedder.embed_query(f"{QUESTIONS[i % len(QUESTIONS)]} {i}")
        times.append(time.perf_counter() - start)
    times.sort()
    return {"p50_ms": 1000 * times[len(times) // 2], "p95_ms": 1000 * times[int(len(times) * 0.95) - 1]}


def spin(seconds: float) -> None:
    end = time.monotonic() + seconds
    while time.monotonic() < end:
        pass


def run_setting(policy: str, load: int, queries: int) -> dict:
    env = {**os.environ, "OMP_WAIT_POLICY": policy}
    spinners = [multiprocessing.Process(target=spin, args=(600.0,), daemon=True) for _ in range(load)]
    for process in spinners:
        process.start()
    try:
        output = subprocess.run(
            [sys.executable, __file__, "--child", str(queries)], env=env, capture_output=True, text=True, check=True
        ).stdout
    finally:
        for process in spinners:
            process.terminate()
            process.join()
    return json.loads(output)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--queries", type=int, default=20)
    parser.add_argument("--load", type=int, nargs="+", default=[0, 1, 2])
    parser.add_argument("--child", type=int, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child is not None:
        print(json.dumps(measure(args.child)))
        return
    print(f"cores {os.cpu_count()}, load average before {os.getloadavg()[0]:.2f}")
    print(f"{'OMP_WAIT_POLICY':<16} {'extra load':>10} {'p50 ms':>8} {'p95 ms':>8} {'loadavg':>8}")
    for load in args.load:
        for policy in ("PASSIVE", "ACTIVE"):
            figures = run_setting(policy, load, args.queries)
            p50, p95 = figures["p50_ms"], figures["p95_ms"]
            print(f"{policy:<16} {load:>10} {p50:>8.1f} {p95:>8.1f} {os.getloadavg()[0]:>8.2f}")


if __name__ == "__main__":
    main()
