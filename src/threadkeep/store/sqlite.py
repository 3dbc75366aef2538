"""The embedded store: one SQLite file, full text in FTS5, vectors searched with numpy.

Everything a store does alike is in `store.sql`; this module holds how SQLite does it.
Chinese full text works because the text is segmented in Python (jieba) and the tokens are
stored space-separated in the chunk's `search_words` / `search_bigrams` columns; triggers copy
them into a contentless FTS5 `unicode61` index in the same transaction as the chunk, so no
writer can forget it. Vectors are float32 blobs in the chunks table, the source of truth.
Searches go through a derived index file beside the database (`store.vectors`: int8 inverted
lists, memory-mapped, so opening costs milliseconds) and re-score the best candidates with the
float32 vectors. Triggers record every chunk whose vector changes in `vector_log`, in the same
transaction as the change; the index replays that log and is rebuilt whenever it is missing,
damaged, or cannot be brought up to date. Both the full-text index and the vector file name a
chunk by its `seq`, an INTEGER PRIMARY KEY, so VACUUM cannot renumber them. The stdlib
`sqlite3` here cannot load extensions, so none is needed.
"""

from __future__ import annotations

import json
import sqlite3
import time
from collections.abc import Callable, Iterable, Iterator, Sequence
from contextlib import contextmanager, suppress
from datetime import datetime
from pathlib import Path
from typing import Any

import numpy as np

from threadkeep.store.base import (
    BIGRAM_WEIGHT,
    NEWEST_MATCHES,
    POSTINGS_BUDGET,
    SearchFilters,
    StoreError,
    StoreNotFound,
    plan_terms,
)
from threadkeep.store.rows import Table, Values
from threadkeep.store.sql import Migration, SQLStore, filter_conditions, pending
from threadkeep.store.vectors import FOLD_AT, Rows, SidecarInvalid, VectorIndex
from threadkeep.store.vectors import build as build_vectors
from threadkeep.store.vectors import load as load_vectors
from threadkeep.store.vectors import save as save_vectors
from threadkeep.text import cjk_bigrams, content_tokens

