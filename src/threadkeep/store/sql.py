"""What a SQL store does the same way whatever the database: written once, over a few hooks.

`SQLStore` holds every rule of the store (rebuilding a conversation under optimistic
concurrency, documents, listings, forgetting, review flags, integrity, stats, thread lookup,
reading chunks back) as SQL both SQLite and PostgreSQL run, written with `?` placeholders
over the tables of `store.rows`. A backend supplies only what differs:

- connection and locking: `_rows` (a read), `_write(lock)` (one transaction, holding the
  writer lock for `lock`), `_snapshot` (several reads from one moment);
- how values are held (`values`) and how rows go in in bulk (`_insert`);
- setting vectors up once the embedder is known (`_bind_vectors`), and what a vector's
  dimension is in SQL (`VECTOR_DIMS`);
- searching: `dense_candidates` and `lexical_candidates`, and whatever keeps their indexes
  (`_chunks_changed`, `_index_problems`);
- claiming chunks whose vectors are still to be made (`_claim`);
- its migrations: a list of named `Migration`s, run by `pending` order when it opens.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Sequence
from contextlib import AbstractContextManager, contextmanager, nullcontext
from dataclasses import dataclass
from datetime import datetime
from typing import Any, Protocol

import numpy as np

from threadkeep.model import Chunk, Conversation, Document, Message, Thread
from threadkeep.store.base import (
    BasedOn,
    ConversationRecord,
    ConversationSummary,
    DocumentSummary,
    ForgottenConversation,
    ReviewItem,
    SearchFilters,
    StoreError,
    VectorClaim,
    require_current,
)
from threadkeep.store.rows import (
    CHUNKS,
    CONVERSATIONS,
    DOCUMENTS,
    FORGOTTEN,
    MESSAGES,
    REVIEW_FLAGS,
    THREADS,
    Kind,
    Table,
    Values,
    chunk_from_row,
    chunk_row,
    conversation_from_row,
    message_from_row,
    thread_rows,
)

# The lock a schema change (binding the embedder) holds, whatever it changes.
SCHEMA = "schema"
# Ids per `IN (...)` list: well under every backend's parameter limit.
BATCH = 500


class Cursor(Protocol):
    rowcount: int

    def fetchone(self) -> Any: ...

    def fetchall(self) -> list[Any]: ...


class Writer(Protocol):
    """A transaction's statements, with `?` placeholders."""

    def execute(self, statement: str, params: Sequence[Any] = ()) -> Cursor: ...


