"""The server store: PostgreSQL with pgvector, for teams and for more than one writer.

Same tables and same behaviour as `SQLiteStore`: both are `store.sql.SQLStore`. What differs is how:

- Vectors live in a `vector` column. It has no dimension until an embedder is
  bound: the first `bind_embedder` turns it into `vector(N)` and builds the
  HNSW index (cosine), both need the dimension, and both happen once, under the
  schema lock, in the same transaction that records the model.
- Chinese full text: the text is segmented in Python (jieba tokens and CJK
  bigrams, `rows.search_terms`, as for SQLite) and stored space-separated; generated columns
  turn it into `tsvector`s with `to_tsvector('simple', ...)`, which splits on
  the spaces and keeps every token whole. GIN indexes serve `@@`.
- Every conversation or document is replaced in one transaction, serialized
  per conversation/document by an advisory lock, so writers on different
  conversations run side by side; rows go in by binary COPY. Under that lock a
  rebuild checks that the content hash it was computed from is still stored
  (`based_on`), so two writers of one conversation cannot undo each other.
- Besides the HNSW index of all chunks, each source type (chat, document) has
  its own, so a search for one type walks only that graph. Other filters
  apply inside the nearest-neighbour query: when the planner expects few chunks
  to pass them the search is exact over those, otherwise HNSW with iterative
  scan (pgvector >= 0.8) keeps walking until enough chunks pass.
"""

from __future__ import annotations

import json
import math
import struct
import threading
import time
from collections.abc import Iterable, Iterator, Sequence
from contextlib import contextmanager
from datetime import UTC, datetime
from typing import Any

import numpy as np
import psycopg
from psycopg import errors, sql
from psycopg.adapt import Buffer, Dumper, Loader
from psycopg.conninfo import conninfo_to_dict
from psycopg.pq import Format
from psycopg.types.json import Jsonb

from threadkeep.store.base import BIGRAM_WEIGHT, NEWEST_MATCHES, SearchFilters, StoreError, StoreNotFound, plan_terms
from threadkeep.store.rows import Table, Values
from threadkeep.store.sql import SCHEMA, Migration, SQLStore, filter_conditions, pending
from threadkeep.text import cjk_bigrams, content_tokens

INSTALL_HINT = "install it with `sudo bash scripts/install-pgvector.sh` (Debian) or your system's pgvector package"

# One key for schema changes (migrations, binding the embedder): any 64-bit constant
# no other application is likely to use ("thrdkeep").
SCHEMA_LOCK = 0x7468_7264_6B65_6570