MIGRATIONS: list[Migration] = [
    Migration(
        "m001_initial",
        """
    CREATE TABLE meta (key TEXT PRIMARY KEY, value TEXT NOT NULL);
    CREATE TABLE conversations (
        ref TEXT PRIMARY KEY,
        title TEXT NOT NULL,
        kind TEXT NOT NULL CHECK (kind IN ('group', 'direct', 'assistant')),
        source_format TEXT NOT NULL,
        metadata TEXT NOT NULL,
        content_hash TEXT NOT NULL
    );
    CREATE TABLE messages (
        conversation TEXT NOT NULL REFERENCES conversations(ref),
        id TEXT NOT NULL,
        position INTEGER NOT NULL,
        sender TEXT NOT NULL,
        sender_name TEXT NOT NULL,
        role TEXT NOT NULL,
        kind TEXT NOT NULL,
        sent_at TEXT NOT NULL,
        text TEXT NOT NULL,
        reply_to TEXT,
        mentions TEXT NOT NULL,
        recalled INTEGER NOT NULL,
        edited_at TEXT,
        platform_thread TEXT,
        metadata TEXT NOT NULL,
        thread_id TEXT,
        PRIMARY KEY (conversation, id)
    );
    CREATE TABLE threads (
        id TEXT PRIMARY KEY,
        conversation TEXT NOT NULL REFERENCES conversations(ref),
        message_ids TEXT NOT NULL,
        reply_to TEXT NOT NULL,
        chunk_id TEXT
    );
    CREATE INDEX threads_conversation ON threads(conversation);
    CREATE TABLE chunks (
        id TEXT NOT NULL UNIQUE,
        source_type TEXT NOT NULL CHECK (source_type IN ('document', 'chat')),
        source_ref TEXT NOT NULL,
        title TEXT NOT NULL,
        text TEXT NOT NULL,
        embedding_input TEXT NOT NULL,
        input_hash TEXT NOT NULL,
        embedding BLOB,
        occurred_at TEXT NOT NULL,
        occurred_ts REAL NOT NULL,
        started_at TEXT,
        heading_path TEXT,
        evidence_ids TEXT,
        resolution_state TEXT CHECK (resolution_state IN ('resolved', 'workaround', 'open')),
        has_unresolved_media INTEGER NOT NULL DEFAULT 0,
        CONSTRAINT chunk_source_shape CHECK (
            (source_type = 'document' AND heading_path IS NOT NULL AND resolution_state IS NULL)
            OR (source_type = 'chat' AND resolution_state IS NOT NULL AND evidence_ids IS NOT NULL
                AND json_array_length(evidence_ids) > 0)
        ),
        CONSTRAINT embedded_when_indexed CHECK (embedding IS NULL OR embedding_input <> '')
    );
    CREATE INDEX chunks_source ON chunks(source_type, source_ref);
    CREATE VIRTUAL TABLE chunks_fts USING fts5(words, bigrams, tokenize = "unicode61 tokenchars '.-_'");
        """,
    ),
    Migration(
        "m002_documents_and_review",
        """
    CREATE TABLE documents (
        id TEXT PRIMARY KEY,
        title TEXT NOT NULL,
        path TEXT NOT NULL,
        updated_at TEXT NOT NULL,
        content_hash TEXT NOT NULL
    );
    CREATE TABLE review_flags (
        conversation TEXT NOT NULL,
        message_id TEXT NOT NULL,
        reason TEXT NOT NULL,
        flagged_at TEXT NOT NULL,
        PRIMARY KEY (conversation, message_id, reason)
    );
        """,
    ),
    Migration(
        "m003_vector_log",
        """
    CREATE TABLE vector_log (seq INTEGER PRIMARY KEY AUTOINCREMENT, chunk INTEGER NOT NULL);
    CREATE TRIGGER chunks_vector_added AFTER INSERT ON chunks WHEN new.embedding IS NOT NULL
    BEGIN INSERT INTO vector_log (chunk) VALUES (new.rowid); END;
    CREATE TRIGGER chunks_vector_removed AFTER DELETE ON chunks WHEN old.embedding IS NOT NULL
    BEGIN INSERT INTO vector_log (chunk) VALUES (old.rowid); END;
    CREATE TRIGGER chunks_vector_changed AFTER UPDATE OF embedding, source_type, source_ref, occurred_ts ON chunks
    WHEN old.embedding IS NOT NULL OR new.embedding IS NOT NULL
    BEGIN INSERT INTO vector_log (chunk) VALUES (old.rowid); END;
    INSERT OR IGNORE INTO meta VALUES ('store_id', lower(hex(randomblob(16))));
    CREATE VIRTUAL TABLE chunks_fts_terms USING fts5vocab(chunks_fts, 'col');
        """,
    ),
    # A document is known again by its file's location or content (`find_document`); a
    # conversation forgotten on request leaves a record of what went.
    Migration(
        "m004_known_documents_and_forgotten",
        """
    ALTER TABLE documents ADD COLUMN file_hash TEXT;
    UPDATE documents SET file_hash = substr(content_hash, instr(content_hash, ':') + 1, 64);
    CREATE INDEX documents_path ON documents(path);
    CREATE INDEX documents_file_hash ON documents(file_hash);
    CREATE TABLE forgotten (
        conversation TEXT NOT NULL,
        title TEXT NOT NULL,
        source_format TEXT NOT NULL,
        messages INTEGER NOT NULL,
        forgotten_at TEXT NOT NULL
    );
        """,
    ),
    # Messages get their real time (first and last message of a listing compare moments, not
    # text with different UTC offsets); chunks get a `seq` VACUUM cannot renumber, and their
    # full-text terms, which triggers keep in a contentless index (the old index held them).
    Migration(
        "m005_message_time_chunk_seq_full_text_triggers",
        """
    ALTER TABLE messages ADD COLUMN sent_ts REAL;
    UPDATE messages SET sent_ts = (julianday(sent_at) - 2440587.5) * 86400.0;
    CREATE INDEX messages_time ON messages (conversation, sent_ts);
    CREATE INDEX messages_thread ON messages (conversation, thread_id);
    CREATE TABLE chunks_new (
        seq INTEGER PRIMARY KEY,
        id TEXT NOT NULL UNIQUE,
        source_type TEXT NOT NULL CHECK (source_type IN ('document', 'chat')),
        source_ref TEXT NOT NULL,
        title TEXT NOT NULL,
        text TEXT NOT NULL,
        embedding_input TEXT NOT NULL,
        input_hash TEXT NOT NULL,
        embedding BLOB,
        occurred_at TEXT NOT NULL,
        occurred_ts REAL NOT NULL,
        started_at TEXT,
        heading_path TEXT,
        evidence_ids TEXT,
        resolution_state TEXT CHECK (resolution_state IN ('resolved', 'workaround', 'open')),
        has_unresolved_media INTEGER NOT NULL DEFAULT 0,
        search_words TEXT,
        search_bigrams TEXT,
        CONSTRAINT chunk_source_shape CHECK (
            (source_type = 'document' AND heading_path IS NOT NULL AND resolution_state IS NULL)
            OR (source_type = 'chat' AND resolution_state IS NOT NULL AND evidence_ids IS NOT NULL
                AND json_array_length(evidence_ids) > 0)
        ),
        CONSTRAINT embedded_when_indexed CHECK (embedding IS NULL OR embedding_input <> '')
    );
    INSERT INTO chunks_new (seq, id, source_type, source_ref, title, text, embedding_input, input_hash, embedding,
        occurred_at, occurred_ts, started_at, heading_path, evidence_ids, resolution_state, has_unresolved_media,
        search_words, search_bigrams)
    SELECT c.rowid, c.id, c.source_type, c.source_ref, c.title, c.text, c.embedding_input, c.input_hash,
        c.embedding, c.occurred_at, c.occurred_ts, c.started_at, c.heading_path, c.evidence_ids,
        c.resolution_state, c.has_unresolved_media, f.words, f.bigrams
    FROM chunks c LEFT JOIN chunks_fts f ON f.rowid = c.rowid;
    DROP TABLE chunks_fts_terms;
    DROP TABLE chunks_fts;
    DROP TABLE chunks;
    ALTER TABLE chunks_new RENAME TO chunks;
    CREATE INDEX chunks_source ON chunks(source_type, source_ref);
    CREATE TRIGGER chunks_vector_added AFTER INSERT ON chunks WHEN new.embedding IS NOT NULL
    BEGIN INSERT INTO vector_log (chunk) VALUES (new.seq); END;
    CREATE TRIGGER chunks_vector_removed AFTER DELETE ON chunks WHEN old.embedding IS NOT NULL
    BEGIN INSERT INTO vector_log (chunk) VALUES (old.seq); END;
    CREATE TRIGGER chunks_vector_changed AFTER UPDATE OF embedding, source_type, source_ref, occurred_ts ON chunks
    WHEN old.embedding IS NOT NULL OR new.embedding IS NOT NULL
    BEGIN INSERT INTO vector_log (chunk) VALUES (old.seq); END;
    CREATE VIRTUAL TABLE chunks_fts USING fts5(words, bigrams, content = '', tokenize = "unicode61 tokenchars '.-_'");
    INSERT INTO chunks_fts (rowid, words, bigrams)
    SELECT seq, search_words, search_bigrams FROM chunks WHERE search_words IS NOT NULL;
    CREATE TRIGGER chunks_fts_added AFTER INSERT ON chunks WHEN new.search_words IS NOT NULL
    BEGIN INSERT INTO chunks_fts (rowid, words, bigrams) VALUES (new.seq, new.search_words, new.search_bigrams); END;
    CREATE TRIGGER chunks_fts_removed AFTER DELETE ON chunks WHEN old.search_words IS NOT NULL
    BEGIN
        INSERT INTO chunks_fts (chunks_fts, rowid, words, bigrams)
        VALUES ('delete', old.seq, old.search_words, old.search_bigrams);
    END;
    CREATE TRIGGER chunks_fts_changed AFTER UPDATE OF search_words, search_bigrams ON chunks
    BEGIN
        INSERT INTO chunks_fts (chunks_fts, rowid, words, bigrams)
        SELECT 'delete', old.seq, old.search_words, old.search_bigrams WHERE old.search_words IS NOT NULL;
        INSERT INTO chunks_fts (rowid, words, bigrams)
        SELECT new.seq, new.search_words, new.search_bigrams WHERE new.search_words IS NOT NULL;
    END;
        """,
    ),
    # Vectors are made after the text (`claim_pending`) and reused by input across the store.
    Migration(
        "m006_pending_vectors",
        """
    CREATE INDEX chunks_input ON chunks(input_hash);
    CREATE INDEX chunks_pending ON chunks(input_hash) WHERE embedding IS NULL AND embedding_input <> '';
    CREATE INDEX chunks_unindexed ON chunks(input_hash) WHERE embedding_input = '';
        """,
    ),
]


