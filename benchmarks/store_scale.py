"""Store backends at scale: load rate, index build, top-10 latency and ANN recall.

    python benchmarks/store_scale.py                 # 1M chunks, SQLite and PostgreSQL
    python benchmarks/store_scale.py --n 100000      # smaller
    python benchmarks/store_scale.py --n 100000 --backends postgres --ef-search 40 100 200

Vectors are synthetic but shaped like text embeddings: points around a few
thousand cluster centres in a 48-dimensional subspace of the 384-dimensional
space, plus a little noise, unit length. (Random Gaussian vectors have no
neighbourhood structure, so every ANN index looks broken on them.) Queries are
fresh points from the same distribution. Recall@10 is measured against exact
search in numpy over the same vectors, with the same filter applied.

Chunks go in through the store's own API, 1,000 per conversation (every tenth
source a document), as ingest writes them. For PostgreSQL the HNSW index is
dropped before the load and built once afterwards, as a bulk import should; the
table says how long each took. SQLite's "index" is the in-memory matrix its
exact search builds on the first query.

PostgreSQL: a fresh database `threadkeep_bench_<random>` on THREADKEEP_TEST_POSTGRES's
server (default postgres@127.0.0.1:5432), dropped at the end unless --keep.
"""

from __future__ import annotations

import argparse
import os
import tempfile
import time
import uuid
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from pathlib import Path

import numpy as np

from threadkeep.model import Chunk, Conversation, Document
from threadkeep.store import SearchFilters, Store, open_store
from threadkeep.store.sqlite import input_hash

ADMIN_URL = os.environ.get("THREADKEEP_TEST_POSTGRES", "postgresql://postgres@127.0.0.1:5432/postgres")
PER_SOURCE = 1000
START = datetime(2025, 1, 1, tzinfo=UTC)
# Chunk text: 8 words drawn from a Zipf-distributed vocabulary (a few words common, most rare, as
# in real text), Chinese and English; full-text queries are two words drawn the same way.
VOCABULARY = 50_000
HEADS = [
    *("同步", "上传", "登录", "安装", "发票", "代理", "缓存", "冲突", "图标", "托盘", "进程", "日志", "权限", "网络"),
    *("证书", "sync", "proxy"),
]


def word(rank: int) -> str:
    return HEADS[rank] if rank < len(HEADS) else f"w{rank}"


def words(rng: np.random.Generator, count: int) -> list[str]:
    ranks = np.minimum(rng.zipf(1.2, count) - 1, VOCABULARY - 1)
    return [word(int(rank)) for rank in ranks]


@dataclass
class Data:
    vectors: np.ndarray  # (n, dim) float32, unit rows
    labels: np.ndarray
    queries: np.ndarray
    query_labels: np.ndarray


def synthetic(
    n: int, dim: int, queries: int, seed: int, rank: int = 48, clusters: int = 2000, spread: float = 1.0
) -> Data:
    rng = np.random.default_rng(seed)
    basis = np.linalg.qr(rng.standard_normal((dim, rank)))[0].T.astype(np.float32)  # orthonormal rows
    centres = rng.standard_normal((clusters, rank)).astype(np.float32)

    def draw(count: int) -> tuple[np.ndarray, np.ndarray]:
        labels = rng.integers(0, clusters, count)
        out = np.empty((count, dim), dtype=np.float32)
        for start in range(0, count, 100_000):
            part = labels[start : start + 100_000]
            latent = centres[part] + spread * rng.standard_normal((len(part), rank)).astype(np.float32)
            block = latent @ basis + 0.05 * rng.standard_normal((len(part), dim)).astype(np.float32)
            out[start : start + len(part)] = block / np.linalg.norm(block, axis=1, keepdims=True)
        return out, labels

    vectors, labels = draw(n)
    query_vectors, query_labels = draw(queries)
    return Data(vectors, labels, query_vectors, query_labels)


def source_of(index: int) -> tuple[str, str]:
    number = index // PER_SOURCE
    return ("document", f"doc-{number}") if number % 10 == 9 else ("chat", f"conv-{number}")


def occurred(index: int, n: int) -> datetime:
    return START + timedelta(days=365 * index / n)


def chunk(index: int, n: int, text_words: list[str]) -> Chunk:
    kind, ref = source_of(index)
    text = f"{' '.join(text_words)} n{index}"
    common = dict(id=f"{ref}:{index}", source_type=kind, source_ref=ref, text=text, embedding_input=text)
    if kind == "document":
        return Chunk(**common, occurred_at=occurred(index, n), heading_path=(ref, f"section {index}"), title=ref)
    return Chunk(**common, occurred_at=occurred(index, n), evidence_ids=(f"m{index}",), resolution_state="resolved")


