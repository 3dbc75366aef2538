"""The rows a SQL store keeps, defined once: each table's named columns, and how model objects
become rows and rows become model objects again.

A column has a *kind* saying what it holds; a backend decides only how each kind is held
(`Values`: a JSON list is TEXT in SQLite and text[] in PostgreSQL, an instant is REAL or
timestamptz), never which columns exist or what goes in them. Adding a field to a model object
is one `Column` here (and a migration per backend); encoding, decoding, inserting, copying and
reading it back all follow from the column.
"""

from __future__ import annotations

import dataclasses
import operator
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from datetime import datetime
from hashlib import sha256
from typing import Any, Literal

import numpy as np

from threadkeep.model import Chunk, Conversation, Message, Thread
from threadkeep.text import cjk_bigrams, content_tokens_by_line

Kind = Literal["key", "text", "int", "bool", "time", "instant", "list", "json", "vector"]
KINDS: frozenset[str] = frozenset(Kind.__args__)  # type: ignore[attr-defined]
# key: an identifier, kept byte for byte. text: free text. time: a moment as ISO text, with the
# UTC offset it was given (what is shown). instant: the same moment as sortable real time (what
# is compared; written, never read back). list: strings (a tuple in the model). json: an object.
# vector: float32 components.


@dataclass(frozen=True, slots=True)
class Column:
    name: str
    kind: Kind
    attribute: str  # the model attribute it holds, or the name of a value given when the row is written


class Table:
    """A table's columns, from `name:kind` words (`name:kind=attribute` when the model calls it otherwise).
    With a `model`, the columns holding the model's fields are read back into it."""

    def __init__(self, name: str, spec: str, model: type | None = None) -> None:
        self.name = name
        self.columns = tuple(_column(word) for word in spec.split())
        self.names = tuple(column.name for column in self.columns)
        self.column_list = ", ".join(self.names)
        fields = {item.name for item in dataclasses.fields(model)} if model else set()
        # An instant repeats a time for comparing; the time is what is read back.
        self.read = tuple(c for c in self.columns if c.attribute in fields and c.kind != "instant")
        self.read_list = ", ".join(column.name for column in self.read)
        # Where `encode` finds each column's value: a store writes rows by the thousand.
        self._sources = tuple((column.name, column.attribute) for column in self.columns)
        self._attributes = operator.attrgetter(*(column.attribute for column in self.columns))

    def insert_sql(self, conflict: str = "") -> str:
        """INSERT of every column with `?` placeholders; `conflict` an ON CONFLICT clause."""
        marks = ", ".join("?" * len(self.columns))
        return f"INSERT INTO {self.name} ({self.column_list}) VALUES ({marks}){conflict}"

    def upsert_sql(self, key: str) -> str:
        updates = ", ".join(f"{name} = excluded.{name}" for name in self.names if name != key)
        return self.insert_sql(f" ON CONFLICT ({key}) DO UPDATE SET {updates}")

    def encode(self, values: Values, item: object | None = None, **given: Any) -> tuple:
        """A row of `item`'s attributes (and the `given` values), each held as `values` holds its kind."""
        if given:
            found = [given[name] if name in given else getattr(item, attribute) for name, attribute in self._sources]
        else:
            found = self._attributes(item)
        pairs = zip(found, values.converters(self), strict=True)
        return tuple([value if value is None or convert is None else convert(value) for value, convert in pairs])

    def decode(self, values: Values, row: Sequence[Any]) -> dict[str, Any]:
        """The model attributes a row of the `read_list` columns holds."""
        return {
            column.attribute: _model(column.kind, values.decode(column.kind, value))
            for column, value in zip(self.read, row, strict=True)
        }


def _column(word: str) -> Column:
    name, _, kind = word.partition(":")
    kind, _, attribute = kind.partition("=")
    if kind not in KINDS:
        raise ValueError(f"column {name}: unknown kind {kind!r}")
    return Column(name, kind, attribute or name)  # type: ignore[arg-type]