def _statements(script: str) -> Iterator[str]:
    """The statements of a migration; trigger bodies hold semicolons of their own."""
    statement = ""
    for part in script.split(";"):
        statement += part + ";"
        if sqlite3.complete_statement(statement):
            if statement.strip(" \n;"):
                yield statement
            statement = ""


# Bigrams back up word matches; they count for less so word matches keep deciding the ranking.
def fts_query(tokens: Iterable[str]) -> str:
    unique = dict.fromkeys(token.replace('"', '""') for token in tokens)
    return " OR ".join(f'"{token}"' for token in unique)


# Terms whose full-text counts a store remembers (`SQLiteStore._term_counts`) before starting afresh.
TERM_COUNTS = 4_096

SQLITE_HEADER = b"SQLite format 3\x00"
OPEN_TIMEOUT_S = 30


def check_location(path: Path, create: bool) -> None:
    """Refuse, before anything is written, a location that is not (and cannot become) a store file."""
    if path.is_dir():
        raise StoreError(f"{path} is a folder, not a store file; name a file in it, e.g. {path / 'threadkeep.db'}")
    if path.exists():
        try:
            with path.open("rb") as file:
                header = file.read(len(SQLITE_HEADER))
        except OSError as error:
            raise StoreError(f"cannot read the store {path}: {error.strerror or error}") from error
        if header and header != SQLITE_HEADER:
            raise StoreError(f"{path} is not a threadkeep store (the file is not a SQLite database)")
        if header or create:
            return
    if not create:
        raise StoreNotFound(str(path))
    if path.parent.exists() and not path.parent.is_dir():
        raise StoreError(f"cannot create the store {path}: {path.parent} is a file, not a folder")


