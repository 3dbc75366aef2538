"""Store backends at scale: load, index build, open time, warm and cold query latency, recall, memory, disk.

    nice -n 10 python benchmarks/store_scale.py                      # SQLite at 10k, 100k, 1M; PostgreSQL at 100k
    python benchmarks/store_scale.py --sizes 10000 100000 --postgres-sizes
    python benchmarks/store_scale.py --sizes --postgres-sizes 100000 1000000 --ef-search 40 100 200

Vectors are synthetic but shaped like text embeddings: points around a few
thousand cluster centres in a 48-dimensional subspace of the 384-dimensional
space, plus a little noise, unit length. (Random Gaussian vectors have no
neighbourhood structure, so every ANN index looks broken on them.) Queries are
fresh points from the same distribution. Recall@10 is measured against exact
search in numpy over the same vectors, with the same filter applied.

Chunks go in through the store's own API, 1,000 per conversation (every tenth
source a document), as ingest writes them. SQLite grows one store through the
sizes (10k, then 90k more, ...) and measures at each. The store is bound to the
default embedder's name so `threadkeep search` runs on it: "cold CLI search" is
that command's wall time in a fresh process (interpreter, imports, model load,
query embedding, opening the store, hybrid search), with the page cache as the
previous runs left it. "Warm hybrid" is `search()` in a process that has
searched before, query embedding included. Latencies are wall clock; CPU time
per query is given too, since the machine is shared (its load average is
printed with every figure).

For PostgreSQL the HNSW index is dropped before the load and built once
afterwards, as a bulk import should, in a fresh database
`threadkeep_bench_<random>` on THREADKEEP_TEST_POSTGRES's server (default
postgres@127.0.0.1:5432), dropped at the end unless --keep.
"""

from __future__ import annotations

import os

# As importing threadkeep does, but before numpy loads here: OpenBLAS on one thread (see threadkeep/__init__.py).
os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")

import argparse
import json
import resource
import sqlite3
import subprocess
import sys
import tempfile
import time
import uuid
from collections.abc import Callable, Iterator
from contextlib import closing, contextmanager
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from pathlib import Path

import numpy as np

from threadkeep.embed import E5Embedder
from threadkeep.model import Chunk, Conversation, Document
from threadkeep.search import search
from threadkeep.store import SearchFilters, Store, open_store
from threadkeep.store.rows import input_hash
from threadkeep.store.sqlite import SQLiteStore

# Bytes of the chunks table's HNSW indexes (one per source type, or the one of an older schema), NULL if none.
HNSW_SIZE = (
    "SELECT sum(pg_relation_size(indexrelid)) FROM pg_index i JOIN pg_class c ON c.oid = i.indexrelid "
    "JOIN pg_am a ON a.oid = c.relam WHERE i.indrelid = 'chunks'::regclass AND a.amname = 'hnsw'"
)
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


def batches(data: Data, first: int = 0, end: int | None = None) -> Iterator[tuple[str, str, list[Chunk], dict]]:
    n = len(data.vectors)
    for start in range(first, end or n, PER_SOURCE):
        stop = min(start + PER_SOURCE, n)
        rng = np.random.default_rng(start)
        chunks = [chunk(i, n, words(rng, 8)) for i in range(start, stop)]
        vectors = {input_hash(c.embedding_input): data.vectors[start + j] for j, c in enumerate(chunks)}
        kind, ref = source_of(start)
        yield kind, ref, chunks, vectors


def load(store: Store, data: Data, first: int = 0, end: int | None = None) -> tuple[float, float]:
    """(seconds in the store's own calls, seconds preparing chunks in Python)."""
    store_seconds = 0.0
    started = time.perf_counter()
    for kind, ref, chunks, vectors in batches(data, first, end):
        tick = time.perf_counter()
        if kind == "document":
            document = Document(ref, ref, START, f"{ref}.md", (), ref)
            store.replace_document(document, ref, chunks, vectors)
        else:
            store.replace_conversation(Conversation(ref), ref, [], [], chunks, vectors)
        store_seconds += time.perf_counter() - tick
    return store_seconds, time.perf_counter() - started - store_seconds


def exact_top(data: Data, query: np.ndarray, mask: np.ndarray | None, k: int, n: int | None = None) -> set[int]:
    scores = data.vectors[:n] @ query
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


