"""pgvector HNSW and IVFFlat settings swept on a bare table: recall@10 against exact search, latency, build time, size.

    python benchmarks/pg_hnsw.py --diagnose --real PREFIX              # how hard the vector sets are
    THREADKEEP_TEST_POSTGRES=postgresql://postgres@127.0.0.1:5433/postgres nice -n 15 \\
        python benchmarks/pg_hnsw.py --real PREFIX --n 100000 --m 16 32 --ef-construction 64 128 \\
        --ef-search 40 100 200 400 --halfvec --rerank 40 100
    ... python benchmarks/pg_hnsw.py --real PREFIX --n 1000000 --ivfflat-only --ivfflat-lists 1000 --probes 10 20 40

Vector sets (`--set`): `grown` is what `store_scale.py --real PREFIX` stores (vector_recall.py's
`grown`: noisy copies of the real e5 passages in PREFIX-passages.npy), `clusters` its synthetic
2,000-cluster vectors; queries are the real e5 queries (100 IRC lines, 100 LoCoMo questions) for
`grown` and fresh cluster points for `clusters`. Each set is kept in a table `hnsw_<set>_<n>`
(id, vector(384)), loaded by COPY once and reused; each index is built, measured and dropped.

Queries have the shape of `PostgresStore.dense_candidates` without a filter: `ORDER BY embedding <=>
q LIMIT k` served by the graph, with `hnsw.ef_search` set. With `--halfvec` the graph is built over
`embedding::halfvec(384)` (half the size) and the query takes the `--rerank` nearest by half
precision, then orders those by the full vectors. `--ivfflat-lists` builds IVFFlat indexes instead
(or as well), queried with `ivfflat.probes` set to each of `--probes`. Per setting: recall@10 (mean over the queries),
wall p50 / p95 (client, one round trip each) and the backend's CPU p50 / p95
(/proc/PID/schedstat), after one warm-up pass over the same queries.

`--diagnose` prints, without PostgreSQL, what decides how hard a set is for a graph: for each query
the similarity of its 1st, 10th and 100th nearest vectors and the mean (relative contrast), the
local intrinsic dimensionality (maximum-likelihood estimate from its 100 nearest), and for `grown`
how the noise compares with the distances between real passages.
"""

from __future__ import annotations

import os

os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")

import argparse
import time
from pathlib import Path

import numpy as np

ADMIN_URL = os.environ.get("THREADKEEP_TEST_POSTGRES", "postgresql://postgres@127.0.0.1:5432/postgres")
DIM = 384


def vector_set(name: str, n: int, prefix: str | None) -> tuple[np.ndarray, np.ndarray]:
    """(vectors, queries) of the named set, as store_scale.py makes them."""
    from store_scale import synthetic

    if name == "clusters":
        data = synthetic(n, DIM, 200, seed=7)
        return data.vectors, data.queries
    from vector_recall import grown

    passages, queries = np.load(f"{prefix}-passages.npy"), np.load(f"{prefix}-queries.npy")
    queries = np.vstack([queries[:100], queries[200:300]]).astype(np.float32)
    if name == "real":
        return passages[:n].astype(np.float32), queries
    return grown(passages, n), queries


def exact_top(vectors: np.ndarray, queries: np.ndarray, k: int) -> tuple[np.ndarray, np.ndarray]:
    """(indexes, similarities) of each query's exact top k, best first, in blocks of the vectors."""
    scores_kept = np.full((len(queries), 0), -np.inf, np.float32)
    kept = np.zeros((len(queries), 0), np.int64)
    for start in range(0, len(vectors), 200_000):
        block = queries @ vectors[start : start + 200_000].T
        scores = np.hstack([scores_kept, block])
        index = np.hstack([kept, np.broadcast_to(np.arange(start, start + block.shape[1]), block.shape)])
        keep = np.argpartition(-scores, k - 1, axis=1)[:, :k]
        scores_kept, kept = np.take_along_axis(scores, keep, 1), np.take_along_axis(index, keep, 1)
    order = np.argsort(-scores_kept, axis=1)
    return np.take_along_axis(kept, order, 1), np.take_along_axis(scores_kept, order, 1)


def lid(similarities: np.ndarray) -> np.ndarray:
    """Maximum-likelihood local intrinsic dimensionality per query from its k nearest (Levina-Bickel),
    on Euclidean distances of unit vectors."""
    distances = np.sqrt(np.maximum(2 - 2 * similarities, 1e-12))
    return -1 / np.mean(np.log(distances[:, :-1] / distances[:, -1:]), axis=1)