def batches(data: Data) -> Iterator[tuple[str, str, list[Chunk], dict[str, np.ndarray]]]:
    n = len(data.vectors)
    for start in range(0, n, PER_SOURCE):
        stop = min(start + PER_SOURCE, n)
        rng = np.random.default_rng(start)
        chunks = [chunk(i, n, words(rng, 8)) for i in range(start, stop)]
        vectors = {input_hash(c.embedding_input): data.vectors[start + j] for j, c in enumerate(chunks)}
        kind, ref = source_of(start)
        yield kind, ref, chunks, vectors


def load(store: Store, data: Data) -> tuple[float, float]:
    """(seconds in the store's own calls, seconds preparing chunks in Python)."""
    store_seconds = 0.0
    started = time.perf_counter()
    for kind, ref, chunks, vectors in batches(data):
        tick = time.perf_counter()
        if kind == "document":
            document = Document(ref, ref, START, f"{ref}.md", (), ref)
            store.replace_document(document, ref, chunks, vectors)
        else:
            store.replace_conversation(Conversation(ref), ref, [], [], chunks, vectors)
        store_seconds += time.perf_counter() - tick
    return store_seconds, time.perf_counter() - started - store_seconds


def exact_top(data: Data, query: np.ndarray, mask: np.ndarray | None, k: int) -> set[int]:
    scores = data.vectors @ query
    if mask is not None:
        scores = np.where(mask, scores, -np.inf)
    top = np.argpartition(-scores, k)[:k]
    return {int(i) for i in top if np.isfinite(scores[i])}


def index_of(chunk_id: str) -> int:
    return int(chunk_id.rpartition(":")[2])


@dataclass
class Case:
    name: str
    filters: Callable[[int], SearchFilters]
    mask: Callable[[int], np.ndarray | None]


def cases(data: Data) -> list[Case]:
    n = len(data.vectors)
    index = np.arange(n)
    sources = index // PER_SOURCE
    is_document = sources % 10 == 9
    last_month = n - int(n * 30 / 365)
    conversations = sorted({s for s in range(int(sources.max()) + 1) if s % 10 != 9})
    return [
        Case("no filter", lambda q: SearchFilters(), lambda q: None),
        Case(
            "one conversation",
            lambda q: SearchFilters(conversation=f"conv-{conversations[q % len(conversations)]}"),
            lambda q: sources == conversations[q % len(conversations)],
        ),
        Case("documents (10%)", lambda q: SearchFilters(source_type="document"), lambda q: is_document),
        Case(
            "chat, last 30 days",
            lambda q: SearchFilters(source_type="chat", since=occurred(last_month, n)),
            lambda q: (~is_document) & (index >= last_month),
        ),
    ]


def measure_queries(store: Store, data: Data, case: Case, k: int) -> tuple[float, float, float]:
    """(p50 ms, p95 ms, recall@k) over the queries."""
    latencies, recalls = [], []
    for q, query in enumerate(data.queries):
        filters = case.filters(q)
        tick = time.perf_counter()
        found = store.dense_candidates(query, k, filters)
        latencies.append(time.perf_counter() - tick)
        truth = exact_top(data, query, case.mask(q), k)
        if truth:
            recalls.append(len({index_of(chunk_id) for chunk_id, _ in found} & truth) / len(truth))
    return (
        1000 * float(np.percentile(latencies, 50)),
        1000 * float(np.percentile(latencies, 95)),
        float(np.mean(recalls)),
    )


def measure_lexical(store: Store, queries: int) -> tuple[float, float]:
    rng = np.random.default_rng(1)
    latencies = []
    for _ in range(queries):
        text = " ".join(words(rng, 2))
        tick = time.perf_counter()
        store.lexical_candidates(text, 50, SearchFilters())
        latencies.append(time.perf_counter() - tick)
    return 1000 * float(np.percentile(latencies, 50)), 1000 * float(np.percentile(latencies, 95))


def report(name: str, data: Data, store: Store, k: int, ef_values: list[int]) -> None:
    import threadkeep.store.postgres as postgres_module

    for ef in ef_values if name == "postgres" else [0]:
        if ef:
            postgres_module.EF_SEARCH = ef
        label = f"{name} ef_search={ef}" if ef else name
        for case in cases(data):
            store.dense_candidates(data.queries[0], k, case.filters(0))  # warm caches
            p50, p95, recall = measure_queries(store, data, case, k)
            print(
                f"  {label:24s} {case.name:20s} top-{k} p50 {p50:7.2f} ms  p95 {p95:7.2f} ms  recall@{k} {recall:.3f}"
            )
    p50, p95 = measure_lexical(store, len(data.queries))
    print(f"  {name:24s} {'full text (2 words)':20s} top-50 p50 {p50:7.2f} ms  p95 {p95:7.2f} ms")