def cases(data: Data, n: int | None = None) -> list[Case]:
    n = n or len(data.vectors)
    index = np.arange(n)
    sources = index // PER_SOURCE
    is_document = sources % 10 == 9
    # Chunk times spread over a year across all the generated vectors, so a smaller store holds the
    # earliest of them: its "last 30 days" are the 30 days before its newest chunk.
    total = len(data.vectors)
    last_month = max(0, n - int(total * 30 / 365))
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
            lambda q: SearchFilters(source_type="chat", since=occurred(last_month, total)),
            lambda q: (~is_document) & (index >= last_month),
        ),
    ]


class Clock:
    """Wall, this process's CPU and, for a PostgreSQL server on this machine, its backend's CPU
    (/proc/PID/schedstat, nanoseconds on a core) per timed call: wall minus both is waiting for
    a core, which an idle machine would not do."""

    def __init__(self, store: Store) -> None:
        self.walls: list[float] = []
        self.cpus: list[float] = []
        self.servers: list[float] = []
        self.schedstat: Path | None = None
        pid = getattr(getattr(getattr(store, "db", None), "info", None), "backend_pid", None)
        if pid is not None and Path(f"/proc/{pid}/schedstat").exists():
            self.schedstat = Path(f"/proc/{pid}/schedstat")

    def _server(self) -> float:
        return int(self.schedstat.read_text().split()[0]) / 1e9 if self.schedstat else 0.0

    @contextmanager
    def timed(self) -> Iterator[None]:
        server, tick, cpu = self._server(), time.perf_counter(), time.process_time()
        yield
        self.walls.append(time.perf_counter() - tick)
        self.cpus.append(time.process_time() - cpu)
        if self.schedstat:
            self.servers.append(self._server() - server)

    def summary(self) -> str:
        server = f"  server CPU {percentiles(self.servers)}" if self.servers else ""
        return f"{percentiles(self.walls)}  CPU {percentiles(self.cpus)}{server}"


def measure_queries(store: Store, data: Data, case: Case, k: int, n: int | None = None) -> tuple[Clock, float]:
    """(times, recall@k) over the queries."""
    clock, recalls = Clock(store), []
    for q, query in enumerate(data.queries):
        filters = case.filters(q)
        with clock.timed():
            found = store.dense_candidates(query, k, filters)
        truth = exact_top(data, query, case.mask(q), k, n)
        if truth:
            recalls.append(len({index_of(chunk_id) for chunk_id, _ in found} & truth) / len(truth))
    return clock, float(np.mean(recalls)) if recalls else float("nan")


def percentiles(latencies: list[float]) -> str:
    return f"p50 {1000 * np.percentile(latencies, 50):7.2f} ms  p95 {1000 * np.percentile(latencies, 95):7.2f} ms"


def measure_lexical(store: Store, queries: int, common: bool = False) -> Clock:
    """Times per full-text query of two words (`common`: the two most frequent words)."""
    rng = np.random.default_rng(1)
    clock = Clock(store)
    for _ in range(queries):
        text = f"{word(0)} {word(1)}" if common else " ".join(words(rng, 2))
        with clock.timed():
            store.lexical_candidates(text, 50, SearchFilters())
    return clock


QUESTIONS = [
    "同步一直失败怎么办", "安装的时候提示权限不够", "登录以后图标没反应", "发票在哪里申请", "代理设置以后连不上网络",
    "缓存冲突怎么清理", "托盘进程结束不了", "日志在哪个文件夹", "证书过期了怎么更新", "sync stuck at 99%",
    "proxy settings are ignored", "upload fails with E1024",
]  # fmt: skip


class FixedEmbedder:
    """The embedder's query vector is replaced by the benchmark's own; the embedding itself still runs,
    every time (the questions repeat, and the embedder remembers the vectors of repeated queries)."""

    def __init__(self, model: E5Embedder, data: Data) -> None:
        self.model, self.data, self.calls = model, data, 0

    def embed_query(self, text: str) -> np.ndarray:
        self.model.forget_queries()
        self.model.embed_query(text)
        self.calls += 1
        return self.data.queries[self.calls % len(self.data.queries)]


def measure_hybrid(store: Store, embedder: FixedEmbedder, rounds: int) -> tuple[list[float], list[float]]:
    walls, cpus = [], []
    for i in range(rounds):
        tick, cpu = time.perf_counter(), time.process_time()
        search(store, embedder, QUESTIONS[i % len(QUESTIONS)], k=10)
        walls.append(time.perf_counter() - tick)
        cpus.append(time.process_time() - cpu)
    return walls, cpus


