"""The rows a SQL store keeps, defined once: each table's named columns, and how model objects
become rows and rows become model objects again.

A column has a *kind* saying what it holds; a backend decides only how each kind is held
(`Values`: a JSON list is TEXT in SQLite and text[] in PostgreSQL, an instant is REAL or
timestamptz), never which columns exist or what goes in them. Adding a field to a model object
is one `Column` here (and a migration per backend); encoding, decoding, inserting, copying and
reading it back all follow from the column.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from datetime import datetime
from hashlib import sha256
from typing import Any, Literal, Protocol

import numpy as np

from threadkeep.model import Chunk, Conversation, Message, Thread
from threadkeep.text import cjk_bigrams, content_tokens

Kind = Literal["key", "text", "int", "bool", "time", "instant", "list", "json", "vector"]
# key: an identifier, kept byte for byte. text: free text. time: a moment as ISO text, with the
# UTC offset it was given (what is shown). instant: the same moment as sortable real time (what
# is compared; written, never read back). list: strings (a tuple in the model). json: an object.
# vector: float32 components.


@dataclass(frozen=True, slots=True)
class Column:
    name: str
    kind: Kind
    field: str | None = None  # the model attribute it holds; None: given when the row is written

    @property
    def attribute(self) -> str:
        return self.field or self.name


@dataclass(frozen=True)
class Table:
    name: str
    columns: tuple[Column, ...]
    # Columns read back into the model object, in the order `decode` takes them.
    read: tuple[str, ...] = ()
    names: tuple[str, ...] = field(init=False)

    def __post_init__(self) -> None:
        object.__setattr__(self, "names", tuple(column.name for column in self.columns))

    @property
    def column_list(self) -> str:
        return ", ".join(self.names)

    @property
    def read_list(self) -> str:
        return ", ".join(self.read)

    def kind(self, name: str) -> Kind:
        return next(column.kind for column in self.columns if column.name == name)

    def insert_sql(self, conflict: str = "") -> str:
        """INSERT of every column with `?` placeholders; `conflict` an ON CONFLICT clause."""
        marks = ", ".join("?" * len(self.columns))
        return f"INSERT INTO {self.name} ({self.column_list}) VALUES ({marks}){conflict}"

    def upsert_sql(self, key: str) -> str:
        updates = ", ".join(f"{name} = excluded.{name}" for name in self.names if name != key)
        return self.insert_sql(f" ON CONFLICT ({key}) DO UPDATE SET {updates}")

    def encode(self, values: Values, item: object | None = None, **given: Any) -> tuple:
        """A row of `item`'s attributes (and the `given` values), each held as `values` holds its kind."""
        row = []
        for column in self.columns:
            value = given[column.name] if column.name in given else getattr(item, column.attribute)
            row.append(values.encode(column.kind, _neutral(column.kind, value)))
        return tuple(row)

    def decode(self, values: Values, row: Sequence[Any]) -> dict[str, Any]:
        """The attributes a row in `read` order holds, by attribute name."""
        decoded = {}
        for name, value in zip(self.read, row, strict=True):
            column = next(column for column in self.columns if column.name == name)
            decoded[column.attribute] = _model(column.kind, values.decode(column.kind, value))
        return decoded


def _neutral(kind: Kind, value: Any) -> Any:
    """A model value as the kind's plain Python form, before a backend holds it its own way."""
    if value is None:
        return None
    if kind == "time":
        return value.isoformat()
    if kind == "list":
        return list(value)
    if kind == "bool":
        return bool(value)
    if kind == "vector":
        return np.asarray(value, dtype=np.float32)
    return value


def _model(kind: Kind, value: Any) -> Any:
    if value is None:
        return None
    if kind == "time":
        return datetime.fromisoformat(value)
    if kind == "list":
        return tuple(value)
    if kind == "bool":
        return bool(value)
    return value


class Values(Protocol):
    """How one backend holds each kind of value."""

    def encode(self, kind: Kind, value: Any) -> Any: ...

    def decode(self, kind: Kind, value: Any) -> Any: ...


# --- the tables -------------------------------------------------------------------------------

CONVERSATIONS = Table(
    "conversations",
    (
        Column("ref", "key"),
        Column("title", "text"),
        Column("kind", "key"),
        Column("source_format", "key"),
        Column("metadata", "json"),
        Column("content_hash", "key"),
    ),
    read=("ref", "title", "kind", "source_format", "metadata"),
)