_EMPTY_JSON = {list: "[]", tuple: "[]", dict: "{}"}


def _json_text(encode: Callable[[Any], str]) -> Callable[[Any], str]:
    """`encode`, with an empty list or object spelt at once: most messages have no mentions and no
    metadata, and the encoder sets itself up again for every value it encodes."""

    def text(value: Any) -> str:
        if not value:
            empty = _EMPTY_JSON.get(type(value))
            if empty is not None:
                return empty
        return encode(value)

    return text


# SQLite holds lists and objects as JSON text, instants as Unix seconds, vectors as float32 blobs.
VALUES = Values(
    encode={
        # Encoders made once: `json.dumps` with any option makes a new one for every value.
        "list": _json_text(json.JSONEncoder(ensure_ascii=False).encode),
        "json": _json_text(json.JSONEncoder(ensure_ascii=False, default=str).encode),
        "instant": datetime.timestamp,
        "vector": np.ndarray.tobytes,
        "bool": int,
    },
    decode={"list": json.loads, "json": json.loads, "vector": lambda blob: np.frombuffer(blob, dtype=np.float32)},
)


class SQLiteStore(SQLStore):
    values = VALUES
    VECTOR_DIMS = "length(embedding) / 4.0"

    def __init__(self, path: Path, create: bool = True) -> None:
        check_location(path, create)
        path.parent.mkdir(parents=True, exist_ok=True)
        self.path = path
        self.address = self.location = str(path)
        self.name = path.name
        self.db = sqlite3.connect(path, timeout=OPEN_TIMEOUT_S, isolation_level=None, check_same_thread=False)
        try:
            self._check_schema(create)
            self._enter_wal()
            self.db.execute("PRAGMA synchronous = NORMAL")
            self.db.execute("PRAGMA foreign_keys = ON")
            self._migrate()
        except sqlite3.DatabaseError as error:
            self.db.close()
            raise StoreError(f"{path} is not a usable threadkeep store ({error})") from error
        except BaseException:
            self.db.close()
            raise
        self._vectors: VectorIndex | None = None
        self._wrote_vectors = False
        self._counted: dict[tuple[str, str], int] = {}
        self._counted_at: tuple[int, int] | None = None

    def _check_schema(self, create: bool) -> None:
        # One read transaction, so both answers come from the same moment: another process may be
        # creating this very store (tables committed between the two reads would look foreign).
        self.db.execute("BEGIN")
        try:
            version = self.db.execute("PRAGMA user_version").fetchone()[0]
            tables = self.db.execute("SELECT count(*) FROM sqlite_master").fetchone()[0]
        finally:
            self.db.execute("COMMIT")
        if version > 0:
            return
        if tables:
            raise StoreError(f"{self.path} is a SQLite database of another program, not a threadkeep store")
        if not create:
            raise StoreNotFound(str(self.path))

    def _enter_wal(self) -> None:
        # Changing the journal mode takes an exclusive lock without consulting the busy handler, so
        # several processes opening a brand-new store at once would see "database is locked".
        deadline = time.monotonic() + OPEN_TIMEOUT_S
        pause = 0.005
        while True:
            try:
                self.db.execute("PRAGMA journal_mode = WAL")
                return
            except sqlite3.OperationalError as error:
                if "locked" not in str(error) or time.monotonic() > deadline:
                    raise
            time.sleep(pause)
            pause = min(pause * 2, 0.2)

    def _migrate(self) -> None:
        version = self.db.execute("PRAGMA user_version").fetchone()[0]
        for number, migration in pending(MIGRATIONS, version, str(self.path)):
            self.db.execute("BEGIN IMMEDIATE")
            try:
                if self.db.execute("PRAGMA user_version").fetchone()[0] == number - 1:
                    for statement in _statements(migration.sql):
                        self.db.execute(statement)
                    self.db.execute(f"PRAGMA user_version = {number}")
                self.db.execute("COMMIT")
            except BaseException:
                self.db.execute("ROLLBACK")
                raise

    def close(self) -> None:
        if self._wrote_vectors:
            # Leave an up-to-date index file for the next process (the next CLI search opens it in
            # milliseconds). It is derived data: if it cannot be written now, it is rebuilt later.
            with suppress(OSError, sqlite3.Error, StoreError):
                self._current_vectors()
        self.db.close()

    # --- the hooks of `SQLStore` -------------------------------------------------------------------

    def _rows(self, statement: str, params: Sequence[Any] = ()) -> list[tuple]:
        return self.db.execute(statement, params).fetchall()

    def _write(self, lock: str | None = None) -> _Transaction:
        # SQLite has one writer lock for the whole file, whatever `lock` names.
        return _Transaction(self.db)

    def _insert(self, writer: sqlite3.Connection, table: Table, rows: list[tuple]) -> None:
        writer.executemany(table.insert_sql(), rows)

    def _chunks_changed(self) -> None:
        self._wrote_vectors = True

    @contextmanager
    def _claim(self, limit: int) -> Iterator[tuple[list[tuple], None]]:
        # One machine: nothing is held while the model runs, so ingests go on writing meanwhile.
        yield (
            self._rows(
                "SELECT id, input_hash, embedding_input FROM chunks WHERE embedding IS NULL AND embedding_input <> '' "
                "LIMIT ?",
                (limit,),
            ),
            None,
        )

    def _index_problems(self) -> list[str]:
        fts = self.db.execute("SELECT count(*) FROM chunks_fts").fetchone()[0]
        indexed = self.db.execute("SELECT count(*) FROM chunks WHERE search_words IS NOT NULL").fetchone()[0]
        if fts != indexed:
            return [f"the full-text index holds {fts} rows for {indexed} indexed chunks"]
        try:
            self.db.execute("INSERT INTO chunks_fts (chunks_fts, rank) VALUES ('integrity-check', 1)")
        except sqlite3.DatabaseError as error:
            return [f"the full-text index is damaged ({error})"]
        return []

    # --- vectors ----------------------------------------------------------------------------------

    @property
    def vector_file(self) -> Path:
        return self.path.with_name(self.path.name + ".vectors")

    @contextmanager
    def _snapshot(self) -> Iterator[None]:
        """One read transaction: the log, the chunks and the index agree for its length (WAL)."""
        if self.db.in_transaction:
            yield
            return
        self.db.execute("BEGIN")
        try:
            yield
        finally:
            self.db.execute("COMMIT")

    def _vector_dim(self) -> int | None:
        stored = self._meta("embedder_dim")
        if stored is not None:
            return int(stored)
        row = self.db.execute("SELECT length(embedding) FROM chunks WHERE embedding IS NOT NULL LIMIT 1").fetchone()
        return None if row is None else row[0] // 4

    def _log_high(self) -> int:
        row = self.db.execute("SELECT seq FROM sqlite_sequence WHERE name = 'vector_log'").fetchone()
        return row[0] if row else 0

    def _replayable(self, seq: int, high: int) -> bool:
        """True when the log still holds every change after `seq` (a trim may have dropped some)."""
        if seq > high:
            return False
        kept = self.db.execute("SELECT count(*) FROM vector_log WHERE seq > ?", (seq,)).fetchone()[0]
        return kept == high - seq

    def _vector_rows(self, where: str, params: Sequence[object], dim: int) -> Iterator[Rows]:
        cursor = self.db.execute(
            f"SELECT rowid, source_type, source_ref, occurred_ts, embedding FROM chunks WHERE embedding IS NOT NULL "
            f"AND {where}",
            params,
        )
        while batch := cursor.fetchmany(8192):
            if any(len(row[4]) != 4 * dim for row in batch):
                raise StoreError(f"{self.path} holds vectors that are not {dim}-dimensional; run `threadkeep check`")
            yield Rows.from_tuples(batch, dim)

    def _current_rows(self, rowids: list[int], dim: int) -> Rows:
        batches = [
            batch
            for start in range(0, len(rowids), 8192)
            for batch in self._vector_rows(
                f"rowid IN ({','.join('?' * len(rowids[start : start + 8192]))})", rowids[start : start + 8192], dim
            )
        ]
        return Rows.joined(batches, dim)

    def _current_vectors(self) -> tuple[VectorIndex, int] | None:
        """The index brought up to the committed state, and the vector dimension (None: no vectors yet)."""
        with self._snapshot():
            dim = self._vector_dim()
            if dim is None:
                return None
            identity = {"store_id": self._meta("store_id"), "embedder": self._meta("embedder"), "dim": dim}
            high = self._log_high()
            index = self._vectors
            if index is None or not self._replayable(index.seq, high):
                index = self._open_vector_file(identity, high)
            if index is not None and index.seq < high:
                log = self.db.execute("SELECT DISTINCT chunk FROM vector_log WHERE seq > ?", (index.seq,))
                touched = [row[0] for row in log]
                if len(touched) > len(index.segment) // 2 + FOLD_AT:
                    index = None  # most of the store changed: reading it afresh costs less than replaying
                else:
                    index.apply(touched, self._current_rows(touched, dim), high)
            rebuilt = index is None or index.outgrown
            if rebuilt:
                index = VectorIndex(build_vectors(self._vector_rows("1", (), dim), dim), high)
            self._vectors = index
        if rebuilt or index.pending >= FOLD_AT:
            self._vectors = self._write_vector_file(index, identity)
        return self._vectors, dim

    def _open_vector_file(self, identity: dict[str, object], high: int) -> VectorIndex | None:
        try:
            segment, header = load_vectors(self.vector_file, identity)
        except SidecarInvalid:
            return None
        seq = header.get("seq")
        if not isinstance(seq, int) or not self._replayable(seq, high):
            return None
        return VectorIndex(segment, seq)

    def _write_vector_file(self, index: VectorIndex, identity: dict[str, object]) -> VectorIndex:
        """Fold pending changes into a new file and map it; keep the in-memory index if it cannot be written."""
        folded = VectorIndex(index.fold(), index.seq) if index.pending else index
        try:
            save_vectors(folded.segment, self.vector_file, {**identity, "seq": folded.seq})
            segment, _ = load_vectors(self.vector_file, identity)
        except (OSError, SidecarInvalid):
            return folded
        self._trim_vector_log(folded.seq)
        return VectorIndex(segment, folded.seq)

    def _trim_vector_log(self, seq: int) -> None:
        """Drop log entries the file now holds, if no writer is busy (others replay from the file)."""
        self.db.execute("PRAGMA busy_timeout = 0")
        try:
            self.db.execute("DELETE FROM vector_log WHERE seq <= ?", (seq,))
        except sqlite3.OperationalError:
            pass  # busy: the entries stay until a later trim
        finally:
            self.db.execute("PRAGMA busy_timeout = 30000")

    def dense_candidates(self, query: np.ndarray, k: int, filters: SearchFilters) -> list[tuple[str, float]]:
        if k <= 0:
            return []
        query = np.asarray(query, dtype=np.float32)
        current = self._current_vectors()
        if current is None:
            return []
        index, dim = current
        if query.shape != (dim,):
            raise StoreError(
                f"the query vector has {query.size} dimensions, unlike the {dim} of the vectors in {self.path}; "
                "search with the embedder the store was built with"
            )
        rowids = index.candidates(query, k, filters)
        # The filters again: a writer may have replaced a candidate since the index was brought up to date.
        # NOT INDEXED: the candidates are found by rowid; left to itself the planner walked the source
        # index over every chunk passing the filter (100k documents: 22 ms instead of 1).
        where, params = _filter_sql(filters)
        rows = self.db.execute(
            f"SELECT c.id, c.embedding FROM chunks c NOT INDEXED WHERE c.embedding IS NOT NULL{where} "
            f"AND c.rowid IN ({','.join('?' * len(rowids))})",
            [*params, *rowids],
        ).fetchall()
        # One product over the rows side by side, not one per row (116 rows: 0.1 instead of 0.4 ms).
        vectors = np.frombuffer(b"".join(blob for _, blob in rows), dtype=np.float32).reshape(len(rows), dim)
        scored = [(chunk_id, float(score)) for (chunk_id, _), score in zip(rows, vectors @ query, strict=True)]
        scored.sort(key=lambda pair: -pair[1])
        return scored[:k]

    def _documents_with(self, column: str, term: str) -> int:
        """Chunks holding `term`, counted up to just past the budget: FTS5's own counts (fts5vocab, and
        the IDF inside bm25()) read a term's whole posting list, 70 ms for a word in 800k chunks."""
        query = f"{column} : ({fts_query([term])})"
        return self.db.execute(
            "SELECT count(*) FROM (SELECT rowid FROM chunks_fts WHERE chunks_fts MATCH ? LIMIT ?)",
            (query, POSTINGS_BUDGET + 1),
        ).fetchone()[0]

    def _term_counts(self) -> dict[tuple[str, str], int]:
        """`_documents_with` counts remembered while the store is unchanged: questions share their common
        words, and a common word's count reads POSTINGS_BUDGET postings each time (benchmarks/README.md,
        "Stores at scale"). Another connection's commit changes `data_version`; this connection's own
        writes (committed or not, triggers included) change `total_changes`."""
        version = (self.db.execute("PRAGMA data_version").fetchone()[0], self.db.total_changes)
        if self._counted_at != version or len(self._counted) > TERM_COUNTS:
            self._counted, self._counted_at = {}, version
        return self._counted

    def lexical_candidates(self, text: str, k: int, filters: SearchFilters) -> list[tuple[str, float]]:
        if k <= 0:
            return []
        counted = self._term_counts()

        def documents_with(column: str, term: str) -> int:
            count = counted.get((column, term))
            if count is None:
                count = counted[column, term] = self._documents_with(column, term)
            return count

        plan = plan_terms(content_tokens(text), cjk_bigrams(text), documents_with)
        words, bigrams = fts_query(plan.words), fts_query(plan.bigrams)
        query = " OR ".join(filter(None, [words and f"words : ({words})", bigrams and f"bigrams : ({bigrams})"]))
        if not query:
            return []
        where, filter_params = _filter_sql(filters)
        join = " JOIN chunks c ON c.rowid = chunks_fts.rowid" if where else ""
        if plan.bounded:
            # Every term is in most chunks: bm25() would read their whole posting lists for the IDF,
            # so the newest matches come first, equally scored (fusion reads ranks, not scores).
            sql = f"SELECT chunks_fts.rowid, 0.0 FROM chunks_fts{join} WHERE chunks_fts MATCH ?{where} "
            sql += "ORDER BY chunks_fts.rowid DESC LIMIT ?"
        else:
            sql = f"SELECT chunks_fts.rowid, bm25(chunks_fts, 1.0, {BIGRAM_WEIGHT}) AS rank FROM chunks_fts{join} "
            sql += f"WHERE chunks_fts MATCH ?{where} ORDER BY rank LIMIT ?"
        found = self.db.execute(sql, [query, *filter_params, min(k, NEWEST_MATCHES)]).fetchall()
        if not found:
            return []
        ids = dict(
            self.db.execute(
                f"SELECT rowid, id FROM chunks WHERE rowid IN ({','.join('?' * len(found))})", [row[0] for row in found]
            )
        )
        # bm25() is lower-is-better; negate so every candidate list is higher-is-better.
        return [(ids[rowid], -rank) for rowid, rank in found if rowid in ids]


class _Transaction:
    """BEGIN IMMEDIATE ... COMMIT: one writer at a time, all or nothing."""

    def __init__(self, db: sqlite3.Connection) -> None:
        self.db = db

    def __enter__(self) -> sqlite3.Connection:
        try:
            self.db.execute("BEGIN IMMEDIATE")
        except sqlite3.OperationalError as error:
            raise StoreError(f"the store is busy with another writer ({error})") from error
        return self.db

    def __exit__(self, kind, value, traceback) -> None:
        if kind is None:
            self.db.execute("COMMIT")
        else:
            self.db.execute("ROLLBACK")


def _filter_sql(filters: SearchFilters) -> tuple[str, list[object]]:
    """` AND ...` conditions on chunks `c` for the filters, and their parameters."""
    conditions = filter_conditions(filters, VALUES)
    return "".join(f" AND c.{condition} ?" for condition, _ in conditions), [value for _, value in conditions]