MIGRATIONS: list[Migration] = [
    Migration(
        "m001_initial",
        """
    CREATE EXTENSION IF NOT EXISTS vector;
    CREATE TABLE meta (key text PRIMARY KEY, value text NOT NULL);
    CREATE TABLE conversations (
        ref text PRIMARY KEY,
        title text NOT NULL,
        kind text NOT NULL CHECK (kind IN ('group', 'direct', 'assistant')),
        source_format text NOT NULL,
        metadata jsonb NOT NULL,
        content_hash text NOT NULL
    );
    CREATE TABLE messages (
        conversation text NOT NULL REFERENCES conversations(ref),
        id text NOT NULL,
        position integer NOT NULL,
        sender text NOT NULL,
        sender_name text NOT NULL,
        role text NOT NULL,
        kind text NOT NULL,
        sent_at text NOT NULL,
        sent_ts timestamptz NOT NULL,
        text text NOT NULL,
        reply_to text,
        mentions text[] NOT NULL,
        recalled boolean NOT NULL,
        edited_at text,
        platform_thread text,
        metadata jsonb NOT NULL,
        thread_id text,
        PRIMARY KEY (conversation, id)
    );
    CREATE INDEX messages_time ON messages (conversation, sent_ts);
    CREATE TABLE threads (
        id text PRIMARY KEY,
        conversation text NOT NULL REFERENCES conversations(ref),
        message_ids text[] NOT NULL,
        reply_to jsonb NOT NULL,
        chunk_id text
    );
    CREATE INDEX threads_conversation ON threads (conversation);
    CREATE TABLE chunks (
        id text PRIMARY KEY,
        source_type text NOT NULL CHECK (source_type IN ('document', 'chat')),
        source_ref text NOT NULL,
        title text NOT NULL,
        text text NOT NULL,
        embedding_input text NOT NULL,
        input_hash text NOT NULL,
        embedding vector,
        occurred_at text NOT NULL,
        occurred_ts timestamptz NOT NULL,
        started_at text,
        heading_path text[],
        evidence_ids text[],
        resolution_state text CHECK (resolution_state IN ('resolved', 'workaround', 'open')),
        has_unresolved_media boolean NOT NULL DEFAULT false,
        -- Python-segmented tokens, space-separated; NULL when the chunk is not indexed.
        search_words text,
        search_bigrams text,
        words tsvector GENERATED ALWAYS AS (to_tsvector('simple', search_words)) STORED,
        bigrams tsvector GENERATED ALWAYS AS (to_tsvector('simple', search_bigrams)) STORED,
        CONSTRAINT chunk_source_shape CHECK (
            (source_type = 'document' AND heading_path IS NOT NULL AND resolution_state IS NULL)
            OR (source_type = 'chat' AND resolution_state IS NOT NULL AND evidence_ids IS NOT NULL
                AND cardinality(evidence_ids) > 0)
        ),
        CONSTRAINT embedded_when_indexed CHECK (embedding IS NULL OR embedding_input <> ''),
        CONSTRAINT searchable_when_indexed CHECK ((search_words IS NULL) = (embedding_input = ''))
    );
    CREATE INDEX chunks_source ON chunks (source_type, source_ref);
    CREATE INDEX chunks_ref ON chunks (source_ref);
    CREATE INDEX chunks_time ON chunks (occurred_ts);
    CREATE INDEX chunks_words ON chunks USING gin (words);
    CREATE INDEX chunks_bigrams ON chunks USING gin (bigrams);
        """,
    ),
    Migration(
        "m002_documents_and_review",
        """
    CREATE TABLE documents (
        id text PRIMARY KEY,
        title text NOT NULL,
        path text NOT NULL,
        updated_at text NOT NULL,
        content_hash text NOT NULL
    );
    CREATE TABLE review_flags (
        conversation text NOT NULL,
        message_id text NOT NULL,
        reason text NOT NULL,
        flagged_at text NOT NULL,
        PRIMARY KEY (conversation, message_id, reason)
    );
        """,
    ),
    Migration(
        "m003_known_documents_and_forgotten",
        """
    ALTER TABLE documents ADD COLUMN file_hash text;
    UPDATE documents SET file_hash = split_part(content_hash, ':', 2);
    CREATE INDEX documents_path ON documents (path);
    CREATE INDEX documents_file_hash ON documents (file_hash);
    CREATE TABLE forgotten (
        conversation text NOT NULL,
        title text NOT NULL,
        source_format text NOT NULL,
        messages integer NOT NULL,
        forgotten_at text NOT NULL
    );
        """,
    ),
    # A thread is looked up through its messages' thread_id.
    Migration(
        "m004_thread_lookup",
        """
    CREATE INDEX messages_thread ON messages (conversation, thread_id);
        """,
    ),
    # Vectors are made after the text (`claim_pending`) and reused by input across the store.
    Migration(
        "m005_pending_vectors",
        """
    CREATE INDEX chunks_input ON chunks (input_hash);
    CREATE INDEX chunks_pending ON chunks (input_hash) WHERE embedding IS NULL AND embedding_input <> '';
    CREATE INDEX chunks_unindexed ON chunks (input_hash) WHERE embedding_input = '';
        """,
    ),
    # Search-time layout, measured on 300k chunks (benchmarks/store_scale.py):
    # - The tsvectors stay in the row (MAIN: compressed first, out of line only past a page).
    #   Next to the 1.5 kB vector a row passes the ~2 kB TOAST threshold and EXTENDED moved the
    #   largest columns, the tsvectors, out of line: ranking 3,800 matches then read 5 pages a match
    #   (59 ms). Re-adding the columns rewrites the table, which moves the stored ones back in.
    # - Besides the HNSW graph of all chunks, one per source type: a search for documents only
    #   (10 % of the store) walked the shared graph stepping over chat chunks, or compared every
    #   document; the type's own graph answers it like an unfiltered search. The shared index is
    #   dropped before the rewrite (which would rebuild it with the session's small
    #   maintenance_work_mem) and, where the embedder was bound already, all three are built after it.
    Migration(
        "m006_inline_full_text_and_vector_index_per_source_type",
        """
    DO $$
    DECLARE
        indexed boolean := to_regclass('chunks_embedding') IS NOT NULL;
    BEGIN
        DROP INDEX IF EXISTS chunks_embedding;
        ALTER TABLE chunks DROP COLUMN words, DROP COLUMN bigrams;
        ALTER TABLE chunks
            ADD COLUMN words tsvector GENERATED ALWAYS AS (to_tsvector('simple', search_words)) STORED,
            ADD COLUMN bigrams tsvector GENERATED ALWAYS AS (to_tsvector('simple', search_bigrams)) STORED,
            ALTER COLUMN words SET STORAGE MAIN,
            ALTER COLUMN bigrams SET STORAGE MAIN;
        CREATE INDEX chunks_words ON chunks USING gin (words);
        CREATE INDEX chunks_bigrams ON chunks USING gin (bigrams);
        -- The new columns have no statistics, and a rewrite is no change to autovacuum: without
        -- their most common elements full-text search would bound no common word.
        ANALYZE chunks;
        IF indexed THEN
            PERFORM set_config('maintenance_work_mem', '1GB', true);
            CREATE INDEX chunks_embedding ON chunks USING hnsw (embedding vector_cosine_ops)
                WITH (m = 16, ef_construction = 64);
            CREATE INDEX chunks_embedding_chat ON chunks USING hnsw (embedding vector_cosine_ops)
                WITH (m = 16, ef_construction = 64) WHERE source_type = 'chat';
            CREATE INDEX chunks_embedding_document ON chunks USING hnsw (embedding vector_cosine_ops)
                WITH (m = 16, ef_construction = 64) WHERE source_type = 'document';
        END IF;
    END
    $$;
        """,
    ),
]