MESSAGES = Table(
    "messages",
    (
        Column("conversation", "key"),
        Column("id", "key"),
        Column("position", "int"),
        Column("sender", "text"),
        Column("sender_name", "text"),
        Column("role", "key"),
        Column("kind", "key"),
        Column("sent_at", "time"),
        Column("sent_ts", "instant", "sent_at"),
        Column("text", "text"),
        Column("reply_to", "key"),
        Column("mentions", "list"),
        Column("recalled", "bool"),
        Column("edited_at", "time"),
        Column("platform_thread", "key"),
        Column("metadata", "json"),
        Column("thread_id", "key"),
    ),
    read=(
        "id",
        "conversation",
        "sender",
        "sent_at",
        "text",
        "kind",
        "role",
        "sender_name",
        "reply_to",
        "mentions",
        "recalled",
        "edited_at",
        "platform_thread",
        "metadata",
    ),
)

THREADS = Table(
    "threads",
    (
        Column("id", "key"),
        Column("conversation", "key"),
        Column("message_ids", "list"),
        Column("reply_to", "json"),
        Column("chunk_id", "key"),
    ),
)

CHUNKS = Table(
    "chunks",
    (
        Column("id", "key"),
        Column("source_type", "key"),
        Column("source_ref", "key"),
        Column("title", "text"),
        Column("text", "text"),
        Column("embedding_input", "text"),
        Column("input_hash", "key"),
        Column("embedding", "vector"),
        Column("occurred_at", "time"),
        Column("occurred_ts", "instant", "occurred_at"),
        Column("started_at", "time"),
        Column("heading_path", "list"),
        Column("evidence_ids", "list"),
        Column("resolution_state", "key"),
        Column("has_unresolved_media", "bool"),
        # What full text indexes: segmented tokens, space-separated; NULL when not indexed.
        Column("search_words", "text"),
        Column("search_bigrams", "text"),
    ),
    read=(
        "id",
        "source_type",
        "source_ref",
        "title",
        "text",
        "embedding_input",
        "occurred_at",
        "started_at",
        "heading_path",
        "evidence_ids",
        "resolution_state",
        "has_unresolved_media",
    ),
)

DOCUMENTS = Table(
    "documents",
    (
        Column("id", "key"),
        Column("title", "text"),
        Column("path", "key"),
        Column("updated_at", "time"),
        Column("content_hash", "key"),  # what the document was built from (see ingest_documents)
        Column("file_hash", "key", "content_hash"),  # the file's own content, to know it again elsewhere
    ),
)

REVIEW_FLAGS = Table(
    "review_flags",
    (
        Column("conversation", "key"),
        Column("message_id", "key"),
        Column("reason", "text"),
        Column("flagged_at", "time"),
    ),
)

FORGOTTEN = Table(
    "forgotten",
    (
        Column("conversation", "key"),
        Column("title", "text"),
        Column("source_format", "key"),
        Column("messages", "int"),
        Column("forgotten_at", "time"),
    ),
)


# --- model objects as rows ----------------------------------------------------------------------


def input_hash(text: str) -> str:
    """The key a vector is stored and reused under: the hash of the text it embeds."""
    return sha256(text.encode("utf-8")).hexdigest()


def search_terms(chunk: Chunk) -> tuple[str | None, str | None]:
    """What full text indexes of a chunk, words and CJK character pairs; None for a chunk not indexed."""
    if not chunk.embedding_input:
        return None, None
    text = chunk.indexed_text
    return " ".join(content_tokens(text)), " ".join(cjk_bigrams(text))


def chunk_row(values: Values, chunk: Chunk, embeddings: dict[str, np.ndarray]) -> tuple:
    key = input_hash(chunk.embedding_input)
    words, bigrams = search_terms(chunk)
    vector = embeddings.get(key) if chunk.embedding_input else None
    return CHUNKS.encode(values, chunk, input_hash=key, embedding=vector, search_words=words, search_bigrams=bigrams)


def chunk_from_row(values: Values, row: Sequence[Any]) -> Chunk:
    """A chunk from a row of `CHUNKS.read` columns."""
    return Chunk(**CHUNKS.decode(values, row))


def message_from_row(values: Values, row: Sequence[Any]) -> Message:
    """A message from a row of `MESSAGES.read` columns."""
    return Message(**MESSAGES.decode(values, row))


def conversation_from_row(values: Values, row: Sequence[Any]) -> Conversation:
    return Conversation(**CONVERSATIONS.decode(values, row))


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