class SQLStore:
    """What every store offers, whatever the database behind it."""

    address: str  # what `open_store` takes to reach this store again (may hold a password)
    name: str  # how to name the store to someone who must not learn where it is (file or database name)
    location: str  # how messages and stats name the store
    values: Values
    VECTOR_DIMS: str  # SQL: the dimensions of `embedding`

    # --- hooks ---------------------------------------------------------------------------------

    def close(self) -> None:
        raise NotImplementedError

    def _rows(self, statement: str, params: Sequence[Any] = ()) -> list[tuple]:
        raise NotImplementedError

    def _write(self, lock: str | None = None) -> AbstractContextManager[Writer]:
        """One transaction, all or nothing; with `lock`, serialized against writers of the same lock."""
        raise NotImplementedError

    def _snapshot(self) -> AbstractContextManager[None]:
        raise NotImplementedError

    def _insert(self, writer: Writer, table: Table, rows: list[tuple]) -> None:
        raise NotImplementedError

    def _bind_vectors(self, writer: Writer, dim: int) -> None:
        """Make the store ready for `dim`-dimensional vectors (inside the write that binds the embedder)."""

    def _chunks_changed(self) -> None:
        """Chunks were written or deleted (in a transaction that may still roll back)."""

    def _index_problems(self) -> list[str]:
        """What is wrong with the backend's own search indexes."""
        return []

    def _claim(self, limit: int) -> AbstractContextManager[tuple[list[tuple], Writer | None]]:
        """Up to `limit` (id, input_hash, embedding_input) of chunks with text to embed and no vector,
        held for this process while the context lasts, and the writer their vectors go through
        (None: a write transaction of their own)."""
        raise NotImplementedError

    def dense_candidates(self, query: np.ndarray, k: int, filters: SearchFilters) -> list[tuple[str, float]]:
        raise NotImplementedError

    def lexical_candidates(self, text: str, k: int, filters: SearchFilters) -> list[tuple[str, float]]:
        raise NotImplementedError

    # --- the embedder ----------------------------------------------------------------------------

    def _meta(self, key: str) -> str | None:
        found = self._rows("SELECT value FROM meta WHERE key = ?", (key,))
        return found[0][0] if found else None

    def bind_embedder(self, name: str, dim: int) -> None:
        """Record the embedding model on first use; refuse a different one later."""
        stored = self._meta("embedder")
        if stored is None:
            with self._write(SCHEMA) as writer:
                if self._meta("embedder") is None:  # another process may have bound it meanwhile
                    self._bind_vectors(writer, dim)
                    writer.execute("INSERT INTO meta VALUES ('embedder', ?), ('embedder_dim', ?)", (name, str(dim)))
            stored = self._meta("embedder")
        if stored != name:
            raise StoreError(
                f"{self.location} holds vectors of {stored!r} but the configured embedder is {name!r}; "
                "use the same model (THREADKEEP_EMBEDDER) or a new store"
            )

    # --- vectors, made after the text -------------------------------------------------------------

    def vectors_by_input(self, hashes: Iterable[str]) -> dict[str, np.ndarray]:
        """Vectors any chunk of the store has for these embedding-input hashes."""
        found: dict[str, np.ndarray] = {}
        for batch in _batches(list(dict.fromkeys(hashes))):
            marks = ",".join("?" * len(batch))
            rows = self._rows(
                f"SELECT input_hash, embedding FROM chunks WHERE input_hash IN ({marks}) AND embedding IS NOT NULL",
                batch,
            )
            found.update((key, self.values.decode("vector", vector)) for key, vector in rows)
        return found

    def vector_coverage(self) -> tuple[int, int]:
        """(chunks with a vector, chunks with text to embed): search is hybrid over the first only.

        Counted on indexes only (all chunks, the partial ones of chunks with nothing to embed and of
        chunks still without a vector): reading the rows would read every vector."""
        ((total, unindexed, pending),) = self._rows(
            "SELECT (SELECT count(*) FROM chunks), (SELECT count(*) FROM chunks WHERE embedding_input = ''), "
            "(SELECT count(*) FROM chunks WHERE embedding IS NULL AND embedding_input <> '')"
        )
        return total - unindexed - pending, total - unindexed

    def pending_vectors(self) -> int:
        """Chunks with text to embed and no vector; costs about one index entry per such chunk."""
        return self._rows("SELECT count(*) FROM chunks WHERE embedding IS NULL AND embedding_input <> ''")[0][0]

    @contextmanager
    def claim_pending(self, limit: int) -> Iterator[VectorClaim]:
        """Claim up to `limit` chunks that have text to embed and no vector. Those whose input another
        chunk already has a vector for get it at once; the claim lists the other inputs, once each.

        A vector is written only to a claimed chunk that still has the input it was made from and
        no vector yet: an ingest may have rebuilt the conversation meanwhile (same id, new text)."""
        with self._claim(limit) as (rows, held):
            claimed: dict[str, list[str]] = {}
            inputs: dict[str, str] = {}
            for chunk_id, key, text in rows:
                claimed.setdefault(key, []).append(chunk_id)
                inputs[key] = text

            def fill(vectors: dict[str, np.ndarray]) -> int:
                params = [
                    (self.values.encode("vector", np.asarray(vector, dtype=np.float32)), chunk_id, key)
                    for key, vector in vectors.items()
                    for chunk_id in claimed.get(key, ())
                ]
                if not params:
                    return 0
                with nullcontext(held) if held is not None else self._write() as writer:
                    filled = sum(
                        writer.execute(
                            "UPDATE chunks SET embedding = ? WHERE id = ? AND input_hash = ? AND embedding IS NULL",
                            row,
                        ).rowcount
                        for row in params
                    )
                self._chunks_changed()
                return filled

            known = self.vectors_by_input(inputs)
            reused = fill(known)
            yield VectorClaim({key: text for key, text in inputs.items() if key not in known}, reused, fill)

    # --- conversations -------------------------------------------------------------------------

    def conversation_record(self, ref: str) -> ConversationRecord | None:
        found = self._rows(f"SELECT {CONVERSATIONS.read_list}, content_hash FROM conversations WHERE ref = ?", (ref,))
        if not found:
            return None
        return ConversationRecord(conversation_from_row(self.values, found[0][:-1]), found[0][-1])

    def _messages(self, where: str, params: Sequence[Any]) -> list[Message]:
        rows = self._rows(f"SELECT {MESSAGES.read_list} FROM messages WHERE {where} ORDER BY position", params)
        return [message_from_row(self.values, row) for row in rows]

    def load_messages(self, conversation: str) -> list[Message]:
        return self._messages("conversation = ?", (conversation,))

    def read_conversation(self, ref: str) -> tuple[ConversationRecord | None, list[Message]]:
        """The conversation's record and its messages, read from one snapshot."""
        with self._snapshot():
            record = self.conversation_record(ref)
            return record, self.load_messages(ref) if record else []

    def load_thread(self, conversation: str, message_id: str) -> list[Message]:
        """Every message of the thread holding `message_id`, in time order (empty if unknown)."""
        return self._messages(
            "conversation = ? AND thread_id = (SELECT thread_id FROM messages WHERE conversation = ? AND id = ?)",
            (conversation, conversation, message_id),
        )

    def embeddings_for(self, source_ref: str) -> dict[str, np.ndarray]:
        """Stored vectors of one conversation's or document's chunks, by embedding-input hash."""
        rows = self._rows(
            "SELECT input_hash, embedding FROM chunks WHERE source_ref = ? AND embedding IS NOT NULL", (source_ref,)
        )
        return {key: self.values.decode("vector", vector) for key, vector in rows}

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
        """Atomically replace everything stored for one conversation.

        With `based_on`, raise `ConcurrentWriteError` and write nothing when the stored content hash
        is no longer the one the new content was computed from (checked under the writer lock)."""
        ref = conversation.ref
        threads_stored, thread_of = thread_rows(ref, threads, chunks)
        values = self.values
        with self._write(f"chat:{ref}") as writer:
            # Under the conversation's writer lock, so this is the last committed writer's hash.
            current = writer.execute("SELECT content_hash FROM conversations WHERE ref = ?", (ref,)).fetchone()
            require_current(ref, based_on, current[0] if current else None)
            self._delete_chunks(writer, "chat", ref)
            writer.execute("DELETE FROM threads WHERE conversation = ?", (ref,))
            writer.execute("DELETE FROM messages WHERE conversation = ?", (ref,))
            row = CONVERSATIONS.encode(values, conversation, content_hash=content_hash)
            writer.execute(CONVERSATIONS.upsert_sql("ref"), row)
            self._insert(
                writer,
                MESSAGES,
                [
                    MESSAGES.encode(values, m, conversation=ref, position=position, thread_id=thread_of.get(m.id))
                    for position, m in enumerate(messages)
                ],
            )
            self._insert(writer, THREADS, [THREADS.encode(values, row) for row in threads_stored])
            self._insert(writer, CHUNKS, [chunk_row(values, chunk, embeddings) for chunk in chunks])

    def list_conversations(self) -> list[ConversationSummary]:
        # First and last in real time, given as stored (with the sender's own UTC offset).
        rows = self._rows(
            "SELECT c.ref, c.title, c.kind, c.source_format, "
            "(SELECT count(*) FROM messages m WHERE m.conversation = c.ref), "
            "(SELECT m.sent_at FROM messages m WHERE m.conversation = c.ref ORDER BY m.sent_ts, m.position LIMIT 1), "
            "(SELECT m.sent_at FROM messages m WHERE m.conversation = c.ref "
            "ORDER BY m.sent_ts DESC, m.position DESC LIMIT 1), c.metadata FROM conversations c"
        )
        listed = [ConversationSummary(*row[:7], self.values.decode("json", row[7])) for row in rows]
        return sorted(listed, key=lambda item: item.ref)

    def forget_conversation(self, ref: str, forgotten_at: datetime) -> ForgottenConversation | None:
        """Delete a conversation with its messages, threads, chunks and review flags, in one transaction,
        and record what went (no message text). None when there is no such conversation."""
        with self._write(f"chat:{ref}") as writer:
            row = writer.execute(
                "SELECT c.title, c.source_format, (SELECT count(*) FROM messages m WHERE m.conversation = c.ref) "
                "FROM conversations c WHERE c.ref = ?",
                (ref,),
            ).fetchone()
            if row is None:
                return None
            self._delete_chunks(writer, "chat", ref)
            for table in ("threads", "messages", "review_flags"):
                writer.execute(f"DELETE FROM {table} WHERE conversation = ?", (ref,))
            writer.execute("DELETE FROM conversations WHERE ref = ?", (ref,))
            record = ForgottenConversation(ref, row[0], row[1], row[2], forgotten_at.isoformat())
            writer.execute(FORGOTTEN.insert_sql(), FORGOTTEN.encode(self.values, record, forgotten_at=forgotten_at))
        return record

    def forgotten_conversations(self) -> list[ForgottenConversation]:
        """The records `forget_conversation` left, oldest first."""
        listed = [ForgottenConversation(*row) for row in self._rows(f"SELECT {FORGOTTEN.column_list} FROM forgotten")]
        return sorted(listed, key=lambda item: (item.forgotten_at, item.conversation))

    # --- documents -------------------------------------------------------------------------------

    def document_hash(self, document_id: str) -> str | None:
        found = self._rows("SELECT content_hash FROM documents WHERE id = ?", (document_id,))
        return found[0][0] if found else None

    def find_document(self, path: str, file_hash: str) -> tuple[str, str] | None:
        """(id, path) of the stored document at this absolute path, else of one with the same file content."""
        for column, value in (("path", path), ("file_hash", file_hash)):
            found = self._rows(f"SELECT id, path FROM documents WHERE {column} = ?", (value,))
            if found:
                return min((row[0], row[1]) for row in found)
        return None

    def replace_document(
        self, document: Document, content_hash: str, chunks: Sequence[Chunk], embeddings: dict[str, np.ndarray]
    ) -> None:
        """Atomically replace one document and its chunks."""
        with self._write(f"document:{document.id}") as writer:
            self._delete_chunks(writer, "document", document.id)
            row = DOCUMENTS.encode(self.values, document, content_hash=content_hash)
            writer.execute(DOCUMENTS.upsert_sql("id"), row)
            self._insert(writer, CHUNKS, [chunk_row(self.values, chunk, embeddings) for chunk in chunks])

    def remove_document(self, document_id: str) -> bool:
        with self._write(f"document:{document_id}") as writer:
            self._delete_chunks(writer, "document", document_id)
            return writer.execute("DELETE FROM documents WHERE id = ?", (document_id,)).rowcount > 0

    def list_documents(self) -> list[DocumentSummary]:
        rows = self._rows("SELECT id, title, path, updated_at FROM documents")
        return sorted((DocumentSummary(*row) for row in rows), key=lambda item: item.id)

    # --- review and integrity --------------------------------------------------------------------

    def flag_for_review(self, conversation: str, message_id: str, reason: str, flagged_at: datetime) -> None:
        """Remember that a message needs a person's look (e.g. the exporter no longer saw it). Deletes nothing."""
        row = REVIEW_FLAGS.encode(
            self.values, conversation=conversation, message_id=message_id, reason=reason, flagged_at=flagged_at
        )
        with self._write() as writer:
            writer.execute(REVIEW_FLAGS.insert_sql(" ON CONFLICT DO NOTHING"), row)

    def review_items(self) -> list[ReviewItem]:
        rows = self._rows(
            "SELECT f.conversation, f.message_id, f.reason, f.flagged_at, m.sender_name, m.sender, m.sent_at, m.text "
            "FROM review_flags f LEFT JOIN messages m ON m.conversation = f.conversation AND m.id = f.message_id"
        )
        return sorted(
            (ReviewItem(*row) for row in rows), key=lambda item: (item.flagged_at, item.conversation, item.message_id)
        )

    def integrity_problems(self) -> list[str]:
        """What is wrong with the stored data, as readable sentences (empty when all is well)."""
        problems: list[str] = []
        decode = self.values.decode
        messages = self._rows("SELECT conversation, id, recalled, position FROM messages")
        message_ids = {(conversation, mid) for conversation, mid, *_ in messages}
        for chunk_id, ref, evidence in sorted(
            self._rows("SELECT id, source_ref, evidence_ids FROM chunks WHERE source_type = 'chat'")
        ):
            missing = [mid for mid in decode("list", evidence) if (ref, mid) not in message_ids]
            if missing:
                problems.append(f"chunk {chunk_id} cites messages not in the store: {', '.join(missing[:5])}")
        counts: dict[tuple[str, str], int] = {}
        for thread_id, conversation, ids in sorted(self._rows("SELECT id, conversation, message_ids FROM threads")):
            listed = decode("list", ids)
            for mid in listed:
                counts[(conversation, mid)] = counts.get((conversation, mid), 0) + 1
            missing = [mid for mid in listed if (conversation, mid) not in message_ids]
            if missing:
                problems.append(f"thread {thread_id} lists messages not in the store: {', '.join(missing[:5])}")
        for conversation, mid, recalled, _ in sorted(messages, key=lambda row: (row[0], row[3])):
            seen = counts.get((conversation, mid), 0)
            if seen != 1 and not (recalled and seen == 0):
                problems.append(f"message {conversation}/{mid} belongs to {seen} threads")
        model, dim = self._meta("embedder"), self._meta("embedder_dim")

        def count(where: str, params: Sequence[Any] = ()) -> int:
            return self._rows(f"SELECT count(*) FROM chunks WHERE {where}", params)[0][0]

        if dim is not None:
            wrong = count(f"embedding IS NOT NULL AND {self.VECTOR_DIMS} <> ?", (int(dim),))
            if wrong:
                problems.append(f"{wrong} vectors do not have the {dim} dimensions of {model}")
        unsearchable = count("embedding_input <> '' AND (search_words IS NULL OR search_bigrams IS NULL)")
        if unsearchable:
            problems.append(f"{unsearchable} indexed chunks have no full-text entry")
        return problems + self._index_problems()

    # --- chunks ----------------------------------------------------------------------------------

    def _delete_chunks(self, writer: Writer, source_type: str, source_ref: str) -> None:
        writer.execute("DELETE FROM chunks WHERE source_type = ? AND source_ref = ?", (source_type, source_ref))
        self._chunks_changed()

    def get_chunks(self, ids: Iterable[str]) -> dict[str, Chunk]:
        ids = list(dict.fromkeys(ids))
        found: dict[str, Chunk] = {}
        for batch in _batches(ids):
            marks = ",".join("?" * len(batch))
            for row in self._rows(f"SELECT {CHUNKS.read_list} FROM chunks WHERE id IN ({marks})", batch):
                chunk = chunk_from_row(self.values, row)
                found[chunk.id] = chunk
        return found

    def recent_chat_chunks(self, resolution_state: str, limit: int) -> list[Chunk]:
        """The latest chat chunks in this state, newest first (the start page's example questions)."""
        rows = self._rows(
            f"SELECT {CHUNKS.read_list} FROM chunks WHERE source_type = 'chat' AND resolution_state = ? "
            "ORDER BY occurred_ts DESC LIMIT ?",
            (resolution_state, limit),
        )
        return [chunk_from_row(self.values, row) for row in rows]

    def has_chunks(self) -> bool:
        """Whether anything searchable is stored (cheap, unlike counting in `stats` at a million chunks)."""
        (row,) = self._rows("SELECT EXISTS (SELECT 1 FROM chunks)")
        return bool(row[0])

    def stats(self) -> dict[str, object]:
        counted = {
            "conversations": "conversations",
            "messages": "messages",
            "threads": "threads",
            "chunks": "chunks",
            "chat_chunks": "chunks WHERE source_type = 'chat'",
            "documents": "documents",
            "document_chunks": "chunks WHERE source_type = 'document'",
            "embedded_chunks": "chunks WHERE embedding IS NOT NULL",
        }
        (row,) = self._rows("SELECT " + ", ".join(f"(SELECT count(*) FROM {what})" for what in counted.values()))
        return {"location": self.location, "embedder": self._meta("embedder"), **dict(zip(counted, row, strict=True))}