# A model value as the kind's plain Python form, before a backend holds it its own way (kinds not
# named: as they are).
_NEUTRAL: dict[Kind, Callable[[Any], Any]] = {
    "time": datetime.isoformat,
    "list": list,
    "bool": bool,
    "vector": lambda value: np.asarray(value, dtype=np.float32),
}


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


class Values:
    """How one backend holds each kind of value: a function per kind it holds otherwise than Python does.
    NULL is None either way."""

    def __init__(
        self, encode: dict[Kind, Callable[[Any], Any]], decode: dict[Kind, Callable[[Any], Any]] | None = None
    ) -> None:
        self._encode, self._decode = encode, decode or {}
        self._converters: dict[str, tuple[Callable[[Any], Any] | None, ...]] = {}

    def encode(self, kind: Kind, value: Any) -> Any:
        convert = self._encode.get(kind)
        return value if value is None or convert is None else convert(value)

    def converters(self, table: Table) -> tuple[Callable[[Any], Any] | None, ...]:
        """Per column of `table`, what makes a (not None) model value a stored one; None: stored as it is.
        Made once per table: stores write rows by the thousand."""
        found = self._converters.get(table.name)
        if found is None:
            found = self._converters[table.name] = tuple(self._converter(column.kind) for column in table.columns)
        return found

    def _converter(self, kind: Kind) -> Callable[[Any], Any] | None:
        neutral, convert = _NEUTRAL.get(kind), self._encode.get(kind)
        if neutral is None or convert is None:
            return neutral or convert
        return lambda value: convert(neutral(value))

    def decode(self, kind: Kind, value: Any) -> Any:
        convert = self._decode.get(kind)
        return value if value is None or convert is None else convert(value)


# --- the tables -------------------------------------------------------------------------------

CONVERSATIONS = Table(
    "conversations", "ref:key title:text kind:key source_format:key metadata:json content_hash:key", Conversation
)
MESSAGES = Table(
    "messages",
    "conversation:key id:key position:int sender:text sender_name:text role:key kind:key sent_at:time "
    "sent_ts:instant=sent_at text:text reply_to:key mentions:list recalled:bool edited_at:time "
    "platform_thread:key metadata:json thread_id:key",
    Message,
)
THREADS = Table("threads", "id:key conversation:key message_ids:list reply_to:json chunk_id:key")
# search_words / search_bigrams: what full text indexes, segmented tokens space-separated (NULL: not indexed).
CHUNKS = Table(
    "chunks",
    "id:key source_type:key source_ref:key title:text text:text embedding_input:text input_hash:key "
    "embedding:vector occurred_at:time occurred_ts:instant=occurred_at started_at:time heading_path:list "
    "evidence_ids:list resolution_state:key has_unresolved_media:bool search_words:text search_bigrams:text",
    Chunk,
)
# content_hash: what the document was built from (see ingest_documents); file_hash: the file's own
# content (the model's content_hash), to know the document again elsewhere.
DOCUMENTS = Table("documents", "id:key title:text path:key updated_at:time content_hash:key file_hash:key=content_hash")
REVIEW_FLAGS = Table("review_flags", "conversation:key message_id:key reason:text flagged_at:time")
FORGOTTEN = Table("forgotten", "conversation:key title:text source_format:key messages:int forgotten_at:time")


# --- model objects as rows ----------------------------------------------------------------------


def input_hash(text: str) -> str:
    """The key a vector is stored and reused under: the hash of the text it embeds."""
    return sha256(text.encode("utf-8")).hexdigest()


def search_terms(chunk: Chunk) -> tuple[str | None, str | None]:
    """What full text indexes of a chunk, words and CJK character pairs; None for a chunk not indexed."""
    if not chunk.embedding_input:
        return None, None
    text = chunk.indexed_text
    return " ".join(content_tokens_by_line(text)), " ".join(cjk_bigrams(text))


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
