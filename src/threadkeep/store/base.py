"""What every store offers, whatever the database behind it."""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from contextlib import AbstractContextManager
from dataclasses import dataclass
from datetime import datetime
from hashlib import sha256
from typing import Any, Protocol

import numpy as np

from threadkeep.model import Chunk, Conversation, Document, Message, Thread


def chunk_from_row(row: Sequence[Any], decode: Callable[[Any], Any] = lambda value: value) -> Chunk:
    """A chunk from a row in `CHUNK_COLUMNS` order; `decode` turns stored JSON lists into lists."""
    (id_, source_type, source_ref, title, text, embedding_input, occurred_at, started_at, heading_path,
     evidence_ids, resolution_state, media) = row  # fmt: skip
    return Chunk(
        id=id_,
        source_type=source_type,
        source_ref=source_ref,
        title=title,
        text=text,
        embedding_input=embedding_input,
        occurred_at=datetime.fromisoformat(occurred_at),
        started_at=datetime.fromisoformat(started_at) if started_at else None,
        heading_path=tuple(decode(heading_path)) if heading_path else None,
        evidence_ids=tuple(decode(evidence_ids)) if evidence_ids else None,
        resolution_state=resolution_state,
        has_unresolved_media=bool(media),
    )


MESSAGE_COLUMNS = (
    "id, conversation, sender, sent_at, text, kind, role, sender_name, reply_to, mentions, recalled, "
    "edited_at, platform_thread, metadata"
)


def message_from_row(row: Sequence[Any], decode: Callable[[Any], Any] = lambda value: value) -> Message:
    """A message from a row in `MESSAGE_COLUMNS` order; `decode` turns stored JSON into Python values."""
    return Message(
        id=row[0],
        conversation=row[1],
        sender=row[2],
        sent_at=datetime.fromisoformat(row[3]),
        text=row[4],
        kind=row[5],
        role=row[6],
        sender_name=row[7],
        reply_to=row[8],
        mentions=tuple(decode(row[9])),
        recalled=bool(row[10]),
        edited_at=datetime.fromisoformat(row[11]) if row[11] else None,
        platform_thread=row[12],
        metadata=decode(row[13]),
    )


# What `forget_conversation` records about a conversation it removed (never its messages).
FORGOTTEN_KEYS = ("conversation", "title", "source_format", "messages", "forgotten_at")

CHUNK_COLUMNS = (
    "id, source_type, source_ref, title, text, embedding_input, occurred_at, started_at, heading_path, "
    "evidence_ids, resolution_state, has_unresolved_media"
)


@dataclass(frozen=True, slots=True)
class ThreadRow:
    id: str
    conversation: str
    message_ids: tuple[str, ...]
    reply_to: dict[str, str]
    chunk_id: str | None


def thread_rows(
    conversation: str, threads: Sequence[Thread], chunks: Sequence[Chunk]
) -> tuple[list[ThreadRow], dict[str, str]]:
    """The rows a store keeps for a conversation's threads, and each message's thread id."""
    chunk_of_message = {chunk.evidence_ids[0]: chunk.id for chunk in chunks if chunk.evidence_ids}
    rows: list[ThreadRow] = []
    thread_of: dict[str, str] = {}
    for thread in threads:
        thread_id = f"{conversation}#{thread.message_ids[0]}"
        chunk = next((chunk_of_message[mid] for mid in thread.message_ids if mid in chunk_of_message), None)
        rows.append(ThreadRow(thread_id, conversation, thread.message_ids, thread.reply_to, chunk))
        thread_of.update(dict.fromkeys(thread.message_ids, thread_id))
    return rows, thread_of


class StoreError(RuntimeError):
    """The store cannot do what was asked (wrong model, bad location, constraint...)."""


class StoreNotFound(StoreError):
    """No store exists at the location, and the caller did not ask to create one."""

    def __init__(self, location: str) -> None:
        super().__init__(f"there is no store at {location}")
        self.location = location


class ConcurrentWriteError(StoreError):
    """Another writer changed the conversation after it was read: read it again and redo the change."""


@dataclass(frozen=True, slots=True)
class BasedOn:
    """The stored state a rebuild was computed from: the conversation's content hash when it was
    read, None when it was not stored yet. A write based on it commits only if it is still current."""

    content_hash: str | None


def require_current(ref: str, based_on: BasedOn | None, current_hash: str | None) -> None:
    """Called inside the write transaction, with the writer lock held: refuse a stale write."""
    if based_on is not None and based_on.content_hash != current_hash:
        raise ConcurrentWriteError(f"conversation {ref!r} was changed by another writer since it was read")


@dataclass(frozen=True, slots=True)
class SearchFilters:
    conversation: str | None = None
    source_type: str | None = None
    since: datetime | None = None
    until: datetime | None = None


@dataclass(frozen=True, slots=True)
class ConversationRecord:
    conversation: Conversation
    content_hash: str


class VectorClaim:
    """Inputs no chunk of the store has a vector for yet, held by one embedder until `fill` or the end
    of the claim (PostgreSQL: row locks other processes skip; SQLite: one machine, nothing held)."""

    def __init__(self, inputs: dict[str, str], reused: int, fill: Callable[[dict[str, np.ndarray]], int]) -> None:
        self.inputs = inputs  # embedding-input hash -> the text to embed
        self.reused = reused  # pending chunks given the vector another chunk with the same input had
        self._fill = fill

    def fill(self, vectors: dict[str, np.ndarray]) -> int:
        """Store the vectors (by input hash) on every claimed chunk with that input; returns chunks filled."""
        return self._fill(vectors) if vectors else 0