# HNSW build parameters, written down so a rebuild matches. Real e5 vectors and queries are hard for a
# graph: similarities are crowded (a query's 1st and 10th nearest at .85 / .83) and the local intrinsic
# dimensionality is ~65 (synthetic clusters: ~20). At pgvector's defaults (m 16, ef_construction 64) recall@10
# at ef_search 100 was .67 on 100k vectors made from real ones, .39 on 1M. Twice the neighbours, built with
# a wider search, reach a given recall in about half the query time (100k, m 32 / ef_construction 200: .95 at
# ef_search 200, where m 16 needs 800), for ~5 times the build time (benchmarks/pg_hnsw.py; README).
# Stores built before keep their graphs until rebuilt (`drop_vector_index` + `create_vector_index`):
# a migration would rebuild a large store's graphs under the schema lock for hours.
HNSW_M = 32
HNSW_EF_CONSTRUCTION = 200
# The source types (the chunks table's CHECK). Besides the HNSW graph of every chunk, each type has
# its own: a search filtered to one type walks that graph only. (Only the per-type graphs, merged,
# would cost no more to build or keep, but an unfiltered search would walk two graphs: server CPU
# 3.7 -> 10.5 ms at 300k chunks.)
SOURCE_TYPES = ("chat", "document")
_HNSW = (
    "CREATE INDEX IF NOT EXISTS {} ON chunks USING hnsw (embedding vector_cosine_ops) "
    "WITH (m = {}, ef_construction = {})"
)
VECTOR_INDEXES: dict[str, sql.Composed] = {
    "chunks_embedding": sql.SQL(_HNSW).format(sql.Identifier("chunks_embedding"), HNSW_M, HNSW_EF_CONSTRUCTION),
    **{
        f"chunks_embedding_{kind}": sql.SQL(_HNSW + " WHERE source_type = {}").format(
            sql.Identifier(f"chunks_embedding_{kind}"), HNSW_M, HNSW_EF_CONSTRUCTION, sql.Literal(kind)
        )
        for kind in SOURCE_TYPES
    },
}
# Candidates the graph search keeps (hnsw.ef_search), at least k.
EF_SEARCH = 100
# Filtered search: exact over the P chunks that pass costs P distances; the graph walk must step
# over the chunks the filter drops, ~ef_search * N / P nodes of up to 2m neighbours each. Exact
# wins while P < sqrt(2m * ef_search * N): 25,000 of 100k chunks at m 32 and ef_search 100, 80,000 of 1M.
# Measured on 100k chunks (benchmarks/store_scale.py, m 16): a 10% filter answered by the graph took
# 31 ms at recall .95, exact search over the 10,000 chunks that pass is faster and exact.
EXACT_SEARCH_FLOOR = 2_000
# pgvector's default cap on the chunks an iterative scan visits; raised for big tables.
MAX_SCAN_TUPLES = 20_000
# How long the full-text term statistics (ANALYZE's most common elements) are reused.
TERM_STATISTICS_SECONDS = 300.0


