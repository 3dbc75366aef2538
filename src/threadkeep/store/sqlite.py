"""The embedded store: one SQLite file, full text in FTS5, vectors searched with numpy.

Chinese full text works because the text is segmented in Python (jieba) and the
tokens are stored space-separated in an FTS5 `unicode61` column. Vectors are
float32 blobs in the chunks table, the source of truth. Searches go through a
derived index file beside the database (`store.vectors`: int8 inverted lists,
memory-mapped, so opening costs milliseconds) and re-score the best candidates
with the float32 vectors. Triggers record every chunk whose vector changes in
`vector_log`, in the same transaction as the change; the index replays that log
and is rebuilt whenever it is missing, damaged, or cannot be brought up to date.
The stdlib `sqlite3` here cannot load extensions, so none is needed.
"""

from __future__ import annotations

import json
import sqlite3
from collections.abc import Iterable, Iterator, Sequence
from contextlib import contextmanager, suppress
from datetime import datetime
from pathlib import Path

import numpy as np

from threadkeep.model import Chunk, Conversation, Document, Message, Thread
from threadkeep.store.base import (
    BIGRAM_WEIGHT,
    CHUNK_COLUMNS,
    FORGOTTEN_KEYS,
    MESSAGE_COLUMNS,
    NEWEST_MATCHES,
    POSTINGS_BUDGET,
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
from threadkeep.store.vectors import FOLD_AT, Rows, SidecarInvalid, VectorIndex
from threadkeep.store.vectors import build as build_vectors
from threadkeep.store.vectors import load as load_vectors
from threadkeep.store.vectors import save as save_vectors
from threadkeep.text import cjk_bigrams, content_tokens

MIGRATIONS: list[str] = [
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
    # A document is known again by its file's location or content (`find_document`); a
    # conversation forgotten on request leaves a record of what went.
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
    # Vectors are filled after the text is stored (`claim_pending`), and reused by input anywhere.
    """
    CREATE INDEX chunks_input ON chunks(input_hash);
    CREATE INDEX chunks_pending ON chunks(input_hash) WHERE embedding IS NULL AND embedding_input <> '';
    """,
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


SQLITE_HEADER = b"SQLite format 3\x00"


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


class SQLiteStore:
    def __init__(self, path: Path, create: bool = True) -> None:
        check_location(path, create)
        path.parent.mkdir(parents=True, exist_ok=True)
        self.path = path
        self.address = str(path)
        self.name = path.name
        self.db = sqlite3.connect(path, timeout=30, isolation_level=None, check_same_thread=False)
        try:
            self._check_schema(create)
            self.db.execute("PRAGMA journal_mode = WAL")
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

    def _migrate(self) -> None:
        version = self.db.execute("PRAGMA user_version").fetchone()[0]
        if version > len(MIGRATIONS):
            raise StoreError(f"{self.path} was written by a newer threadkeep (schema {version})")
        for number in range(version, len(MIGRATIONS)):
            self.db.execute("BEGIN IMMEDIATE")
            try:
                if self.db.execute("PRAGMA user_version").fetchone()[0] == number:
                    for statement in _statements(MIGRATIONS[number]):
                        self.db.execute(statement)
                    self.db.execute(f"PRAGMA user_version = {number + 1}")
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

    def _meta(self, key: str) -> str | None:
        row = self.db.execute("SELECT value FROM meta WHERE key = ?", (key,)).fetchone()
        return row[0] if row else None

    def bind_embedder(self, name: str, dim: int) -> None:
        stored = self._meta("embedder")
        if stored is None:
            with self._write():
                self.db.execute(
                    "INSERT OR IGNORE INTO meta VALUES ('embedder', ?), ('embedder_dim', ?)", (name, str(dim))
                )
            stored = self._meta("embedder")
        if stored != name:
            raise StoreError(
                f"{self.path} holds vectors of {stored!r} but the configured embedder is {name!r}; "
                "use the same model (THREADKEEP_EMBEDDER) or a new store"
            )

    def _write(self):
        return _Transaction(self.db)

    def conversation_record(self, ref: str) -> ConversationRecord | None:
        row = self.db.execute(
            "SELECT ref, title, kind, source_format, metadata, content_hash FROM conversations WHERE ref = ?", (ref,)
        ).fetchone()
        if row is None:
            return None
        return ConversationRecord(Conversation(row[0], row[1], row[2], row[3], json.loads(row[4])), row[5])

    def load_messages(self, conversation: str) -> list[Message]:
        rows = self.db.execute(
            f"SELECT {MESSAGE_COLUMNS} FROM messages WHERE conversation = ? ORDER BY position", (conversation,)
        ).fetchall()
        return [message_from_row(row, json.loads) for row in rows]

    def read_conversation(self, ref: str) -> tuple[ConversationRecord | None, list[Message]]:
        """The conversation's record and its messages, read from one snapshot."""
        self.db.execute("BEGIN")  # deferred: a WAL read snapshot from the first SELECT to COMMIT
        try:
            record = self.conversation_record(ref)
            return record, self.load_messages(ref) if record else []
        finally:
            self.db.execute("COMMIT")

    def load_thread(self, conversation: str, message_id: str) -> list[Message]:
        """Every message of the thread holding `message_id`, in time order (empty if unknown)."""
        row = self.db.execute(
            "SELECT thread_id FROM messages WHERE conversation = ? AND id = ?", (conversation, message_id)
        ).fetchone()
        if row is None or row[0] is None:
            return []
        return [message for message in self.load_messages(conversation) if message.id in self._thread_ids(row[0])]

    def _thread_ids(self, thread_id: str) -> set[str]:
        row = self.db.execute("SELECT message_ids FROM threads WHERE id = ?", (thread_id,)).fetchone()
        return set(json.loads(row[0])) if row else set()

    def embeddings_for(self, source_ref: str) -> dict[str, np.ndarray]:
        rows = self.db.execute(
            "SELECT input_hash, embedding FROM chunks WHERE source_ref = ? AND embedding IS NOT NULL", (source_ref,)
        )
        return {row[0]: np.frombuffer(row[1], dtype=np.float32) for row in rows}

    def vectors_by_input(self, hashes: Iterable[str]) -> dict[str, np.ndarray]:
        keys = list(dict.fromkeys(hashes))
        found: dict[str, np.ndarray] = {}
        for start in range(0, len(keys), 500):
            batch = keys[start : start + 500]
            rows = self.db.execute(
                f"SELECT input_hash, embedding FROM chunks WHERE input_hash IN ({','.join('?' * len(batch))}) "
                "AND embedding IS NOT NULL",
                batch,
            )
            found.update((row[0], np.frombuffer(row[1], dtype=np.float32)) for row in rows)
        return found

    def vector_coverage(self) -> tuple[int, int]:
        row = self.db.execute("SELECT count(embedding), count(*) FROM chunks WHERE embedding_input <> ''").fetchone()
        return row[0], row[1]

    def pending_vectors(self) -> int:
        return self.db.execute(
            "SELECT count(*) FROM chunks WHERE embedding IS NULL AND embedding_input <> ''"
        ).fetchone()[0]

    @contextmanager
    def claim_pending(self, limit: int) -> Iterator[VectorClaim]:
        # One machine: nothing is locked while the model runs, so ingests keep writing; a vector
        # belongs to its input, so it fills whichever chunks hold that input when it is written.
        rows = self.db.execute(
            "SELECT input_hash, embedding_input FROM chunks WHERE embedding IS NULL AND embedding_input <> '' LIMIT ?",
            (limit,),
        ).fetchall()
        inputs = dict(rows)
        known = self.vectors_by_input(inputs)
        reused = self._fill_pending(known)
        yield VectorClaim({key: text for key, text in inputs.items() if key not in known}, reused, self._fill_pending)

    def _fill_pending(self, vectors: dict[str, np.ndarray]) -> int:
        if not vectors:
            return 0
        dim = self._vector_dim()
        filled = 0
        with self._write():
            for key, vector in vectors.items():
                blob = np.asarray(vector, dtype=np.float32).tobytes()
                if dim is not None and len(blob) != 4 * dim:
                    raise StoreError(f"a vector of {len(blob) // 4} dimensions for a store of {dim}")
                filled += self.db.execute(
                    "UPDATE chunks SET embedding = ? "
                    "WHERE input_hash = ? AND embedding IS NULL AND embedding_input <> ''",
                    (blob, key),
                ).rowcount
        self._wrote_vectors = True
        return filled

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
            (row.id, row.conversation, json.dumps(row.message_ids), json.dumps(row.reply_to), row.chunk_id)
            for row in rows
        ]
        with self._write():
            # BEGIN IMMEDIATE holds the one writer lock: nobody can change the hash after this read.
            current = self.db.execute("SELECT content_hash FROM conversations WHERE ref = ?", (ref,)).fetchone()
            require_current(ref, based_on, current[0] if current else None)
            self._delete_chunks("chat", ref)
            self.db.execute("DELETE FROM threads WHERE conversation = ?", (ref,))
            self.db.execute("DELETE FROM messages WHERE conversation = ?", (ref,))
            self.db.execute(
                "INSERT INTO conversations VALUES (?, ?, ?, ?, ?, ?) ON CONFLICT(ref) DO UPDATE SET "
                "title = excluded.title, kind = excluded.kind, source_format = excluded.source_format, "
                "metadata = excluded.metadata, content_hash = excluded.content_hash",
                (
                    ref,
                    conversation.title,
                    conversation.kind,
                    conversation.source_format,
                    json.dumps(conversation.metadata, ensure_ascii=False),
                    content_hash,
                ),
            )
            self.db.executemany(
                "INSERT INTO messages VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
                [
                    (
                        ref,
                        m.id,
                        position,
                        m.sender,
                        m.sender_name,
                        m.role,
                        m.kind,
                        m.sent_at.isoformat(),
                        m.text,
                        m.reply_to,
                        json.dumps(m.mentions, ensure_ascii=False),
                        int(m.recalled),
                        m.edited_at.isoformat() if m.edited_at else None,
                        m.platform_thread,
                        json.dumps(m.metadata, ensure_ascii=False, default=str),
                        thread_of.get(m.id),
                    )
                    for position, m in enumerate(messages)
                ],
            )
            self.db.executemany("INSERT INTO threads VALUES (?, ?, ?, ?, ?)", encoded_threads)
            self._insert_chunks(chunks, embeddings)

    def document_hash(self, document_id: str) -> str | None:
        row = self.db.execute("SELECT content_hash FROM documents WHERE id = ?", (document_id,)).fetchone()
        return row[0] if row else None

    def find_document(self, path: str, file_hash: str) -> tuple[str, str] | None:
        for column, value in (("path", path), ("file_hash", file_hash)):
            row = self.db.execute(f"SELECT id, path FROM documents WHERE {column} = ? ORDER BY id LIMIT 1", (value,))
            found = row.fetchone()
            if found:
                return found[0], found[1]
        return None

    def replace_document(
        self, document: Document, content_hash: str, chunks: Sequence[Chunk], embeddings: dict[str, np.ndarray]
    ) -> None:
        with self._write():
            self._delete_chunks("document", document.id)
            self.db.execute(
                "INSERT INTO documents (id, title, path, updated_at, content_hash, file_hash) "
                "VALUES (?, ?, ?, ?, ?, ?) ON CONFLICT(id) DO UPDATE SET title = excluded.title, "
                "path = excluded.path, updated_at = excluded.updated_at, content_hash = excluded.content_hash, "
                "file_hash = excluded.file_hash",
                (
                    document.id,
                    document.title,
                    document.path,
                    document.updated_at.isoformat(),
                    content_hash,
                    document.content_hash,
                ),
            )
            self._insert_chunks(chunks, embeddings)

    def remove_document(self, document_id: str) -> bool:
        with self._write():
            self._delete_chunks("document", document_id)
            return self.db.execute("DELETE FROM documents WHERE id = ?", (document_id,)).rowcount > 0

    def list_documents(self) -> list[dict[str, str]]:
        rows = self.db.execute("SELECT id, title, path, updated_at FROM documents ORDER BY id")
        return [{"id": row[0], "title": row[1], "path": row[2], "updated_at": row[3]} for row in rows]

    def list_conversations(self) -> list[dict[str, object]]:
        rows = self.db.execute(
            "SELECT c.ref, c.title, c.kind, c.source_format, count(m.id), min(m.sent_at), max(m.sent_at), "
            "c.metadata FROM conversations c LEFT JOIN messages m ON m.conversation = c.ref GROUP BY c.ref "
            "ORDER BY c.ref"
        )
        keys = ("ref", "title", "kind", "source_format", "messages", "first_message_at", "last_message_at")
        return [{**dict(zip(keys, row[:7], strict=True)), "metadata": json.loads(row[7])} for row in rows]

    def forget_conversation(self, ref: str, forgotten_at: datetime) -> dict[str, object] | None:
        with self._write():
            row = self.db.execute(
                "SELECT c.title, c.source_format, (SELECT count(*) FROM messages m WHERE m.conversation = c.ref) "
                "FROM conversations c WHERE c.ref = ?",
                (ref,),
            ).fetchone()
            if row is None:
                return None
            self._delete_chunks("chat", ref)
            for table in ("threads", "messages", "review_flags"):
                self.db.execute(f"DELETE FROM {table} WHERE conversation = ?", (ref,))
            self.db.execute("DELETE FROM conversations WHERE ref = ?", (ref,))
            record = (ref, row[0], row[1], row[2], forgotten_at.isoformat())
            self.db.execute("INSERT INTO forgotten VALUES (?, ?, ?, ?, ?)", record)
        return dict(zip(FORGOTTEN_KEYS, record, strict=True))

    def forgotten_conversations(self) -> list[dict[str, object]]:
        rows = self.db.execute(
            "SELECT conversation, title, source_format, messages, forgotten_at FROM forgotten "
            "ORDER BY forgotten_at, conversation"
        )
        return [dict(zip(FORGOTTEN_KEYS, row, strict=True)) for row in rows]

    def flag_for_review(self, conversation: str, message_id: str, reason: str, flagged_at: datetime) -> None:
        with self._write():
            self.db.execute(
                "INSERT OR IGNORE INTO review_flags VALUES (?, ?, ?, ?)",
                (conversation, message_id, reason, flagged_at.isoformat()),
            )

    def review_items(self) -> list[dict[str, object]]:
        rows = self.db.execute(
            "SELECT f.conversation, f.message_id, f.reason, f.flagged_at, m.sender_name, m.sender, m.sent_at, m.text "
            "FROM review_flags f LEFT JOIN messages m ON m.conversation = f.conversation AND m.id = f.message_id "
            "ORDER BY f.flagged_at, f.conversation, f.message_id"
        )
        keys = ("conversation", "message_id", "reason", "flagged_at", "sender_name", "sender", "sent_at", "text")
        return [dict(zip(keys, row, strict=True)) for row in rows]

    def integrity_problems(self) -> list[str]:
        """What is wrong with the stored data, as readable sentences (empty when all is well)."""
        problems: list[str] = []
        message_ids = {(row[0], row[1]) for row in self.db.execute("SELECT conversation, id FROM messages")}
        for chunk_id, ref, evidence in self.db.execute(
            "SELECT id, source_ref, evidence_ids FROM chunks WHERE source_type = 'chat'"
        ):
            missing = [mid for mid in json.loads(evidence) if (ref, mid) not in message_ids]
            if missing:
                problems.append(f"chunk {chunk_id} cites messages not in the store: {', '.join(missing[:5])}")
        counts: dict[tuple[str, str], int] = {}
        for thread_id, conversation, ids in self.db.execute(
            "SELECT id, conversation, message_ids FROM threads ORDER BY id"
        ):
            listed = json.loads(ids)
            for mid in listed:
                counts[(conversation, mid)] = counts.get((conversation, mid), 0) + 1
            missing = [mid for mid in listed if (conversation, mid) not in message_ids]
            if missing:
                problems.append(f"thread {thread_id} lists messages not in the store: {', '.join(missing[:5])}")
        for conversation, mid, recalled in self.db.execute("SELECT conversation, id, recalled FROM messages"):
            seen = counts.get((conversation, mid), 0)
            if seen != 1 and not (recalled and seen == 0):
                problems.append(f"message {conversation}/{mid} belongs to {seen} threads")
        model, dim = self._meta("embedder"), self._meta("embedder_dim")
        if dim is not None:
            wrong = self.db.execute(
                "SELECT count(*) FROM chunks WHERE embedding IS NOT NULL AND length(embedding) != ?", (int(dim) * 4,)
            ).fetchone()[0]
            if wrong:
                problems.append(f"{wrong} vectors do not have the {dim} dimensions of {model}")
        fts = self.db.execute("SELECT count(*) FROM chunks_fts").fetchone()[0]
        indexed = self.db.execute("SELECT count(*) FROM chunks WHERE embedding_input != ''").fetchone()[0]
        if fts != indexed:
            problems.append(f"the full-text index holds {fts} rows for {indexed} indexed chunks")
        return problems

    def _delete_chunks(self, source_type: str, source_ref: str) -> None:
        self.db.execute(
            "DELETE FROM chunks_fts WHERE rowid IN (SELECT rowid FROM chunks WHERE source_type = ? AND source_ref = ?)",
            (source_type, source_ref),
        )
        self.db.execute("DELETE FROM chunks WHERE source_type = ? AND source_ref = ?", (source_type, source_ref))
        self._wrote_vectors = True

    def _insert_chunks(self, chunks: Sequence[Chunk], embeddings: dict[str, np.ndarray]) -> None:
        self._wrote_vectors = True
        for chunk in chunks:
            key = input_hash(chunk.embedding_input)
            vector = embeddings.get(key) if chunk.embedding_input else None
            cursor = self.db.execute(
                "INSERT INTO chunks VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
                (
                    chunk.id,
                    chunk.source_type,
                    chunk.source_ref,
                    chunk.title,
                    chunk.text,
                    chunk.embedding_input,
                    key,
                    None if vector is None else np.asarray(vector, dtype=np.float32).tobytes(),
                    chunk.occurred_at.isoformat(),
                    chunk.occurred_at.timestamp(),
                    chunk.started_at.isoformat() if chunk.started_at else None,
                    None if chunk.heading_path is None else json.dumps(chunk.heading_path, ensure_ascii=False),
                    None if chunk.evidence_ids is None else json.dumps(chunk.evidence_ids, ensure_ascii=False),
                    chunk.resolution_state,
                    int(chunk.has_unresolved_media),
                ),
            )
            if chunk.embedding_input:
                self.db.execute(
                    "INSERT INTO chunks_fts(rowid, words, bigrams) VALUES (?, ?, ?)",
                    (
                        cursor.lastrowid,
                        " ".join(content_tokens(chunk.indexed_text)),
                        " ".join(cjk_bigrams(chunk.indexed_text)),
                    ),
                )

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
        where, params = _filter_sql(filters)
        scored = [
            (chunk_id, float(np.frombuffer(blob, dtype=np.float32) @ query))
            for chunk_id, blob in self.db.execute(
                f"SELECT c.id, c.embedding FROM chunks c WHERE c.embedding IS NOT NULL{where} AND c.rowid IN "
                f"({','.join('?' * len(rowids))})",
                [*params, *rowids],
            )
        ]
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

    def lexical_candidates(self, text: str, k: int, filters: SearchFilters) -> list[tuple[str, float]]:
        if k <= 0:
            return []
        plan = plan_terms(content_tokens(text), cjk_bigrams(text), self._documents_with)
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

    def recent_chat_chunks(self, resolution_state: str, limit: int) -> list[Chunk]:
        rows = self.db.execute(
            f"SELECT {CHUNK_COLUMNS} FROM chunks WHERE source_type = 'chat' AND resolution_state = ? "
            "ORDER BY occurred_ts DESC LIMIT ?",
            (resolution_state, limit),
        )
        return [chunk_from_row(row, json.loads) for row in rows]

    def get_chunks(self, ids: Iterable[str]) -> dict[str, Chunk]:
        ids = list(dict.fromkeys(ids))
        found: dict[str, Chunk] = {}
        for start in range(0, len(ids), 500):
            batch = ids[start : start + 500]
            marks = ",".join("?" * len(batch))
            for row in self.db.execute(f"SELECT {CHUNK_COLUMNS} FROM chunks WHERE id IN ({marks})", batch):
                found[row[0]] = chunk_from_row(row, json.loads)
        return found

    def stats(self) -> dict[str, object]:
        def count(sql: str) -> int:
            return self.db.execute(sql).fetchone()[0]

        return {
            "location": str(self.path),
            "embedder": self._meta("embedder"),
            "conversations": count("SELECT count(*) FROM conversations"),
            "messages": count("SELECT count(*) FROM messages"),
            "threads": count("SELECT count(*) FROM threads"),
            "chunks": count("SELECT count(*) FROM chunks"),
            "chat_chunks": count("SELECT count(*) FROM chunks WHERE source_type = 'chat'"),
            "documents": count("SELECT count(*) FROM documents"),
            "document_chunks": count("SELECT count(*) FROM chunks WHERE source_type = 'document'"),
            "embedded_chunks": count("SELECT count(*) FROM chunks WHERE embedding IS NOT NULL"),
        }


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
    clauses, params = [], []
    if filters.conversation:
        clauses.append(" AND c.source_ref = ?")
        params.append(filters.conversation)
    if filters.source_type:
        clauses.append(" AND c.source_type = ?")
        params.append(filters.source_type)
    if filters.since:
        clauses.append(" AND c.occurred_ts >= ?")
        params.append(filters.since.timestamp())
    if filters.until:
        clauses.append(" AND c.occurred_ts <= ?")
        params.append(filters.until.timestamp())
    return "".join(clauses), params