def _batches(ids: list[str]) -> Iterator[list[str]]:
    for start in range(0, len(ids), BATCH):
        yield ids[start : start + BATCH]


# What each search filter means, for both dialects: (field of SearchFilters, chunks column,
# operator, kind of value). A backend renders the conditions with its own placeholders.
FILTERS: tuple[tuple[str, str, str, Kind], ...] = (
    ("conversation", "source_ref", "=", "text"),
    ("source_type", "source_type", "=", "text"),
    ("since", "occurred_ts", ">=", "instant"),
    ("until", "occurred_ts", "<=", "instant"),
)


def filter_conditions(filters: SearchFilters, values: Values) -> list[tuple[str, Any]]:
    """(`column operator`, value as the backend holds it) for each filter that is set."""
    return [
        (f"{column} {operator}", values.encode(kind, getattr(filters, field)))
        for field, column, operator, kind in FILTERS
        if getattr(filters, field)
    ]


# --- migrations ---------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class Migration:
    """One step of a backend's schema. Shipped steps are never edited: a change is a new step."""

    name: str
    sql: str


def pending(migrations: Sequence[Migration], version: int, location: str) -> list[tuple[int, Migration]]:
    """The steps a store at schema `version` (the count of steps applied) still needs, numbered from 1."""
    if version > len(migrations):
        raise StoreError(f"{location} was written by a newer threadkeep (schema {version})")
    return [(number, migrations[number - 1]) for number in range(version + 1, len(migrations) + 1)]
