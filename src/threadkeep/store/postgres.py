"""The server store: PostgreSQL with pgvector, for teams and for more than one writer.

Same tables and same behaviour as `SQLiteStore`; what differs is how:

- Vectors live in a `vector` column. It has no dimension until an embedder is
  bound: the first `bind_embedder` turns it into `vector(N)` and builds the
  HNSW index (cosine), both need the dimension, and both happen once, under the
  schema lock, in the same transaction that records the model.
- Chinese full text: the text is segmented in Python (jieba tokens and CJK
  bigrams, exactly as for SQLite) and stored space-separated; generated columns
  turn it into `tsvector`s with `to_tsvector('simple', ...)`, which splits on
  the spaces and keeps every token whole. GIN indexes serve `@@`.
- Every conversation or document is replaced in one transaction, serialized
  per conversation/document by an advisory lock, so writers on different
  conversations run side by side; rows go in by binary COPY. Under that lock a
  rebuild checks that the content hash it was computed from is still stored
  (`based_on`), so two writers of one conversation cannot undo each other.
- Filters apply inside the nearest-neighbour query: when few chunks pass them
  the search is exact over those, otherwise HNSW with iterative scan
  (pgvector >= 0.8) keeps scanning until enough chunks pass.
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

from threadkeep.model import Chunk, Conversation, Document, Message, Thread
from threadkeep.store.base import (
    BIGRAM_WEIGHT,
    CHUNK_COLUMNS,
    FORGOTTEN_KEYS,
    NEWEST_MATCHES,
    BasedOn,
    ConversationRecord,
    SearchFilters,
    StoreError,
    StoreNotFound,
    VectorClaim,
    chunk_from_row,
    input_hash,
    message_from_row,
    plan_terms,
    require_current,
    thread_rows,
)
from threadkeep.text import cjk_bigrams, content_tokens

INSTALL_HINT = "install it with `sudo bash scripts/install-pgvector.sh` (Debian) or your system's pgvector package"

# One key for schema changes (migrations, binding the embedder): any 64-bit constant
# no other application is likely to use ("thrdkeep").
SCHEMA_LOCK = 0x7468_7264_6B65_6570

MIGRATIONS: list[str] = [
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
    # Vectors are filled after the text is stored (`claim_pending`), and reused by input anywhere.
    """
    CREATE INDEX chunks_input ON chunks (input_hash);
    CREATE INDEX chunks_pending ON chunks (input_hash) WHERE embedding IS NULL AND embedding_input <> '';
    """,
]

# HNSW build parameters (pgvector's defaults, written down so a rebuild matches).
HNSW_M = 16
HNSW_EF_CONSTRUCTION = 64
# Candidates the graph search keeps (hnsw.ef_search), at least k.
EF_SEARCH = 100
# Filtered search: exact over the P chunks that pass costs P distances; the graph walk must step
# over the chunks the filter drops, ~ef_search * N / P nodes of up to 2m neighbours each. Exact
# wins while P < sqrt(2m * ef_search * N): 18,000 of 100k chunks at ef_search 100, 57,000 of 1M.
# Measured on 100k chunks (benchmarks/store_scale.py): a 10% filter answered by the graph took
# 31 ms at recall .95, exact search over the 10,000 chunks that pass is faster and exact.
EXACT_SEARCH_FLOOR = 2_000
# pgvector's default cap on the chunks an iterative scan visits; raised for big tables.
MAX_SCAN_TUPLES = 20_000
# How long the full-text term statistics (ANALYZE's most common elements) are reused.
TERM_STATISTICS_SECONDS = 300.0

CHUNK_COPY = (
    "COPY chunks (id, source_type, source_ref, title, text, embedding_input, input_hash, embedding, occurred_at, "
    "occurred_ts, started_at, heading_path, evidence_ids, resolution_state, has_unresolved_media, search_words, "
    "search_bigrams) FROM STDIN (FORMAT BINARY)"
)
MESSAGE_COPY = (
    "COPY messages (conversation, id, position, sender, sender_name, role, kind, sent_at, sent_ts, text, reply_to, "
    "mentions, recalled, edited_at, platform_thread, metadata, thread_id) FROM STDIN (FORMAT BINARY)"
)
MESSAGE_TYPES = [
    "text", "text", "int4", "text", "text", "text", "text", "text", "timestamptz", "text", "text",
    "text[]", "bool", "text", "text", "jsonb", "text",
]  # fmt: skip
THREAD_COPY = "COPY threads (id, conversation, message_ids, reply_to, chunk_id) FROM STDIN (FORMAT BINARY)"
THREAD_TYPES = ["text", "text", "text[]", "jsonb", "text"]


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


class PostgresStore:
    """A store in one PostgreSQL database, selected by a `postgresql://` URL."""

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
            version = self._schema_version()
            if version > len(MIGRATIONS):
                raise StoreError(f"{self.location} was written by a newer threadkeep (schema {version})")
            for number in range(version, len(MIGRATIONS)):
                try:
                    self.db.execute(MIGRATIONS[number])
                except errors.InsufficientPrivilege as error:
                    raise StoreError(
                        f"cannot set up {self.location}: {str(error).strip()} "
                        "(a superuser must run `CREATE EXTENSION vector` in this database once)"
                    ) from error
                self.db.execute("INSERT INTO schema_migrations (version) VALUES (%s)", (number + 1,))

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
            if lock_key is not None:
                cursor.execute("SELECT pg_advisory_xact_lock(hashtextextended(%s, 0))", (lock_key,))
            yield cursor

    def _meta(self, key: str) -> str | None:
        row = self.db.execute("SELECT value FROM meta WHERE key = %s", (key,)).fetchone()
        return row[0] if row else None

    def bind_embedder(self, name: str, dim: int) -> None:
        with self._lock:
            stored = self._meta("embedder")
            if stored is None:
                with self._transaction() as cursor:
                    cursor.execute("SELECT pg_advisory_xact_lock(%s)", (SCHEMA_LOCK,))
                    if self._meta("embedder") is None:  # another process may have bound it meanwhile
                        self._type_vector_column(cursor, dim)
                        cursor.execute(
                            "INSERT INTO meta VALUES ('embedder', %s), ('embedder_dim', %s)", (name, str(dim))
                        )
                stored = self._meta("embedder")
        if stored != name:
            raise StoreError(
                f"{self.location} holds vectors of {stored!r} but the configured embedder is {name!r}; "
                "use the same model (THREADKEEP_EMBEDDER) or a new store"
            )

    def _type_vector_column(self, cursor: psycopg.Cursor, dim: int) -> None:
        """Give the vector column its dimension and build the HNSW index, which needs it."""
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
        """(Re)build the HNSW index. A bulk load drops it first: one build is much faster than
        growing the graph insert by insert."""
        statement = sql.SQL(
            "CREATE INDEX IF NOT EXISTS chunks_embedding ON chunks USING hnsw (embedding vector_cosine_ops) "
            "WITH (m = {}, ef_construction = {})"
        ).format(HNSW_M, HNSW_EF_CONSTRUCTION)
        if cursor is not None:
            cursor.execute(statement)
            return
        with self._transaction() as own:
            # The build is many times faster while the graph fits in maintenance_work_mem;
            # set_config(..., true) lasts until the end of this transaction only. pgvector builds
            # in parallel with max_parallel_maintenance_workers helpers besides this backend.
            own.execute("SELECT set_config('maintenance_work_mem', %s, true)", (memory,))
            if workers is not None:
                own.execute("SELECT set_config('max_parallel_maintenance_workers', %s, true)", (str(workers),))
            own.execute(statement)

    def drop_vector_index(self) -> None:
        with self._transaction() as cursor:
            cursor.execute("DROP INDEX IF EXISTS chunks_embedding")

    # --- conversations -------------------------------------------------------------------------

    def conversation_record(self, ref: str) -> ConversationRecord | None:
        with self._lock:
            row = self.db.execute(
                "SELECT ref, title, kind, source_format, metadata, content_hash FROM conversations WHERE ref = %s",
                (ref,),
            ).fetchone()
        if row is None:
            return None
        return ConversationRecord(Conversation(row[0], row[1], row[2], row[3], row[4]), row[5])

    def load_messages(self, conversation: str) -> list[Message]:
        return self._messages(sql.SQL("m.conversation = %s"), [conversation])

    def read_conversation(self, ref: str) -> tuple[ConversationRecord | None, list[Message]]:
        """The conversation's record and its messages, read from one snapshot."""
        with self._lock, self.db.transaction():
            self.db.execute("SET TRANSACTION ISOLATION LEVEL REPEATABLE READ, READ ONLY")
            record = self.conversation_record(ref)
            return record, self.load_messages(ref) if record else []

    def load_thread(self, conversation: str, message_id: str) -> list[Message]:
        """Every message of the thread holding `message_id`, in time order (empty if unknown)."""
        return self._messages(
            sql.SQL(
                "m.conversation = %s AND m.id IN (SELECT unnest(t.message_ids) FROM messages x "
                "JOIN threads t ON t.id = x.thread_id WHERE x.conversation = %s AND x.id = %s)"
            ),
            [conversation, conversation, message_id],
        )

    def _messages(self, where: sql.Composable, params: list[object]) -> list[Message]:
        statement = sql.SQL(
            "SELECT m.id, m.conversation, m.sender, m.sent_at, m.text, m.kind, m.role, m.sender_name, m.reply_to, "
            "m.mentions, m.recalled, m.edited_at, m.platform_thread, m.metadata FROM messages m WHERE {} "
            "ORDER BY m.position"
        ).format(where)
        with self._lock:
            rows = self.db.execute(statement, params).fetchall()
        return [message_from_row(row) for row in rows]

    def embeddings_for(self, source_ref: str) -> dict[str, np.ndarray]:
        with self._lock, self.db.cursor(binary=True) as cursor:
            cursor.execute(
                "SELECT input_hash, embedding FROM chunks WHERE source_ref = %s AND embedding IS NOT NULL",
                (source_ref,),
            )
            return {key: vector for key, vector in cursor}

    def vectors_by_input(self, hashes: Iterable[str]) -> dict[str, np.ndarray]:
        keys = list(dict.fromkeys(hashes))
        if not keys:
            return {}
        with self._lock, self.db.cursor(binary=True) as cursor:
            return self._vectors_by_input(cursor, keys)

    @staticmethod
    def _vectors_by_input(cursor: psycopg.Cursor, keys: list[str]) -> dict[str, np.ndarray]:
        cursor.execute(
            "SELECT DISTINCT ON (input_hash) input_hash, embedding FROM chunks "
            "WHERE input_hash = ANY(%s) AND embedding IS NOT NULL",
            (keys,),
        )
        return dict(cursor.fetchall())

    def vector_coverage(self) -> tuple[int, int]:
        with self._lock:
            row = self.db.execute("SELECT count(embedding), count(*) FROM chunks WHERE embedding_input <> ''")
            embedded, total = row.fetchone()
        return embedded, total

    def pending_vectors(self) -> int:
        with self._lock:
            row = self.db.execute("SELECT count(*) FROM chunks WHERE embedding IS NULL AND embedding_input <> ''")
            return row.fetchone()[0]

    @contextmanager
    def claim_pending(self, limit: int) -> Iterator[VectorClaim]:
        # The claimed rows stay locked until the claim ends; every other process's claim skips them
        # (SKIP LOCKED), so several processes or machines share the work with nothing but the database.
        # A claim writes only the rows it locked, and waits for no lock, so claims never deadlock;
        # an ingest replacing a claimed conversation waits for the claim to end.
        with self._lock, self.db.transaction(), self.db.cursor(binary=True) as cursor:
            cursor.execute(
                "SELECT id, input_hash, embedding_input FROM chunks "
                "WHERE embedding IS NULL AND embedding_input <> '' ORDER BY input_hash LIMIT %s "
                "FOR UPDATE SKIP LOCKED",
                (limit,),
            )
            rows = cursor.fetchall()
            ids: dict[str, list[str]] = {}
            inputs: dict[str, str] = {}
            for chunk_id, key, text in rows:
                ids.setdefault(key, []).append(chunk_id)
                inputs[key] = text
            known = self._vectors_by_input(cursor, list(inputs)) if inputs else {}

            def fill(vectors: dict[str, np.ndarray]) -> int:
                pairs = [(chunk_id, vectors[key]) for key in vectors for chunk_id in ids.get(key, ())]
                if pairs:
                    with self.db.cursor() as writer:
                        writer.executemany("UPDATE chunks SET embedding = %s WHERE id = %s", [(v, i) for i, v in pairs])
                return len(pairs)

            reused = fill(known)
            yield VectorClaim({key: text for key, text in inputs.items() if key not in known}, reused, fill)

    def replace_conversation(
        self,
        conversation: Conversation,
        content_hash: str,
        messages: Sequence[Message],
        threads: Sequence[Thread],
        chunks: Sequence[Chunk],
        embeddings: dict[str, np.ndarray],
        based_on: BasedOn | None = None,
    ) -> None:
        ref = conversation.ref
        rows, thread_of = thread_rows(ref, threads, chunks)
        encoded_threads = [
            (row.id, row.conversation, list(row.message_ids), _json(row.reply_to), row.chunk_id) for row in rows
        ]
        with self._transaction(f"chat:{ref}") as cursor:
            # Read committed, after the conversation's lock: this sees the last writer's commit.
            cursor.execute("SELECT content_hash FROM conversations WHERE ref = %s", (ref,))
            current = cursor.fetchone()
            require_current(ref, based_on, current[0] if current else None)
            self._delete_chunks(cursor, "chat", ref)
            cursor.execute("DELETE FROM threads WHERE conversation = %s", (ref,))
            cursor.execute("DELETE FROM messages WHERE conversation = %s", (ref,))
            cursor.execute(
                "INSERT INTO conversations VALUES (%s, %s, %s, %s, %s, %s) ON CONFLICT (ref) DO UPDATE SET "
                "title = excluded.title, kind = excluded.kind, source_format = excluded.source_format, "
                "metadata = excluded.metadata, content_hash = excluded.content_hash",
                (
                    ref,
                    _clean(conversation.title),
                    conversation.kind,
                    conversation.source_format,
                    _json(conversation.metadata),
                    content_hash,
                ),
            )
            with cursor.copy(MESSAGE_COPY) as copy:
                copy.set_types(MESSAGE_TYPES)
                for position, m in enumerate(messages):
                    copy.write_row(
                        (
                            ref,
                            m.id,
                            position,
                            _clean(m.sender),
                            _clean(m.sender_name),
                            m.role,
                            m.kind,
                            m.sent_at.isoformat(),
                            m.sent_at,
                            _clean(m.text),
                            m.reply_to,
                            [_clean(mention) for mention in m.mentions],
                            m.recalled,
                            m.edited_at.isoformat() if m.edited_at else None,
                            m.platform_thread,
                            _json(m.metadata),
                            thread_of.get(m.id),
                        )
                    )
            with cursor.copy(THREAD_COPY) as copy:
                copy.set_types(THREAD_TYPES)
                for encoded in encoded_threads:
                    copy.write_row(encoded)
            self._insert_chunks(cursor, chunks, embeddings)

    # --- documents -----------------------------------------------------------------------------

    def document_hash(self, document_id: str) -> str | None:
        with self._lock:
            row = self.db.execute("SELECT content_hash FROM documents WHERE id = %s", (document_id,)).fetchone()
        return row[0] if row else None

    def find_document(self, path: str, file_hash: str) -> tuple[str, str] | None:
        with self._lock:
            for column, value in (("path", path), ("file_hash", file_hash)):
                found = self.db.execute(
                    sql.SQL('SELECT id, path FROM documents WHERE {} = %s ORDER BY id COLLATE "C" LIMIT 1').format(
                        sql.Identifier(column)
                    ),
                    (value,),
                ).fetchone()
                if found:
                    return found[0], found[1]
        return None

    def replace_document(
        self, document: Document, content_hash: str, chunks: Sequence[Chunk], embeddings: dict[str, np.ndarray]
    ) -> None:
        with self._transaction(f"document:{document.id}") as cursor:
            self._delete_chunks(cursor, "document", document.id)
            cursor.execute(
                "INSERT INTO documents (id, title, path, updated_at, content_hash, file_hash) "
                "VALUES (%s, %s, %s, %s, %s, %s) ON CONFLICT (id) DO UPDATE SET "
                "title = excluded.title, path = excluded.path, updated_at = excluded.updated_at, "
                "content_hash = excluded.content_hash, file_hash = excluded.file_hash",
                (
                    document.id,
                    _clean(document.title),
                    document.path,
                    document.updated_at.isoformat(),
                    content_hash,
                    document.content_hash,
                ),
            )
            self._insert_chunks(cursor, chunks, embeddings)

    def remove_document(self, document_id: str) -> bool:
        with self._transaction(f"document:{document_id}") as cursor:
            self._delete_chunks(cursor, "document", document_id)
            cursor.execute("DELETE FROM documents WHERE id = %s", (document_id,))
            return cursor.rowcount > 0

    def list_documents(self) -> list[dict[str, str]]:
        with self._lock:
            rows = self.db.execute('SELECT id, title, path, updated_at FROM documents ORDER BY id COLLATE "C"')
            return [{"id": row[0], "title": row[1], "path": row[2], "updated_at": row[3]} for row in rows]

    def list_conversations(self) -> list[dict[str, object]]:
        # First and last by time, given as stored (with the sender's own UTC offset), as SQLite does.
        with self._lock:
            rows = self.db.execute(
                "SELECT c.ref, c.title, c.kind, c.source_format, "
                "(SELECT count(*) FROM messages m WHERE m.conversation = c.ref), "
                "(SELECT m.sent_at FROM messages m WHERE m.conversation = c.ref ORDER BY m.sent_ts LIMIT 1), "
                "(SELECT m.sent_at FROM messages m WHERE m.conversation = c.ref ORDER BY m.sent_ts DESC LIMIT 1), "
                'c.metadata FROM conversations c ORDER BY c.ref COLLATE "C"'
            ).fetchall()
        keys = ("ref", "title", "kind", "source_format", "messages", "first_message_at", "last_message_at")
        return [{**dict(zip(keys, row[:7], strict=True)), "metadata": row[7]} for row in rows]

    def forget_conversation(self, ref: str, forgotten_at: datetime) -> dict[str, object] | None:
        with self._transaction(f"chat:{ref}") as cursor:
            row = cursor.execute(
                "SELECT c.title, c.source_format, (SELECT count(*) FROM messages m WHERE m.conversation = c.ref) "
                "FROM conversations c WHERE c.ref = %s",
                (ref,),
            ).fetchone()
            if row is None:
                return None
            self._delete_chunks(cursor, "chat", ref)
            for table in ("threads", "messages", "review_flags"):
                cursor.execute(sql.SQL("DELETE FROM {} WHERE conversation = %s").format(sql.Identifier(table)), (ref,))
            cursor.execute("DELETE FROM conversations WHERE ref = %s", (ref,))
            record = (ref, row[0], row[1], row[2], forgotten_at.isoformat())
            cursor.execute("INSERT INTO forgotten VALUES (%s, %s, %s, %s, %s)", record)
        return dict(zip(FORGOTTEN_KEYS, record, strict=True))

    def forgotten_conversations(self) -> list[dict[str, object]]:
        with self._lock:
            rows = self.db.execute(
                "SELECT conversation, title, source_format, messages, forgotten_at FROM forgotten "
                'ORDER BY forgotten_at COLLATE "C", conversation COLLATE "C"'
            ).fetchall()
        return [dict(zip(FORGOTTEN_KEYS, row, strict=True)) for row in rows]

    # --- review and integrity ------------------------------------------------------------------

    def flag_for_review(self, conversation: str, message_id: str, reason: str, flagged_at: datetime) -> None:
        with self._transaction() as cursor:
            cursor.execute(
                "INSERT INTO review_flags VALUES (%s, %s, %s, %s) ON CONFLICT DO NOTHING",
                (conversation, message_id, _clean(reason), flagged_at.isoformat()),
            )

    def review_items(self) -> list[dict[str, object]]:
        with self._lock:
            rows = self.db.execute(
                "SELECT f.conversation, f.message_id, f.reason, f.flagged_at, m.sender_name, m.sender, m.sent_at, "
                "m.text FROM review_flags f LEFT JOIN messages m ON m.conversation = f.conversation "
                "AND m.id = f.message_id "
                'ORDER BY f.flagged_at COLLATE "C", f.conversation COLLATE "C", f.message_id COLLATE "C"'
            ).fetchall()
        keys = ("conversation", "message_id", "reason", "flagged_at", "sender_name", "sender", "sent_at", "text")
        return [dict(zip(keys, row, strict=True)) for row in rows]

    def integrity_problems(self) -> list[str]:
        """What is wrong with the stored data, as readable sentences (empty when all is well)."""
        problems: list[str] = []
        with self._lock:
            for chunk_id, missing in self.db.execute(
                "SELECT c.id, array_agg(e.mid ORDER BY e.n) FROM chunks c "
                "CROSS JOIN LATERAL unnest(c.evidence_ids) WITH ORDINALITY AS e(mid, n) "
                "WHERE c.source_type = 'chat' AND NOT EXISTS "
                "(SELECT 1 FROM messages m WHERE m.conversation = c.source_ref AND m.id = e.mid) "
                'GROUP BY c.id ORDER BY c.id COLLATE "C"'
            ):
                problems.append(f"chunk {chunk_id} cites messages not in the store: {', '.join(missing[:5])}")
            for thread_id, missing in self.db.execute(
                "SELECT t.id, array_agg(e.mid ORDER BY e.n) FROM threads t "
                "CROSS JOIN LATERAL unnest(t.message_ids) WITH ORDINALITY AS e(mid, n) WHERE NOT EXISTS "
                "(SELECT 1 FROM messages m WHERE m.conversation = t.conversation AND m.id = e.mid) "
                'GROUP BY t.id ORDER BY t.id COLLATE "C"'
            ):
                problems.append(f"thread {thread_id} lists messages not in the store: {', '.join(missing[:5])}")
            for conversation, mid, seen in self.db.execute(
                "WITH membership AS (SELECT t.conversation, mid, count(*) AS n FROM threads t "
                "CROSS JOIN LATERAL unnest(t.message_ids) AS mid GROUP BY t.conversation, mid) "
                "SELECT m.conversation, m.id, coalesce(s.n, 0) FROM messages m LEFT JOIN membership s "
                "ON s.conversation = m.conversation AND s.mid = m.id "
                "WHERE coalesce(s.n, 0) <> 1 AND NOT (m.recalled AND s.n IS NULL) "
                "ORDER BY m.conversation, m.position"
            ):
                problems.append(f"message {conversation}/{mid} belongs to {seen} threads")
            model, dim = self._meta("embedder"), self._meta("embedder_dim")
            if dim is not None:
                wrong = self.db.execute(
                    "SELECT count(*) FROM chunks WHERE embedding IS NOT NULL AND vector_dims(embedding) <> %s",
                    (int(dim),),
                ).fetchone()[0]
                if wrong:
                    problems.append(f"{wrong} vectors do not have the {dim} dimensions of {model}")
            unsearchable = self.db.execute(
                "SELECT count(*) FROM chunks WHERE embedding_input <> '' AND (words IS NULL OR bigrams IS NULL)"
            ).fetchone()[0]
            if unsearchable:
                problems.append(f"{unsearchable} indexed chunks have no full-text entry")
        return problems

    # --- chunks --------------------------------------------------------------------------------

    def _delete_chunks(self, cursor: psycopg.Cursor, source_type: str, source_ref: str) -> None:
        cursor.execute("DELETE FROM chunks WHERE source_type = %s AND source_ref = %s", (source_type, source_ref))

    def _insert_chunks(
        self, cursor: psycopg.Cursor, chunks: Sequence[Chunk], embeddings: dict[str, np.ndarray]
    ) -> None:
        types = [
            "text", "text", "text", "text", "text", "text", "text", self._vector_oid, "text", "timestamptz",
            "text", "text[]", "text[]", "text", "bool", "text", "text",
        ]  # fmt: skip
        with cursor.copy(CHUNK_COPY) as copy:
            copy.set_types(types)
            for chunk in chunks:
                copy.write_row(self._chunk_row(chunk, embeddings))

    @staticmethod
    def _chunk_row(chunk: Chunk, embeddings: dict[str, np.ndarray]) -> tuple:
        key = input_hash(chunk.embedding_input)
        indexed = bool(chunk.embedding_input)
        vector = embeddings.get(key) if indexed else None
        return (
            chunk.id,
            chunk.source_type,
            chunk.source_ref,
            _clean(chunk.title),
            _clean(chunk.text),
            _clean(chunk.embedding_input),
            key,
            None if vector is None else np.asarray(vector, dtype=np.float32),
            chunk.occurred_at.isoformat(),
            chunk.occurred_at,
            chunk.started_at.isoformat() if chunk.started_at else None,
            None if chunk.heading_path is None else [_clean(part) for part in chunk.heading_path],
            None if chunk.evidence_ids is None else list(chunk.evidence_ids),
            chunk.resolution_state,
            chunk.has_unresolved_media,
            _clean(" ".join(content_tokens(chunk.indexed_text))) if indexed else None,
            " ".join(cjk_bigrams(chunk.indexed_text)) if indexed else None,
        )

    @staticmethod
    def _filter_sql(filters: SearchFilters) -> tuple[sql.Composable, list[object]]:
        clauses: list[sql.Composable] = []
        params: list[object] = []
        if filters.conversation:
            clauses.append(sql.SQL("source_ref = %s"))
            params.append(filters.conversation)
        if filters.source_type:
            clauses.append(sql.SQL("source_type = %s"))
            params.append(filters.source_type)
        if filters.since:
            clauses.append(sql.SQL("occurred_ts >= %s"))
            params.append(_aware(filters.since))
        if filters.until:
            clauses.append(sql.SQL("occurred_ts <= %s"))
            params.append(_aware(filters.until))
        return sql.SQL(" AND ").join([sql.SQL("TRUE"), *clauses]), params

    def dense_candidates(self, query: np.ndarray, k: int, filters: SearchFilters) -> list[tuple[str, float]]:
        if k <= 0:
            return []
        vector = np.asarray(query, dtype=np.float32)
        where, params = self._filter_sql(filters)
        filtered = bool(params)
        ef_search = max(EF_SEARCH, k)
        with self._transaction() as cursor:
            exact = False
            if filtered:
                # The planner's row estimate is enough to size the threshold; no count(*) of the table.
                cursor.execute("SELECT greatest(reltuples, 0) FROM pg_class WHERE oid = 'chunks'::regclass")
                limit = max(EXACT_SEARCH_FLOOR, int(math.sqrt(2 * HNSW_M * ef_search * cursor.fetchone()[0])))
                cursor.execute(
                    sql.SQL(
                        "SELECT count(*) FROM (SELECT 1 FROM chunks WHERE embedding IS NOT NULL AND {} LIMIT %s) s"
                    ).format(where),
                    [*params, limit + 1],
                )
                exact = cursor.fetchone()[0] <= limit or not self._iterative_scan
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
                cursor.execute("SELECT set_config('hnsw.ef_search', %s, true)", (str(ef_search),))
                if filtered:
                    # relaxed_order: keep walking the graph until k chunks pass the filter; the
                    # outer ORDER BY restores exact order among what was found. More than `limit`
                    # chunks pass, so about ef_search * N / limit < limit visits find them.
                    cursor.execute("SELECT set_config('hnsw.iterative_scan', 'relaxed_order', true)")
                    cursor.execute(
                        "SELECT set_config('hnsw.max_scan_tuples', %s, true)", (str(max(MAX_SCAN_TUPLES, 2 * limit)),)
                    )
                statement = sql.SQL(
                    "WITH nearest AS MATERIALIZED (SELECT id, embedding <=> %s AS distance FROM chunks "
                    "WHERE embedding IS NOT NULL AND {} ORDER BY embedding <=> %s LIMIT %s) "
                    "SELECT id, 1 - distance FROM nearest ORDER BY distance"
                ).format(where)
                self._search(cursor, statement, [vector, *params, vector, k], vector)
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

    def recent_chat_chunks(self, resolution_state: str, limit: int) -> list[Chunk]:
        with self._lock:
            rows = self.db.execute(
                f"SELECT {CHUNK_COLUMNS} FROM chunks WHERE source_type = 'chat' AND resolution_state = %s "
                "ORDER BY occurred_ts DESC LIMIT %s",
                (resolution_state, limit),
            ).fetchall()
        return [chunk_from_row(row) for row in rows]

    def get_chunks(self, ids: Iterable[str]) -> dict[str, Chunk]:
        ids = list(dict.fromkeys(ids))
        if not ids:
            return {}
        with self._lock:
            rows = self.db.execute(f"SELECT {CHUNK_COLUMNS} FROM chunks WHERE id = ANY(%s)", (ids,)).fetchall()
        return {row[0]: chunk_from_row(row) for row in rows}

    def stats(self) -> dict[str, object]:
        with self._lock:
            row = self.db.execute(
                "SELECT (SELECT count(*) FROM conversations), (SELECT count(*) FROM messages), "
                "(SELECT count(*) FROM threads), (SELECT count(*) FROM chunks), "
                "(SELECT count(*) FROM chunks WHERE source_type = 'chat'), (SELECT count(*) FROM documents), "
                "(SELECT count(*) FROM chunks WHERE source_type = 'document'), "
                "(SELECT count(*) FROM chunks WHERE embedding IS NOT NULL)"
            ).fetchone()
            embedder = self._meta("embedder")
        keys = (
            "conversations",
            "messages",
            "threads",
            "chunks",
            "chat_chunks",
            "documents",
            "document_chunks",
            "embedded_chunks",
        )
        return {"location": self.location, "embedder": embedder, **dict(zip(keys, row, strict=True))}