def warm_hybrid(backend: str, store: Store, embedder: FixedEmbedder, column: str) -> None:
    """Hybrid search with the query embedding, after 3 warm-up queries: printed and noted for the table."""
    measure_hybrid(store, embedder, 3)
    walls, cpus = measure_hybrid(store, embedder, 60)
    print(f"  {backend:24s} {'warm hybrid search':22s} top-10 {percentiles(walls)}  CPU {percentiles(cpus)}  "
          f"(query embedding included; {load_average()})")  # fmt: skip
    note(column, "warm hybrid search incl. embedding: wall ms", short(walls))
    note(column, "warm hybrid search incl. embedding: CPU ms", short(cpus))


def load_average() -> str:
    return "load {:.1f} {:.1f} {:.1f}".format(*os.getloadavg())


# The side-by-side table printed at the end: row (what) -> column (backend and size) -> figure.
SUMMARY: dict[str, dict[str, str]] = {}


def note(column: str, row: str, figure: str) -> None:
    SUMMARY.setdefault(row, {})[column] = figure


def short(latencies: list[float]) -> str:
    return f"{1000 * np.percentile(latencies, 50):.1f} / {1000 * np.percentile(latencies, 95):.1f}"


def print_summary() -> None:
    columns = list(dict.fromkeys(column for cells in SUMMARY.values() for column in cells))
    print(f"\nside by side (ms are p50 / p95; CPU is this process's, wall includes waiting for the CPU; "
          f"{os.cpu_count()} cores, {load_average()} at the end)")  # fmt: skip
    print("| | " + " | ".join(columns) + " |")
    print("|---" * (len(columns) + 1) + "|")
    for row, cells in SUMMARY.items():
        print(f"| {row} | " + " | ".join(cells.get(column, "") for column in columns) + " |")