def run_sqlite(data: Data, k: int, folder: Path) -> None:
    store = open_store(folder / "scale.db")
    store.bind_embedder("synthetic", data.vectors.shape[1])
    store_seconds, prep = load(store, data)
    n = len(data.vectors)
    print(f"sqlite: load {n:,} chunks in {store_seconds:.1f} s ({n / store_seconds:,.0f} chunks/s; +{prep:.1f} s prep)")
    tick = time.perf_counter()
    store.dense_candidates(data.queries[0], k, SearchFilters())
    print(f"  in-memory matrix built on the first query in {time.perf_counter() - tick:.1f} s")
    report("sqlite", data, store, k, [])
    store.close()


def run_postgres(data: Data, k: int, ef_values: list[int], keep: bool) -> None:
    import psycopg
    from psycopg import sql
    from psycopg.conninfo import conninfo_to_dict

    from threadkeep.store.postgres import PostgresStore

    name = f"threadkeep_bench_{uuid.uuid4().hex[:8]}"
    params = conninfo_to_dict(ADMIN_URL)
    user, host, port = params.get("user", "postgres"), params.get("host", "127.0.0.1"), params.get("port", 5432)
    url = f"postgresql://{user}@{host}:{port}/{name}"
    with psycopg.connect(ADMIN_URL, autocommit=True) as admin:
        admin.execute(sql.SQL("CREATE DATABASE {}").format(sql.Identifier(name)))
    try:
        store = open_store(url)
        assert isinstance(store, PostgresStore)
        store.bind_embedder("synthetic", data.vectors.shape[1])
        store.drop_vector_index()
        store_seconds, prep = load(store, data)
        n = len(data.vectors)
        print(
            f"postgres: load {n:,} chunks by COPY in {store_seconds:.1f} s "
            f"({n / store_seconds:,.0f} chunks/s; +{prep:.1f} s prep), HNSW index dropped"
        )
        tick = time.perf_counter()
        memory = "1GB" if n <= 300_000 else "4GB"
        store.create_vector_index(memory=memory)
        build = time.perf_counter() - tick
        size = store.db.execute("SELECT pg_size_pretty(pg_relation_size('chunks_embedding'))").fetchone()[0]
        print(f"  HNSW build (m 16, ef_construction 64, maintenance_work_mem {memory}): {build:.1f} s, {size}")
        store.db.execute("VACUUM ANALYZE chunks")
        report("postgres", data, store, k, ef_values)
        extra = batches(synthetic(2 * PER_SOURCE, data.vectors.shape[1], 1, seed=99))
        tick = time.perf_counter()
        for _kind, ref, chunks, vectors in extra:
            ids = [f"extra-{c.id}" for c in chunks]
            renamed = [
                Chunk(**{**_fields(c), "id": i, "source_ref": f"extra-{ref}"}) for c, i in zip(chunks, ids, strict=True)
            ]
            store.replace_conversation(Conversation(f"extra-{ref}"), ref, [], [], renamed, vectors)
        seconds = time.perf_counter() - tick
        print(
            f"  incremental: {2 * PER_SOURCE:,} more chunks into the indexed table "
            f"at {2 * PER_SOURCE / seconds:,.0f} chunks/s"
        )
        store.close()
    finally:
        if not keep:
            with psycopg.connect(ADMIN_URL, autocommit=True) as admin:
                admin.execute(sql.SQL("DROP DATABASE IF EXISTS {} WITH (FORCE)").format(sql.Identifier(name)))
        else:
            print(f"  kept {url}")


def _fields(item: Chunk) -> dict:
    return {name: getattr(item, name) for name in Chunk.__dataclass_fields__}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--n", type=int, default=1_000_000, help="chunks to load (default 1,000,000)")
    parser.add_argument("--dim", type=int, default=384)
    parser.add_argument("--queries", type=int, default=200)
    parser.add_argument("--k", type=int, default=10)
    parser.add_argument("--backends", nargs="+", default=["sqlite", "postgres"], choices=["sqlite", "postgres"])
    parser.add_argument("--ef-search", nargs="+", type=int, default=[40, 100], help="PostgreSQL hnsw.ef_search")
    parser.add_argument("--keep", action="store_true", help="keep the PostgreSQL database")
    parser.add_argument("--seed", type=int, default=7)
    parser.add_argument(
        "--spread", type=float, default=1.0, help="scatter around each cluster centre (higher: harder for ANN)"
    )
    args = parser.parse_args()

    tick = time.perf_counter()
    data = synthetic(args.n, args.dim, args.queries, args.seed, spread=args.spread)
    print(
        f"{args.n:,} synthetic {args.dim}-d vectors (48-d subspace, 2,000 clusters) "
        f"in {time.perf_counter() - tick:.1f} s"
    )
    if "sqlite" in args.backends:
        with tempfile.TemporaryDirectory() as folder:
            run_sqlite(data, args.k, Path(folder))
    if "postgres" in args.backends:
        run_postgres(data, args.k, args.ef_search, args.keep)


if __name__ == "__main__":
    main()