def diagnose(prefix: str, sizes: list[int]) -> None:
    passages = np.load(f"{prefix}-passages.npy").astype(np.float32)
    sample = passages[:2_000]
    nearest_real = np.sort(sample @ passages.T, axis=1)[:, -2]
    print(f"{len(passages):,} real passages: similarity of a passage to its nearest other passage "
          f"p10 / p50 / p90 {np.percentile(nearest_real, [10, 50, 90]).round(3).tolist()}")  # fmt: skip
    # One parent's copies (the first 2,000 passages, 2 copies each) as `grown` makes them.
    from vector_recall import grown

    copies = grown(passages, 2 * len(passages))  # copy i is of passage i % len
    first, second = copies[:2_000], copies[len(passages) : len(passages) + 2_000]
    to_parent = np.einsum("ij,ij->i", first, sample)
    between = np.einsum("ij,ij->i", first, second)
    print(
        f"grown: a copy's similarity to its own passage p50 {np.median(to_parent):.3f}, to another copy of it "
        f"p50 {np.median(between):.3f}; a passage's copies are as far from it as its nearest other passage"
    )
    sets = [("real", len(passages))] + [(name, n) for n in sizes for name in ("grown", "clusters")]
    print(
        "set, n | sim. of 1st / 10th / 11th / 100th nearest (median over queries) | 10th - 11th gap | "
        "relative contrast (mean dist / 10th dist) | LID@100 median"
    )
    for name, n in sets:
        vectors, chosen = vector_set(name, n, prefix)
        _, sims = exact_top(vectors, chosen, 100)
        mean = np.mean(np.sqrt(np.maximum(2 - 2 * (chosen @ vectors[:: max(1, n // 20_000)].T), 0)), axis=1)
        contrast = mean / np.sqrt(np.maximum(2 - 2 * sims[:, 9], 1e-12))
        line = " / ".join(f"{np.median(sims[:, i]):.3f}" for i in (0, 9, 10, 99))
        print(f"{name:9s} {n:>9,} | {line} | {np.median(sims[:, 9] - sims[:, 10]):.4f} | "
              f"{np.median(contrast):.3f} | {np.median(lid(sims)):.1f}", flush=True)  # fmt: skip
        if name == "grown":
            top, _ = exact_top(vectors, chosen, 10)
            parents = np.median([len(set((row % len(passages)).tolist())) for row in top])
            print(f"{'':19s} distinct passages among a query's exact top 10: median {parents:.0f}")


def connect(url: str):
    import psycopg

    return psycopg.connect(url, autocommit=True)


def literal(vector: np.ndarray) -> str:
    return "[" + ",".join(f"{x:.7g}" for x in vector) + "]"


def ensure_table(db, table: str, vectors: np.ndarray) -> None:
    held = db.execute("SELECT to_regclass(%s) IS NOT NULL", (table,)).fetchone()[0]
    if held and db.execute(f"SELECT count(*) FROM {table}").fetchone()[0] == len(vectors):
        return
    db.execute(f"DROP TABLE IF EXISTS {table}")
    db.execute(f"CREATE TABLE {table} (id integer PRIMARY KEY, embedding vector({DIM}))")
    db.execute(f"ALTER TABLE {table} ALTER COLUMN embedding SET STORAGE PLAIN")  # in the row, as the store keeps it
    tick = time.perf_counter()
    with db.cursor().copy(f"COPY {table} (id, embedding) FROM STDIN") as copy:
        for i, vector in enumerate(vectors):
            copy.write_row((i, literal(vector)))
    db.execute(f"VACUUM ANALYZE {table}")
    print(f"  loaded {table} in {time.perf_counter() - tick:.0f} s", flush=True)


class Timer:
    def __init__(self, db) -> None:
        self.path = Path(f"/proc/{db.info.backend_pid}/schedstat")

    def server(self) -> float:
        return int(self.path.read_text().split()[0]) / 1e9 if self.path.exists() else 0.0


def run_queries(db, statement: str, queries: list[str], k: int) -> tuple[list[list[int]], list[float], list[float]]:
    timer, found, walls, servers = Timer(db), [], [], []
    for query in queries:
        before, tick = timer.server(), time.perf_counter()
        rows = db.execute(statement, (query, query, k) if statement.count("%s") == 3 else (query, k)).fetchall()
        walls.append(time.perf_counter() - tick)
        servers.append(timer.server() - before)
        found.append([row[0] for row in rows])
    return found, walls, servers


def ms(values: list[float]) -> str:
    return f"{1000 * np.percentile(values, 50):6.2f} / {1000 * np.percentile(values, 95):6.2f}"


def measure(db, table: str, build: tuple[str, str], runs: list[tuple[str, str, str]], texts, truth, args) -> None:
    """Build one index (`build`: its USING clause and a label), then each run's setting and query."""
    clause, label = build
    db.execute(f"DROP INDEX IF EXISTS {table}_ann")
    db.execute(f"SET maintenance_work_mem = '{args.memory}'")
    tick = time.perf_counter()
    db.execute(f"CREATE INDEX {table}_ann ON {table} {clause}")
    took = time.perf_counter() - tick
    size = db.execute(f"SELECT pg_relation_size('{table}_ann')").fetchone()[0]
    print(f"{label}: build {took:.0f} s, index {size / 1e6:,.0f} MB (load {os.getloadavg()[0]:.1f})", flush=True)
    for what, setting, statement in runs:
        db.execute(setting)
        run_queries(db, statement, texts, args.k)  # warm-up
        found, walls, servers = run_queries(db, statement, texts, args.k)
        recall = np.mean([len(set(f) & set(t.tolist())) / args.k for f, t in zip(found, truth, strict=True)])
        print(f"  {what:26s} recall@{args.k} {recall:.3f}  wall {ms(walls)} ms  server CPU "
              f"{ms(servers)} ms  (load {os.getloadavg()[0]:.1f})", flush=True)  # fmt: skip
    if not args.keep_index:
        db.execute(f"DROP INDEX IF EXISTS {table}_ann")


def sweep(args) -> None:
    url_base = ADMIN_URL.rsplit("/", 1)[0]
    with connect(ADMIN_URL) as admin:
        if admin.execute("SELECT 1 FROM pg_database WHERE datname = 'tk_hnsw'").fetchone() is None:
            admin.execute("CREATE DATABASE tk_hnsw")
    db = connect(f"{url_base}/tk_hnsw")
    db.execute("CREATE EXTENSION IF NOT EXISTS vector")
    vectors, queries = vector_set(args.set, args.n, args.real)
    truth, _ = exact_top(vectors, queries, args.k)
    table = f"hnsw_{args.set}_{args.n}"
    ensure_table(db, table, vectors)
    texts = [literal(q) for q in queries]
    settings = dict(db.execute("SELECT name, setting FROM pg_settings WHERE name IN ('shared_buffers', "
                               "'maintenance_work_mem', 'max_parallel_maintenance_workers')").fetchall())  # fmt: skip
    print(
        f"{args.set} {args.n:,}, {len(queries)} queries, k {args.k}; server {settings}; load {os.getloadavg()[0]:.1f}",
        flush=True,
    )
    plain = f"SELECT id FROM {table} ORDER BY embedding <=> %s::vector LIMIT %s"
    kinds = (["halfvec"] if args.halfvec else []) + ([] if args.halfvec_only or args.ivfflat_only else ["vector"])
    for kind in kinds:
        for m in args.m:
            for efc in args.ef_construction:
                column, ops = (
                    (f"(embedding::halfvec({DIM}))", "halfvec_cosine_ops") if kind == "halfvec"
                    else ("(embedding)", "vector_cosine_ops")
                )  # fmt: skip
                build = (f"USING hnsw ({column} {ops}) WITH (m = {m}, ef_construction = {efc})",
                         f"{kind} m {m} ef_construction {efc}")  # fmt: skip
                runs = []
                for ef in args.ef_search:
                    for rerank in args.rerank if kind == "halfvec" else [args.k]:
                        statement = plain
                        if kind == "halfvec":
                            statement = (
                                f"SELECT id FROM (SELECT id, embedding FROM {table} ORDER BY "
                                f"embedding::halfvec({DIM}) <=> %s::halfvec({DIM}) LIMIT {rerank}) c "
                                "ORDER BY embedding <=> %s::vector LIMIT %s"
                            )
                        what = f"ef_search {ef:4d}" + (f" rerank {rerank:4d}" if kind == "halfvec" else "")
                        runs.append((what, f"SET hnsw.ef_search = {ef}", statement))
                measure(db, table, build, runs, texts, truth, args)
    for lists in args.ivfflat_lists:
        build = (f"USING ivfflat (embedding vector_cosine_ops) WITH (lists = {lists})", f"ivfflat lists {lists}")
        runs = [(f"probes {probes:4d}", f"SET ivfflat.probes = {probes}", plain) for probes in args.probes]
        measure(db, table, build, runs, texts, truth, args)
    db.close()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--real", help="PREFIX of vector_recall.py's PREFIX-passages.npy / PREFIX-queries.npy")
    parser.add_argument("--set", choices=["grown", "clusters", "real"], default="grown")
    parser.add_argument("--n", type=int, default=100_000)
    parser.add_argument("--k", type=int, default=10)
    parser.add_argument("--m", type=int, nargs="+", default=[16])
    parser.add_argument("--ef-construction", type=int, nargs="+", default=[64])
    parser.add_argument("--ef-search", type=int, nargs="+", default=[40, 100, 200, 400])
    parser.add_argument("--halfvec", action="store_true", help="also the halfvec index")
    parser.add_argument("--halfvec-only", action="store_true", help="only the halfvec index")
    parser.add_argument("--rerank", type=int, nargs="+", default=[10, 40, 100], help="halfvec candidates re-ranked")
    parser.add_argument("--ivfflat-lists", type=int, nargs="*", default=[], help="also IVFFlat indexes of these lists")
    parser.add_argument("--probes", type=int, nargs="+", default=[10, 20, 40], help="ivfflat.probes tried")
    parser.add_argument("--ivfflat-only", action="store_true", help="no HNSW index")
    parser.add_argument("--memory", default="2GB", help="maintenance_work_mem for the build")
    parser.add_argument("--keep-index", action="store_true")
    parser.add_argument("--diagnose", action="store_true")
    parser.add_argument("--sizes", type=int, nargs="+", default=[100_000, 1_000_000], help="with --diagnose")
    args = parser.parse_args()
    if args.diagnose:
        diagnose(args.real, args.sizes)
    else:
        sweep(args)


if __name__ == "__main__":
    main()