class Store(Protocol):
    address: str  # what `open_store` takes to reach this store again (may hold a password)
    name: str  # how to name the store to someone who must not learn where it is (file or database name)

    def close(self) -> None: ...

    def bind_embedder(self, name: str, dim: int) -> None:
        """Record the embedding model on first use; refuse a different one later."""

    def conversation_record(self, ref: str) -> ConversationRecord | None: ...

    def load_messages(self, conversation: str) -> list[Message]: ...

    def read_conversation(self, ref: str) -> tuple[ConversationRecord | None, list[Message]]:
        """The conversation's record and its messages, read from one snapshot."""

    def load_thread(self, conversation: str, message_id: str) -> list[Message]:
        """Every message of the thread holding `message_id`, in time order (empty if unknown)."""

    def embeddings_for(self, source_ref: str) -> dict[str, np.ndarray]:
        """Stored vectors of one conversation's or document's chunks, by embedding-input hash."""

    def vectors_by_input(self, hashes: Iterable[str]) -> dict[str, np.ndarray]:
        """Vectors any chunk of the store has for these embedding-input hashes."""

    def vector_coverage(self) -> tuple[int, int]:
        """(chunks with a vector, chunks with text to embed): search is hybrid over the first only."""

    def pending_vectors(self) -> int:
        """Chunks with text to embed and no vector; costs about one index entry per such chunk."""

    def claim_pending(self, limit: int) -> AbstractContextManager[VectorClaim]:
        """Claim up to `limit` chunks that have text to embed and no vector. Those whose input another
        chunk already has a vector for get it at once; the claim lists the other inputs, once each."""

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

    def document_hash(self, document_id: str) -> str | None: ...

    def find_document(self, path: str, file_hash: str) -> tuple[str, str] | None:
        """(id, path) of the stored document at this absolute path, else of one with the same file content."""

    def replace_document(
        self, document: Document, content_hash: str, chunks: Sequence[Chunk], embeddings: dict[str, np.ndarray]
    ) -> None:
        """Atomically replace one document and its chunks."""

    def remove_document(self, document_id: str) -> bool: ...

    def list_documents(self) -> list[dict[str, str]]: ...

    def list_conversations(self) -> list[dict[str, object]]:
        """ref, title, kind, source_format, messages, first_message_at, last_message_at, metadata."""

    def forget_conversation(self, ref: str, forgotten_at: datetime) -> dict[str, object] | None:
        """Delete a conversation with its messages, threads, chunks and review flags, in one transaction,
        and record what went (`FORGOTTEN_KEYS`, no message text). None when there is no such conversation."""

    def forgotten_conversations(self) -> list[dict[str, object]]:
        """The records `forget_conversation` left, oldest first."""

    def flag_for_review(self, conversation: str, message_id: str, reason: str, flagged_at: datetime) -> None:
        """Remember that a message needs a person's look (e.g. the exporter no longer saw it). Deletes nothing."""

    def review_items(self) -> list[dict[str, object]]: ...

    def integrity_problems(self) -> list[str]:
        """What is wrong with the stored data, as readable sentences (empty when all is well)."""

    def dense_candidates(self, query: np.ndarray, k: int, filters: SearchFilters) -> list[tuple[str, float]]: ...

    def lexical_candidates(self, text: str, k: int, filters: SearchFilters) -> list[tuple[str, float]]: ...

    def get_chunks(self, ids: Iterable[str]) -> dict[str, Chunk]: ...

    def recent_chat_chunks(self, resolution_state: str, limit: int) -> list[Chunk]:
        """The latest chat chunks in this state, newest first (the start page's example questions)."""

    def stats(self) -> dict[str, object]: ...


# --- full text and content hashes, the same for every backend ---------------------------------

# CJK character pairs back up word segmentation in full text, at a tenth of a word's weight.
BIGRAM_WEIGHT = 0.1

# A full-text query costs about one score per posting of its terms (≈ 2 µs each: a word in a third
# of a million chunks cost 1.2-1.9 CPU-s). Terms are taken rarest first while their postings fit
# this budget (the rarest always), so codes and rare words decide and the commonest words, which
# barely move a BM25 ranking (idf ln 200 at this share of 1M chunks, against ≈ 12 for a code),
# are left out. A store this small never drops a term.
POSTINGS_BUDGET = 5_000
# When even the rarest term is past the budget, its newest matches are taken, at most this many
# (PostgreSQL ranks them; SQLite cannot rank without reading every posting).
NEWEST_MATCHES = 2_000


@dataclass(frozen=True, slots=True)
class TermPlan:
    words: list[str]
    bigrams: list[str]
    bounded: bool  # rank only the newest NEWEST_MATCHES matches


def plan_terms(words: Iterable[str], bigrams: Iterable[str], documents: Callable[[str, str], int]) -> TermPlan:
    """Which query terms to search, given `documents(column, term)`: how many chunks hold the term."""
    counted = sorted(
        (documents(column, term), order, column, term)
        for order, (column, term) in enumerate(
            [*(("words", w) for w in dict.fromkeys(words)), *(("bigrams", b) for b in dict.fromkeys(bigrams))]
        )
    )
    kept: list[tuple[int, str, str]] = []
    postings = 0
    for count, order, column, term in counted:
        if kept and postings + count > POSTINGS_BUDGET:
            break
        kept.append((order, column, term))
        postings += count
    kept.sort()
    return TermPlan(
        [term for _, column, term in kept if column == "words"],
        [term for _, column, term in kept if column == "bigrams"],
        postings > POSTINGS_BUDGET,
    )


def input_hash(text: str) -> str:
    """The key a vector is stored and reused under: the hash of the text it embeds."""
    return sha256(text.encode("utf-8")).hexdigest()