def _clean(text: str) -> str:
    # PostgreSQL text cannot hold NUL; SQLite can. Keep the rest of the string.
    return text.replace("\x00", "\ufffd") if "\x00" in text else text


def _json(value: Any) -> Jsonb:
    # Same serialization as the SQLite store (default=str); jsonb refuses the \u0000 escape.
    return Jsonb(value, dumps=lambda obj: json.dumps(obj, ensure_ascii=False, default=str).replace("\\u0000", "\ufffd"))


def _aware(moment: datetime) -> datetime:
    # Naive filter times mean local time, as `datetime.timestamp()` reads them in the SQLite store.
    return datetime.fromtimestamp(moment.timestamp(), UTC)


def ts_query_text(tokens: Iterable[str]) -> str:
    """Tokens as a `websearch_to_tsquery` OR query; quoting keeps `-`, `or` and the like literal."""
    unique = dict.fromkeys(token.replace('"', " ").strip() for token in tokens)
    return " OR ".join(f'"{token}"' for token in unique if token)


def redact(url: str) -> str:
    """The connection URL without its password, for messages and stats."""
    try:
        params = conninfo_to_dict(url)
    except psycopg.ProgrammingError:
        return "PostgreSQL"
    params.pop("password", None)
    host, port, dbname = params.get("host", "localhost"), params.get("port", "5432"), params.get("dbname", "")
    user = f"{params['user']}@" if params.get("user") else ""
    return f"postgresql://{user}{host}:{port}/{dbname}"


# --- pgvector's wire format -------------------------------------------------------------------
# Binary: uint16 dimensions, uint16 unused, then big-endian float32s. Text: "[1,2.5,...]".


class _VectorBinaryDumper(Dumper):
    format = Format.BINARY

    def dump(self, obj: Any) -> Buffer:
        vector = np.asarray(obj, dtype=">f4").ravel()
        return struct.pack(">HH", vector.shape[0], 0) + vector.tobytes()


class _VectorBinaryLoader(Loader):
    format = Format.BINARY

    def load(self, data: Buffer) -> np.ndarray:
        (dim,) = struct.unpack_from(">H", data)
        return np.frombuffer(data, dtype=">f4", count=dim, offset=4).astype(np.float32)


class _VectorTextLoader(Loader):
    def load(self, data: Buffer) -> np.ndarray:
        body = bytes(data)[1:-1]
        return np.array(body.split(b","), dtype=np.float32) if body else np.zeros(0, dtype=np.float32)


# The type binary COPY sends each kind of column as (see `store.rows`; vectors: pgvector's own oid).
COPY_TYPES: dict[str, str] = {
    "key": "text", "text": "text", "time": "text", "int": "int4", "bool": "bool", "instant": "timestamptz",
    "list": "text[]", "json": "jsonb",
}  # fmt: skip


# Lists are text[], objects jsonb, instants timestamptz; text loses NUL, which PostgreSQL cannot hold.
VALUES = Values(encode={"text": _clean, "list": lambda items: [_clean(item) for item in items], "json": _json})
# Search filters: a naive time means local time, as in the SQLite store.
FILTER_VALUES = Values(encode={"text": _clean, "instant": _aware})


def _placeholders(statement: str) -> str:
    """`SQLStore`'s `?` placeholders as psycopg's; its statements hold no other `?` or `%`."""
    return statement.replace("?", "%s")


class _Writer:
    """A transaction's cursor taking `SQLStore`'s statements."""

    def __init__(self, cursor: psycopg.Cursor) -> None:
        self.cursor = cursor

    def execute(self, statement: str, params: Sequence[Any] = ()) -> psycopg.Cursor:
        return self.cursor.execute(_placeholders(statement), params)