def report(
    name: str, data: Data, store: Store, k: int, ef_values: list[int], n: int | None = None, column: str = ""
) -> None:
    import threadkeep.store.postgres as postgres_module

    for ef in ef_values if name == "postgres" else [0]:
        if ef:
            postgres_module.EF_SEARCH = ef
        label = f"{name} ef_search={ef}" if ef else name
        for case in cases(data, n):
            store.dense_candidates(data.queries[0], k, case.filters(0))  # warm caches
            clock, recall = measure_queries(store, data, case, k, n)
            print(
                f"  {label:24s} {case.name:22s} top-{k} {clock.summary()}  recall@{k} {recall:.3f}  ({load_average()})"
            )
            if case.name in ("no filter", "documents (10%)"):
                what = f"vector top-{k}, {case.name}" + (f", ef_search {ef}" if ef else "")
                note(column, f"{what}: wall ms", short(clock.walls))
                note(column, f"{what}: CPU ms, recall@{k}", f"{short(clock.cpus)}, {recall:.3f}")
                if clock.servers:
                    note(column, f"{what}: server CPU ms", short(clock.servers))
    for common in (False, True):
        clock = measure_lexical(store, len(data.queries) // (4 if common else 1), common)
        what = "full text, 2 commonest" if common else "full text, 2 words"
        print(f"  {name:24s} {what:22s} top-50 {clock.summary()}  ({load_average()})")
        note(column, f"{what}: wall ms (CPU ms)", f"{short(clock.walls)} ({short(clock.cpus)})")
        if clock.servers:
            note(column, f"{what}: server CPU ms", short(clock.servers))


def disk_mb(path: Path) -> float:
    files = [path, path.with_name(path.name + "-wal"), path.with_name(path.name + ".vectors")]
    return sum(f.stat().st_size for f in files if f.exists()) / 1e6


PROBE = """
import json, sys, time
started = time.perf_counter()
import numpy as np
from threadkeep.store import SearchFilters, open_store
imported = time.perf_counter()
store = open_store(sys.argv[1])
opened = time.perf_counter()
queries = np.load(sys.argv[2])
store.dense_candidates(queries[0], 10, SearchFilters())
first = time.perf_counter()
for query in queries[1:]:
    store.dense_candidates(query, 50, SearchFilters())
    store.lexical_candidates("同步 w12", 50, SearchFilters())
status = dict(line.split(":", 1) for line in open("/proc/self/status"))
print(json.dumps({"imports": imported - started, "open": opened - imported, "first": first - opened,
                  "peak_mb": int(status["VmHWM"].split()[0]) / 1024, "rss_mb": int(status["VmRSS"].split()[0]) / 1024}))
"""


def probe(path: Path, data: Data, folder: Path) -> dict:
    """A fresh process that opens the store, searches 50 times, and reports its open time and peak memory."""
    queries = folder / "queries.npy"
    np.save(queries, data.queries[:50])
    out = subprocess.run([sys.executable, "-c", PROBE, str(path), str(queries)], capture_output=True, text=True,
                         check=True)  # fmt: skip
    return json.loads(out.stdout)


def cold_cli(path: Path, runs: int = 3) -> tuple[list[float], list[float]]:
    """Wall and CPU seconds of `threadkeep search` in a fresh process, model load and query embedding included."""
    times, cpus = [], []
    for question in QUESTIONS[:runs]:
        tick, before = time.perf_counter(), resource.getrusage(resource.RUSAGE_CHILDREN)
        subprocess.run(
            [sys.executable, "-m", "threadkeep.cli", "search", "--db", str(path), "--json", question],
            capture_output=True, check=True,
        )  # fmt: skip
        times.append(time.perf_counter() - tick)
        after = resource.getrusage(resource.RUSAGE_CHILDREN)
        cpus.append(after.ru_utime + after.ru_stime - before.ru_utime - before.ru_stime)
    return times, cpus


def chunk_count(path: Path) -> int:
    if not path.exists():
        return 0
    with closing(sqlite3.connect(path)) as db:
        return db.execute("SELECT count(*) FROM chunks").fetchone()[0]


def run_sqlite(data: Data, k: int, folder: Path, sizes: list[int], embedder: E5Embedder, reuse: bool) -> None:
    """One store grown through the sizes, or with `reuse` one kept store per size, loaded only if incomplete."""
    path = folder / "scale.db"
    loaded = 0
    for n in sizes:
        if reuse:
            path, loaded = folder / f"scale-{n}.db", 0
            if chunk_count(path) == n:
                print(f"sqlite {n:,}: reusing {path}  ({load_average()})")
                loaded = n
            else:
                for stale in (path, *(path.with_name(path.name + end) for end in ("-wal", "-shm", ".vectors"))):
                    stale.unlink(missing_ok=True)
        store = open_store(path)
        assert isinstance(store, SQLiteStore)
        store.bind_embedder(embedder.name, data.vectors.shape[1])
        if loaded < n:
            store_seconds, prep = load(store, data, loaded, n)
            print(
                f"sqlite {n:,}: loaded {n - loaded:,} chunks in {store_seconds:.1f} s "
                f"({(n - loaded) / store_seconds:,.0f} chunks/s; +{prep:.1f} s prep)  ({load_average()})"
            )
        loaded = n
        tick = time.perf_counter()
        store.close()  # a writer leaves the vector file up to date for the next process
        column = f"SQLite {n:,}"
        note(column, "disk, MB per million chunks", f"{disk_mb(path) * 1e6 / n:,.0f}")
        print(f"  vector file written at close in {time.perf_counter() - tick:.1f} s; disk {disk_mb(path):,.0f} MB "
              f"({disk_mb(path) * 1e6 / n:,.0f} MB per million chunks; vector file "
              f"{path.with_name(path.name + '.vectors').stat().st_size / 1e6:,.0f} MB)")  # fmt: skip
        figures = probe(path, data, folder)
        print(
            f"  fresh process: imports {1000 * figures['imports']:.0f} ms, "
            f"open_store {1000 * figures['open']:.0f} ms, "
            f"first vector query (maps the vector file) {1000 * figures['first']:.0f} ms; after 50 searches "
            f"RSS {figures['rss_mb']:,.0f} MB, peak {figures['peak_mb']:,.0f} MB "
            "(interpreter, numpy, jieba included)"
        )
        note(column, "fresh process: open_store / first vector query, ms",
             f"{1000 * figures['open']:.0f} / {1000 * figures['first']:.0f}")  # fmt: skip
        note(column, "fresh process RSS after 50 searches, MB", f"{figures['rss_mb']:,.0f}")
        times, cpus = cold_cli(path)
        print(f"  cold CLI `threadkeep search` (fresh process, model load + embedding included): "
              f"{', '.join(f'{t:.2f}' for t in times)} s wall, {', '.join(f'{t:.2f}' for t in cpus)} s CPU  "
              f"({load_average()})")  # fmt: skip
        note(column, "cold CLI search, s wall (CPU)", f"{np.median(times):.2f} ({np.median(cpus):.2f})")
        store = open_store(path)
        report("sqlite", data, store, k, [], n, column)
        warm_hybrid("sqlite", store, FixedEmbedder(embedder, data), column)
        note(column, "load average during the size", load_average().removeprefix("load "))
        walls = []
        for question in QUESTIONS * 5:
            embedder.forget_queries()
            tick = time.perf_counter()
            embedder.embed_query(question)
            walls.append(time.perf_counter() - tick)
        print(f"  {'':24s} {'query embedding alone':22s}        {percentiles(walls)}")
        store.close()


def run_postgres(
    data: Data, k: int, ef_values: list[int], keep: bool, reuse: str | None = None, embedder: E5Embedder | None = None
) -> None:
    """Load, index and measure a fresh database; with `reuse`, the database of that name, loaded and
    indexed only if it does not yet hold exactly these chunks with their index (it is kept)."""
    import psycopg
    from psycopg import sql
    from psycopg.conninfo import conninfo_to_dict

    from threadkeep.store import postgres
    from threadkeep.store.postgres import PostgresStore

    n = len(data.vectors)
    name = reuse or f"threadkeep_bench_{uuid.uuid4().hex[:8]}"
    params = conninfo_to_dict(ADMIN_URL)
    user, host, port = params.get("user", "postgres"), params.get("host", "127.0.0.1"), params.get("port", 5432)
    url = f"postgresql://{user}@{host}:{port}/{name}"
    ready = False
    with psycopg.connect(ADMIN_URL, autocommit=True) as admin:
        exists = admin.execute("SELECT 1 FROM pg_database WHERE datname = %s", (name,)).fetchone() is not None
        if exists:
            with psycopg.connect(url) as db:
                held = db.execute("SELECT to_regclass('chunks') IS NOT NULL").fetchone()[0]
                held = held and db.execute("SELECT count(*) FROM chunks").fetchone()[0] == n
                ready = held and db.execute(HNSW_SIZE).fetchone()[0] is not None
            if not ready:
                admin.execute(sql.SQL("DROP DATABASE {} WITH (FORCE)").format(sql.Identifier(name)))
        if not ready:
            admin.execute(sql.SQL("CREATE DATABASE {}").format(sql.Identifier(name)))
        settings = dict(admin.execute(
            "SELECT name, current_setting(name) FROM pg_settings WHERE name IN "
            "('shared_buffers', 'maintenance_work_mem', 'max_parallel_maintenance_workers', 'work_mem')"
        ).fetchall())  # fmt: skip
    print(f"postgres {n:,}: server settings {settings}  ({load_average()})")
    column = f"PostgreSQL {n:,}"
    note(column, "server shared_buffers / maintenance_work_mem", f"{settings.get('shared_buffers')} / "
         f"{settings.get('maintenance_work_mem')}")  # fmt: skip
    try:
        store = open_store(url)
        assert isinstance(store, PostgresStore)
        if ready:
            print(f"  reusing {url}")
        else:
            store.bind_embedder("synthetic", data.vectors.shape[1])
            store.drop_vector_index()
            store_seconds, prep = load(store, data)
            print(
                f"  load {n:,} chunks by COPY in {store_seconds:.1f} s "
                f"({n / store_seconds:,.0f} chunks/s; +{prep:.1f} s prep), HNSW index dropped  ({load_average()})"
            )
            tick = time.perf_counter()
            memory = "1GB" if n <= 300_000 else "3GB"
            workers = max(1, (os.cpu_count() or 2) - 1)
            store.create_vector_index(memory=memory, workers=workers)
            build = time.perf_counter() - tick
            print(f"  HNSW build (m {postgres.HNSW_M}, ef_construction {postgres.HNSW_EF_CONSTRUCTION}, "
                  f"maintenance_work_mem {memory}, {workers} parallel "
                  f"workers): {build:.1f} s  ({load_average()})")  # fmt: skip
            note(column, "load (chunks/s) / HNSW build after it (s)", f"{n / store_seconds:,.0f} / {build:,.0f}")
            store.db.execute("VACUUM ANALYZE chunks")
        sizes = store.db.execute(
            f"SELECT pg_size_pretty(({HNSW_SIZE})), pg_database_size(current_database())"
        ).fetchone()
        print(f"  HNSW index {sizes[0]}; database {sizes[1] / 1e6:,.0f} MB ({sizes[1] / n:,.0f} MB per million chunks)")
        note(column, "disk, MB per million chunks", f"{sizes[1] / n:,.0f} (index {sizes[0]})")
        report("postgres", data, store, k, ef_values, None, column)
        if embedder is not None:
            warm_hybrid("postgres", store, FixedEmbedder(embedder, data), column)
        note(column, "load average during the size", load_average().removeprefix("load "))
        if not reuse:
            extra = batches(synthetic(2 * PER_SOURCE, data.vectors.shape[1], 1, seed=99))
            tick = time.perf_counter()
            for _kind, ref, chunks, vectors in extra:
                ids = [f"extra-{c.id}" for c in chunks]
                renamed = [
                    Chunk(**{**_fields(c), "id": i, "source_ref": f"extra-{ref}"})
                    for c, i in zip(chunks, ids, strict=True)
                ]
                store.replace_conversation(Conversation(f"extra-{ref}"), ref, [], [], renamed, vectors)
            seconds = time.perf_counter() - tick
            print(
                f"  incremental: {2 * PER_SOURCE:,} more chunks into the indexed table "
                f"at {2 * PER_SOURCE / seconds:,.0f} chunks/s"
            )
        store.close()
    finally:
        if not (keep or reuse):
            with psycopg.connect(ADMIN_URL, autocommit=True) as admin:
                admin.execute(sql.SQL("DROP DATABASE IF EXISTS {} WITH (FORCE)").format(sql.Identifier(name)))
        else:
            print(f"  kept {url}")


def _fields(item: Chunk) -> dict:
    return {name: getattr(item, name) for name in Chunk.__dataclass_fields__}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--sizes", nargs="*", type=int, default=[10_000, 100_000, 1_000_000], help="SQLite sizes")
    parser.add_argument("--postgres-sizes", nargs="*", type=int, default=[100_000], help="PostgreSQL sizes")
    parser.add_argument("--dim", type=int, default=384)
    parser.add_argument("--queries", type=int, default=200)
    parser.add_argument("--k", type=int, default=10)
    parser.add_argument("--ef-search", nargs="+", type=int, default=[40, 100], help="PostgreSQL hnsw.ef_search")
    parser.add_argument("--keep", action="store_true", help="keep the PostgreSQL database")
    parser.add_argument(
        "--postgres-db", help="reuse (or load once and keep) the PostgreSQL database of this name, one size only"
    )
    parser.add_argument(
        "--folder", type=Path, help="keep one SQLite store per size here and reuse those already loaded"
    )
    parser.add_argument(
        "--real",
        help="vectors made from real e5 ones instead (PREFIX of vector_recall.py's PREFIX-passages.npy "
        "and PREFIX-queries.npy: its `grown` set, and its real queries, half IRC lines and half LoCoMo questions)",
    )
    parser.add_argument("--seed", type=int, default=7)
    parser.add_argument(
        "--spread", type=float, default=1.0, help="scatter around each cluster centre (higher: harder for ANN)"
    )
    args = parser.parse_args()

    largest = max([*args.sizes, *args.postgres_sizes])
    tick = time.perf_counter()
    if args.real:
        from vector_recall import grown

        passages, queries = np.load(f"{args.real}-passages.npy"), np.load(f"{args.real}-queries.npy")
        half = args.queries // 2
        queries = np.vstack([queries[:half], queries[200 : 200 + args.queries - half]])
        data = Data(grown(passages, largest), np.zeros(largest, np.int64), queries, np.zeros(len(queries), np.int64))
        print(f"{largest:,} vectors made from {len(passages):,} real e5 passages in "
              f"{time.perf_counter() - tick:.1f} s; {os.cpu_count()} cores, {load_average()}")  # fmt: skip
    else:
        data = synthetic(largest, args.dim, args.queries, args.seed, spread=args.spread)
        print(
            f"{largest:,} synthetic {args.dim}-d vectors (48-d subspace, 2,000 clusters) "
            f"in {time.perf_counter() - tick:.1f} s; {os.cpu_count()} cores, {load_average()}"
        )
    if args.sizes and args.folder:
        args.folder.mkdir(parents=True, exist_ok=True)
        run_sqlite(data, args.k, args.folder, sorted(args.sizes), E5Embedder(), reuse=True)
    elif args.sizes:
        with tempfile.TemporaryDirectory() as folder:
            run_sqlite(data, args.k, Path(folder), sorted(args.sizes), E5Embedder(), reuse=False)
    for n in args.postgres_sizes:
        part = Data(data.vectors[:n], data.labels[:n], data.queries, data.query_labels)
        run_postgres(part, args.k, args.ef_search, args.keep, args.postgres_db, E5Embedder())
    print_summary()


if __name__ == "__main__":
    main()