class PostgresStore(SQLStore):
    """A store in one PostgreSQL database, selected by a `postgresql://` URL."""

    values = VALUES
    VECTOR_DIMS = "vector_dims(embedding)"

    def __init__(self, url: str, create: bool = True) -> None:
        self.url = self.address = url
        self.location = redact(url)
        try:
            given = conninfo_to_dict(url)
        except psycopg.ProgrammingError as error:
            raise StoreError(f"not a PostgreSQL connection URL: {self.location} ({error})") from error
        self.name = str(given.get("dbname") or given.get("user") or "postgres")
        defaults = {"application_name": "threadkeep", "connect_timeout": 10}
        try:
            # autocommit: reads see what is committed now and hold no snapshot or lock between
            # calls; writes open explicit transactions.
            self.db = psycopg.connect(
                url, autocommit=True, **{key: value for key, value in defaults.items() if key not in given}
            )
        except psycopg.OperationalError as error:
            reason = str(error).strip()
            hint = f" (create it with `createdb {given.get('dbname')}`)" if "does not exist" in reason else ""
            raise StoreError(f"cannot connect to PostgreSQL at {self.location}: {reason}{hint}") from error
        self._lock = threading.RLock()  # one connection: one statement sequence at a time
        try:
            # psycopg prepares a statement run 5 times, and PostgreSQL then may switch to a generic
            # plan, blind to the filter values: a search for the 10% of chunks that are documents
            # went from 2 ms to 19 ms that way (sequential scan instead of the source index).
            self.db.execute("SET plan_cache_mode = force_custom_plan")
            if not create and self._schema_version() == 0:
                raise StoreNotFound(self.location)
            self._migrate()
            self._register_vector_type()
        except BaseException:
            self.db.close()
            raise

    # --- setup ---------------------------------------------------------------------------------

    def _require_pgvector(self) -> None:
        row = self.db.execute("SELECT installed_version FROM pg_available_extensions WHERE name = 'vector'").fetchone()
        if row is None:
            raise StoreError(f"the PostgreSQL server at {self.location} does not have pgvector; {INSTALL_HINT}")

    def _migrate(self) -> None:
        self._require_pgvector()
        if self._schema_version() == len(MIGRATIONS):
            return
        with self.db.transaction():
            self.db.execute("SELECT pg_advisory_xact_lock(%s)", (SCHEMA_LOCK,))
            self.db.execute(
                "CREATE TABLE IF NOT EXISTS schema_migrations "
                "(version integer PRIMARY KEY, applied_at timestamptz NOT NULL DEFAULT now())"
            )
            for number, migration in pending(MIGRATIONS, self._schema_version(), self.location):
                try:
                    self.db.execute(migration.sql)
                except errors.InsufficientPrivilege as error:
                    raise StoreError(
                        f"cannot set up {self.location}: {str(error).strip()} "
                        "(a superuser must run `CREATE EXTENSION vector` in this database once)"
                    ) from error
                self.db.execute("INSERT INTO schema_migrations (version) VALUES (%s)", (number,))

    def _schema_version(self) -> int:
        if self.db.execute("SELECT to_regclass('schema_migrations')").fetchone()[0] is None:
            return 0
        return self.db.execute("SELECT coalesce(max(version), 0) FROM schema_migrations").fetchone()[0]

    def _register_vector_type(self) -> None:
        oid, version = self.db.execute(
            "SELECT t.oid, e.extversion FROM pg_extension e JOIN pg_type t "
            "ON t.typname = 'vector' AND t.typnamespace = e.extnamespace WHERE e.extname = 'vector'"
        ).fetchone()
        self._vector_oid = oid
        # hnsw.iterative_scan arrived in pgvector 0.8; before it, filtered searches go exact.
        self._iterative_scan = tuple(int(part) for part in version.split(".")[:2]) >= (0, 8)
        dumper = type("VectorDumper", (_VectorBinaryDumper,), {"oid": oid})
        self.db.adapters.register_dumper(np.ndarray, dumper)
        self.db.adapters.register_loader(oid, _VectorBinaryLoader)
        self.db.adapters.register_loader(oid, _VectorTextLoader)

    def close(self) -> None:
        self.db.close()

    @contextmanager
    def _transaction(self, lock_key: str | None = None) -> Iterator[psycopg.Cursor]:
        """One transaction; with `lock_key`, serialized against writers of the same key only."""
        with self._lock, self.db.transaction(), self.db.cursor() as cursor:
            if lock_key == SCHEMA:
                cursor.execute("SELECT pg_advisory_xact_lock(%s)", (SCHEMA_LOCK,))
            elif lock_key is not None:
                cursor.execute("SELECT pg_advisory_xact_lock(hashtextextended(%s, 0))", (lock_key,))
            yield cursor

    # --- the hooks of `SQLStore` -------------------------------------------------------------------

    def _rows(self, statement: str, params: Sequence[Any] = ()) -> list[tuple]:
        with self._lock, self.db.cursor(binary=True) as cursor:
            return cursor.execute(_placeholders(statement), params).fetchall()

    @contextmanager
    def _write(self, lock: str | None = None) -> Iterator[_Writer]:
        with self._transaction(lock) as cursor:
            yield _Writer(cursor)

    @contextmanager
    def _snapshot(self) -> Iterator[None]:
        with self._lock, self.db.transaction():
            self.db.execute("SET TRANSACTION ISOLATION LEVEL REPEATABLE READ, READ ONLY")
            yield

    @contextmanager
    def _claim(self, limit: int) -> Iterator[tuple[list[tuple], _Writer]]:
        # The claimed rows stay locked until the claim ends and every other claim skips them, so
        # processes on any machines share the work through the database alone. A claim waits for no
        # lock and writes only rows it holds, so claims never deadlock; an ingest rebuilding a claimed
        # conversation waits for the claim to end.
        with self._write() as writer:
            rows = writer.execute(
                "SELECT id, input_hash, embedding_input FROM chunks WHERE embedding IS NULL AND embedding_input <> '' "
                "ORDER BY input_hash LIMIT ? FOR UPDATE SKIP LOCKED",
                (limit,),
            ).fetchall()
            yield rows, writer

    def _insert(self, writer: _Writer, table: Table, rows: list[tuple]) -> None:
        """Rows go in by binary COPY, each column typed by its kind."""
        types = [self._vector_oid if column.kind == "vector" else COPY_TYPES[column.kind] for column in table.columns]
        with writer.cursor.copy(f"COPY {table.name} ({table.column_list}) FROM STDIN (FORMAT BINARY)") as copy:
            copy.set_types(types)
            for row in rows:
                copy.write_row(row)

    def _bind_vectors(self, writer: _Writer, dim: int) -> None:
        self._type_vector_column(writer.cursor, dim)

    def _type_vector_column(self, cursor: psycopg.Cursor, dim: int) -> None:
        """Give the vector column its dimension and build the HNSW indexes, which need it."""
        # PLAIN keeps each vector inside its row: out of line (pgvector's default, EXTERNAL, once a
        # row passes ~2 kB) every distance costs a TOAST fetch, measured 12 µs a row on exact
        # search. Past ~1,000 dimensions a plain vector would crowd the 8 kB page, so MAIN there.
        storage = sql.SQL("PLAIN" if dim <= 1000 else "MAIN")
        try:
            cursor.execute(
                sql.SQL(
                    "ALTER TABLE chunks ALTER COLUMN embedding TYPE vector({}), ALTER COLUMN embedding SET STORAGE {}"
                ).format(dim, storage)
            )
        except errors.DataException as error:
            raise StoreError(f"{self.location} holds vectors that are not {dim}-dimensional: {error}") from error
        self.create_vector_index(cursor)

    def create_vector_index(
        self, cursor: psycopg.Cursor | None = None, memory: str = "1GB", workers: int | None = None
    ) -> None:
        """(Re)build the HNSW indexes (all chunks, and each source type's). A bulk load drops them
        first: one build is much faster than growing the graphs insert by insert."""
        if cursor is not None:
            for statement in VECTOR_INDEXES.values():
                cursor.execute(statement)
            return
        with self._transaction() as own:
            # The build is many times faster while the graph fits in maintenance_work_mem;
            # set_config(..., true) lasts until the end of this transaction only. pgvector builds
            # in parallel with max_parallel_maintenance_workers helpers besides this backend.
            own.execute("SELECT set_config('maintenance_work_mem', %s, true)", (memory,))
            if workers is not None:
                own.execute("SELECT set_config('max_parallel_maintenance_workers', %s, true)", (str(workers),))
            for statement in VECTOR_INDEXES.values():
                own.execute(statement)

    def drop_vector_index(self) -> None:
        with self._transaction() as cursor:
            for name in VECTOR_INDEXES:
                cursor.execute(sql.SQL("DROP INDEX IF EXISTS {}").format(sql.Identifier(name)))

    # --- search ----------------------------------------------------------------------------------

    @staticmethod
    def _filter_sql(filters: SearchFilters) -> tuple[sql.Composable, list[object]]:
        conditions = filter_conditions(filters, FILTER_VALUES)
        clauses = [sql.SQL(f"{condition} %s") for condition, _ in conditions]
        return sql.SQL(" AND ").join([sql.SQL("TRUE"), *clauses]), [value for _, value in conditions]

    def _rows_estimate(self) -> float:
        """The planner's row count of chunks (no count(*) of the table), reused like the term statistics."""
        cached = getattr(self, "_row_estimate", None)
        if cached is not None and time.monotonic() - cached[0] < TERM_STATISTICS_SECONDS:
            return cached[1]
        with self._lock:
            rows = self.db.execute("SELECT greatest(reltuples, 0) FROM pg_class WHERE oid = 'chunks'::regclass")
            estimate = float(rows.fetchone()[0])
        self._row_estimate = (time.monotonic(), estimate)
        return estimate

    def _passing_estimate(self, cursor: psycopg.Cursor, where: sql.Composable, params: list[object]) -> float:
        """The planner's estimate of the chunks with a vector that pass the filter: planning only, no
        rows read (counting them read every passing row, 1.5 kB each)."""
        cursor.execute(
            sql.SQL("EXPLAIN (FORMAT JSON) SELECT 1 FROM chunks WHERE embedding IS NOT NULL AND {}").format(where),
            params,
        )
        return float(cursor.fetchone()[0][0]["Plan"]["Plan Rows"])

    def _graph_settings(self, ef_search: int, scan_limit: int) -> None:
        """The session's HNSW settings, sent only when they change: a search is then one round trip,
        which on a busy machine (each round trip waits for the server process to be scheduled) is
        most of its time. Settings for the session, not the transaction: an autocommit read needs
        no BEGIN / COMMIT around it. The iterative scan only acts on index scans that run short of
        rows, i.e. filtered ones; the exact path orders by an expression no index serves."""
        wanted = (ef_search, scan_limit)
        if getattr(self, "_graph_session", None) == wanted:
            return
        statements = [f"SET hnsw.ef_search = {int(ef_search)}"]
        if self._iterative_scan:
            # relaxed_order: keep walking the graph until k chunks pass the filter; the outer
            # ORDER BY restores exact order among what was found.
            statements += ["SET hnsw.iterative_scan = relaxed_order", f"SET hnsw.max_scan_tuples = {int(scan_limit)}"]
        self.db.execute("; ".join(statements))
        self._graph_session = wanted

    def dense_candidates(self, query: np.ndarray, k: int, filters: SearchFilters) -> list[tuple[str, float]]:
        if k <= 0:
            return []
        if filters.source_type is not None and filters.source_type not in SOURCE_TYPES:
            return []
        vector = np.asarray(query, dtype=np.float32)
        ef_search = max(EF_SEARCH, k)
        # Past `limit` passing chunks the graph beats exact search (see EXACT_SEARCH_FLOOR); more than
        # `limit` pass, so about ef_search * N / limit < limit visits find them.
        limit = max(EXACT_SEARCH_FLOOR, int(math.sqrt(2 * HNSW_M * ef_search * self._rows_estimate())))
        where, params = self._filter_sql(filters)
        # The source type picks the graph; the other filters are what the walk steps over.
        rest, rest_params = self._filter_sql(SearchFilters(filters.conversation, None, filters.since, filters.until))
        with self._lock, self.db.cursor() as cursor:
            self._graph_settings(ef_search, max(MAX_SCAN_TUPLES, 2 * limit))
            exact = bool(rest_params) and (
                not self._iterative_scan or self._passing_estimate(cursor, where, params) <= limit
            )
            if exact:
                # Exact: ordering by the similarity (not by `embedding <=> q`, which the HNSW index
                # serves) keeps the planner off the graph; the chunks that pass the filter, found
                # through the btree indexes, are compared one by one (≈ 1 µs each, measured).
                statement = sql.SQL(
                    "SELECT id, 1 - (embedding <=> %s) AS similarity FROM chunks "
                    "WHERE embedding IS NOT NULL AND {} ORDER BY similarity DESC LIMIT %s"
                ).format(where)
                self._search(cursor, statement, [vector, *params, k], vector)
            else:
                # The type as a literal, so the planner matches its partial index whatever the plan
                # cache does.
                kind = (
                    sql.SQL("source_type = {}").format(sql.Literal(filters.source_type))
                    if filters.source_type
                    else sql.SQL("TRUE")
                )
                statement = sql.SQL(
                    "WITH nearest AS MATERIALIZED (SELECT id, embedding <=> %s AS distance FROM chunks "
                    "WHERE embedding IS NOT NULL AND {} AND {} ORDER BY embedding <=> %s LIMIT %s) "
                    "SELECT id, 1 - distance FROM nearest ORDER BY distance"
                ).format(kind, rest)
                self._search(cursor, statement, [vector, *rest_params, vector, k], vector)
            return [(row[0], float(row[1])) for row in cursor.fetchall()]

    def _search(
        self, cursor: psycopg.Cursor, statement: sql.Composable, params: list[object], query: np.ndarray
    ) -> None:
        try:
            cursor.execute(statement, params)
        except errors.DataException as error:  # "different vector dimensions 384 and 256"
            raise StoreError(
                f"the query vector has {len(query)} dimensions, unlike the vectors in {self.location}; "
                f"search with the embedder the store was built with ({str(error).strip()})"
            ) from error

    def _term_statistics(self) -> dict[tuple[str, str], int]:
        """Chunks holding each common full-text term, from ANALYZE's most common elements of the tsvector
        columns (autovacuum keeps them current); a term not listed is rarer than every listed one."""
        cached = getattr(self, "_terms", None)
        if cached is not None and time.monotonic() - cached[0] < TERM_STATISTICS_SECONDS:
            return cached[1]
        counts: dict[tuple[str, str], int] = {}
        with self._lock:
            total = self.db.execute("SELECT greatest(reltuples, 0) FROM pg_class WHERE oid = 'chunks'::regclass")
            chunks = total.fetchone()[0]
            rows = self.db.execute(
                "SELECT attname, most_common_elems::text::text[], most_common_elem_freqs FROM pg_stats "
                "WHERE schemaname = current_schema() AND tablename = 'chunks' AND attname IN ('words', 'bigrams') "
                "AND most_common_elems IS NOT NULL"
            ).fetchall()
        for column, terms, frequencies in rows:
            counts.update({(column, term): int(f * chunks) for term, f in zip(terms, frequencies, strict=False)})
        self._terms = (time.monotonic(), counts)
        return counts

    def lexical_candidates(self, text: str, k: int, filters: SearchFilters) -> list[tuple[str, float]]:
        if k <= 0:
            return []
        statistics = self._term_statistics()
        plan = plan_terms(
            content_tokens(text), cjk_bigrams(text), lambda column, term: statistics.get((column, term), 0)
        )
        words, bigrams = ts_query_text(plan.words), ts_query_text(plan.bigrams)
        if not (words or bigrams):
            return []
        where, params = self._filter_sql(filters)
        # Word matches decide; bigram matches (weight BIGRAM_WEIGHT) back them up, as in SQLite.
        parts: list[sql.Composable] = []
        matches: list[sql.Composable] = []
        if words:
            parts.append(sql.SQL("ts_rank(words, websearch_to_tsquery('simple', %s))"))
            matches.append(sql.SQL("words @@ websearch_to_tsquery('simple', %s)"))
        if bigrams:
            parts.append(sql.SQL("{} * ts_rank(bigrams, websearch_to_tsquery('simple', %s))").format(BIGRAM_WEIGHT))
            matches.append(sql.SQL("bigrams @@ websearch_to_tsquery('simple', %s)"))
        rank_params = [value for value in (words, bigrams) if value]
        rank, match = sql.SQL(" + ").join(parts), sql.SQL(" OR ").join(matches)
        if plan.bounded:
            # Even the rarest term is in most chunks: rank its newest matches only.
            statement = sql.SQL(
                "SELECT id, {} AS rank FROM (SELECT id, words, bigrams FROM chunks WHERE ({}) AND {} "
                "ORDER BY occurred_ts DESC LIMIT %s) newest ORDER BY rank DESC, id LIMIT %s"
            ).format(rank, match, where)
            query_params = [*rank_params, *rank_params, *params, NEWEST_MATCHES, k]
        else:
            statement = sql.SQL(
                "SELECT id, {} AS rank FROM chunks WHERE ({}) AND {} ORDER BY rank DESC, id LIMIT %s"
            ).format(rank, match, where)
            query_params = [*rank_params, *rank_params, *params, k]
        with self._lock:
            return [(row[0], float(row[1])) for row in self.db.execute(statement, query_params)]
