"""Ingest: read an export, rebuild the conversations that changed, then make the vectors that are new.

Each conversation is written in one transaction, so a crash leaves every
conversation either as it was or as it is now, and the next run picks up
where it stopped. A conversation whose messages did not change is not touched;
a chunk gets the vector the store has for its embedding input, from any
conversation or document. Chunks are written, searchable by full text, before
any new input is embedded: the vectors come after, from `threadkeep.backfill`.

Writers of the same conversation (an ingest and a delta at once, two servers)
never lose each other's messages: each read-merge-rebuild is committed only if
the conversation is still as it was read, and redone on what the other writer
stored otherwise (`update_conversation`).
"""

from __future__ import annotations

import dataclasses
import hashlib
import json
import operator
from collections import defaultdict
from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path

import numpy as np

from threadkeep.backfill import fill_vectors
from threadkeep.chunks.chat import chunk_thread_windows
from threadkeep.chunks.document import chunk_document
from threadkeep.chunks.exchange import chunk_exchange
from threadkeep.documents import DocumentError, is_document, read_document
from threadkeep.embed import Embedder
from threadkeep.model import SKIPS_SHOWN, Chunk, Conversation, Document, Message, ReadResult, Skip, summarize_skips
from threadkeep.readers import Limits, Plan, plan_path, read_units
from threadkeep.store import ConversationRecord, Store, StoreError
from threadkeep.store.base import BasedOn, ConcurrentWriteError
from threadkeep.store.rows import input_hash
from threadkeep.threads import ThreadSettings, build_threads
from threadkeep.threads.exchanges import mark_turn_roles

# Bump when threading or chunking changes what the same messages produce, so stores rebuild.
PIPELINE_VERSION = "31"

# Tokens kept free under the model's input size for the "passage: " prefix and special tokens.
TOKEN_MARGIN = 32
# Chat threads longer than this are split into overlapping windows: smaller windows keep each
# vector focused and cost fewer messages per hit (LoCoMo turn recall@10 / messages per 10 hits:
# .82 / 21 at 128 tokens, .847 / 31 at 176, .854 / 34.5 at 192, .849 / 36 at 200, .849 / 50 at
# 256; benchmarks/README.md).
CHAT_WINDOW_TOKENS = 192
# An assistant exchange embeds its question and the start of the reply up to this many tokens;
# full text reads all of it (chunks/exchange.py).
EXCHANGE_EMBED_TOKENS = 192
# A writer redoes its change when another writer of the same conversation committed first; each
# redo means another writer made progress, so only a conversation written nonstop by others runs out.
MAX_WRITE_ATTEMPTS = 20

ProgressCallback = Callable[[str, int, int], None]  # (stage, done, total)
# What a writer makes of a conversation as stored (None: not stored yet): the conversation and all its messages.
Revise = Callable[[ConversationRecord | None, list[Message]], tuple[Conversation, list[Message]]]


@dataclass(slots=True)
class IngestReport:
    """What an ingest read, wrote and could not use. Paths are relative to the path ingested."""

    format: str = ""  # the readers used, "+"-joined ("document" for documents)
    messages_read: int = 0
    conversations: int = 0
    conversations_rebuilt: int = 0
    threads: int = 0
    chunks: int = 0
    embedded: int = 0  # inputs embedded (by the embedding step, when the ingest waited for it)
    embeddings_reused: int = 0  # chunks written with the vector the store had for their input
    # Chunks with text to embed and, of those, chunks with a vector when the ingest returned: search is
    # hybrid over those, full text over the rest until the embedding step has filled them.
    to_embed: int = 0
    with_vector: int = 0
    documents: int = 0
    documents_rebuilt: int = 0
    redone: int = 0  # rebuilds done again because another writer changed the conversation first
    # Lines, records and files a reader could not use (bad lines, broken JSON, damaged documents).
    skipped: list[Skip] = field(default_factory=list)
    ignored: dict[str, int] = field(default_factory=dict)
    # Files no reader took (binary, media, unknown formats, hidden, over a limit), each with why.
    not_read: list[Skip] = field(default_factory=list)
    # Messages (chat formats) or documents read, per format.
    formats: dict[str, int] = field(default_factory=dict)

    @property
    def vectors(self) -> tuple[int, int]:
        return self.with_vector, self.to_embed

    @property
    def read_anything(self) -> bool:
        return self.messages_read > 0 or self.documents > 0

    def to_dict(self, skips_shown: int | None = SKIPS_SHOWN) -> dict:
        """The report as JSON; `skipped` and `not_read` are bounded summaries (`skips_shown` None lists all)."""
        data = asdict(self)
        data["skipped"] = summarize_skips(self.skipped, skips_shown)
        data["not_read"] = summarize_skips(self.not_read, skips_shown)
        return data


# Every field by name, nested dicts sorted, anything JSON lacks (times) as `str`: the bytes each
# message adds to its conversation's hash. A field-by-field dict, not `asdict`, which deep-copies;
# its keys already in order, read with one attrgetter.
_MESSAGE_FIELDS = tuple(sorted(item.name for item in dataclasses.fields(Message)))
_MESSAGE_VALUES = operator.attrgetter(*_MESSAGE_FIELDS)
_HASH_ENCODER = json.JSONEncoder(sort_keys=True, default=str, ensure_ascii=False)


def content_hash(conversation: Conversation, messages: Sequence[Message], settings: ThreadSettings) -> str:
    digest = hashlib.sha256()
    chunking = f"{CHAT_WINDOW_TOKENS}|{EXCHANGE_EMBED_TOKENS}"
    digest.update(f"{PIPELINE_VERSION}|{chunking}|{settings!r}|{conversation.title}|{conversation.kind}".encode())
    encode = _HASH_ENCODER.encode
    for message in messages:
        digest.update(encode(dict(zip(_MESSAGE_FIELDS, _MESSAGE_VALUES(message), strict=True))).encode())
    return digest.hexdigest()


def merge_messages(stored: Sequence[Message], incoming: Sequence[Message]) -> list[Message]:
    """Stored messages updated by incoming ones (same id replaces); nothing stored is dropped."""
    by_id = {message.id: message for message in stored}
    by_id.update((message.id, message) for message in incoming)
    return sorted(by_id.values(), key=lambda message: message.sent_at)


def _stored_vectors(store: Store, chunks: Sequence[Chunk], report: IngestReport) -> dict[str, np.ndarray]:
    """Vectors the store already has for the chunks' inputs (any conversation or document): written with
    the chunks, so only inputs new to the store are left for the embedding step."""
    keys = {input_hash(chunk.embedding_input) for chunk in chunks if chunk.embedding_input}
    known = store.vectors_by_input(keys)
    report.embeddings_reused += sum(
        1 for chunk in chunks if chunk.embedding_input and input_hash(chunk.embedding_input) in known
    )
    return known


def rebuild_conversation(
    store: Store,
    conversation: Conversation,
    messages: Sequence[Message],
    embedder: Embedder,
    settings: ThreadSettings,
    report: IngestReport,
    record: ConversationRecord | None,
) -> bool:
    """Re-thread and re-chunk one conversation from all its messages, unless nothing changed.

    `record` is the stored conversation the messages were computed from (None: not stored yet);
    the write commits only if it is still the stored one, else `ConcurrentWriteError`. Returns
    whether the store was written. Chunks get the vectors the store has for their inputs; the
    others are written without one, searchable by full text at once (`fill_vectors` embeds them).
    """
    if conversation.kind == "assistant":
        messages = mark_turn_roles(messages)
    digest = content_hash(conversation, messages, settings)
    if record is not None and record.content_hash == digest:
        return False
    threads = build_threads(conversation.kind, list(messages), settings)
    by_id = {message.id: message for message in messages}
    if conversation.kind == "assistant":
        max_tokens = min(EXCHANGE_EMBED_TOKENS, embedder.max_tokens - TOKEN_MARGIN)
        chunks = [c for thread in threads for c in chunk_exchange(thread, by_id, embedder.count_tokens, max_tokens)]
    else:
        chunks = [
            chunk
            for thread in threads
            for chunk in chunk_thread_windows(
                thread, by_id, embedder.count_tokens, CHAT_WINDOW_TOKENS, topical=conversation.kind == "group"
            )
        ]
    vectors = _stored_vectors(store, chunks, report)
    based_on = BasedOn(record.content_hash if record else None)
    store.replace_conversation(conversation, digest, messages, threads, chunks, vectors, based_on=based_on)
    report.conversations_rebuilt += 1
    report.threads += len(threads)
    report.chunks += len(chunks)
    return True


def merging(conversation: Conversation, incoming: Sequence[Message]) -> Revise:
    """The revision an export makes: its conversation, with its messages merged into the stored ones."""

    def revise(record: ConversationRecord | None, stored: list[Message]) -> tuple[Conversation, list[Message]]:
        return conversation, merge_messages(stored, incoming)

    return revise


def update_conversation(
    store: Store,
    ref: str,
    revise: Revise,
    embedder: Embedder,
    settings: ThreadSettings,
    report: IngestReport,
) -> bool:
    """Read one conversation, `revise` it, rebuild and write it, as if no other writer ran meanwhile.

    Threading runs outside any transaction, so writers do not hold each other up. The write
    commits only if the stored content hash is still the one that was read; when another writer
    committed first, the conversation is read again and `revise` runs on what that writer stored.
    Returns whether the store was written.
    """
    for _ in range(MAX_WRITE_ATTEMPTS):
        record, stored = store.read_conversation(ref)
        conversation, messages = revise(record, stored)
        try:
            return rebuild_conversation(store, conversation, messages, embedder, settings, report, record)
        except ConcurrentWriteError:
            report.redone += 1
    raise StoreError(f"conversation {ref!r} kept being changed by other writers ({MAX_WRITE_ATTEMPTS} tries)")


def ingest_result(
    store: Store,
    result: ReadResult,
    embedder: Embedder,
    settings: ThreadSettings | None = None,
    progress: ProgressCallback | None = None,
) -> IngestReport:
    """Store what a reader read: each conversation merged with what is stored, rebuilt if it changed."""
    settings = settings or ThreadSettings()
    store.bind_embedder(embedder.name, embedder.dim)
    report = IngestReport(
        format=result.format,
        messages_read=len(result.messages),
        skipped=list(result.skipped),
        ignored=dict(result.ignored),
    )
    by_conversation: dict[str, list[Message]] = defaultdict(list)
    for message in result.messages:
        by_conversation[message.conversation].append(message)
    conversations = {conversation.ref: conversation for conversation in result.conversations}
    report.conversations = len(by_conversation)
    done_messages = 0
    if progress:
        progress("conversations", 0, len(result.messages))
    for ref, incoming in by_conversation.items():
        conversation = conversations.get(ref) or Conversation(ref, ref, "group", result.format)
        update_conversation(store, ref, merging(conversation, incoming), embedder, settings, report)
        done_messages += len(incoming)
        if progress:
            progress("conversations", done_messages, len(result.messages))
    return report


def known_document(store: Store, document: Document, location: str) -> tuple[Document, bool]:
    """The document under the id the store knows it by: the same location (an absolute path, or a
    zip and member) or the same content is the same document, so a moved or re-rooted file is not a
    new one. A new document is named by its path relative to the ingested folder, lengthened
    towards the file system root while another document holds that name. Also says whether the
    document moved."""
    known = store.find_document(location, document.content_hash)
    if known is not None:
        return dataclasses.replace(document, id=known[0], path=location), known[1] != location
    parts = Path(location).parts
    depth = len(Path(document.id).parts)
    names = [document.id, *(Path(*parts[-n:]).as_posix() for n in range(depth + 1, len(parts)))]
    free = next((name for name in names if store.document_hash(name) is None), Path(location).as_posix())
    return dataclasses.replace(document, id=free, path=location), False


def ingest_documents(
    store: Store, plan: Plan, embedder: Embedder, report: IngestReport, progress: ProgressCallback | None = None
) -> None:
    """Ingest a plan's documents into `report`. A new document's id is its path relative to the path
    ingested; a document the store already has (same location or content) keeps its id."""
    units = plan.document_units()
    if not units:
        return
    store.bind_embedder(embedder.name, embedder.dim)
    max_tokens = embedder.max_tokens - TOKEN_MARGIN
    if progress:
        progress("documents", 0, len(units))
    seen: set[str] = set()
    for done, unit in enumerate(units, start=1):
        try:
            document = read_document(unit.path, unit.path.parent)
        except DocumentError as error:
            report.skipped.append(Skip(unit.display, None, error.reason))
            continue
        # A zip member's file is temporary: the zip and its member path say where it came from.
        where = unit.display if plan.in_archive(unit) else str(Path(document.path).resolve())
        document, moved = known_document(store, dataclasses.replace(document, id=unit.display), where)
        if document.id in seen:
            copies = "copies of a document read earlier in this folder"
            report.ignored[copies] = report.ignored.get(copies, 0) + 1
            continue
        seen.add(document.id)
        report.documents += 1
        digest = f"{PIPELINE_VERSION}:{document.content_hash}:{document.updated_at.isoformat()}:{max_tokens}"
        if moved or store.document_hash(document.id) != digest:
            chunks = chunk_document(document, embedder.count_tokens, max_tokens=max_tokens)
            store.replace_document(document, digest, chunks, _stored_vectors(store, chunks, report))
            report.documents_rebuilt += 1
            report.chunks += len(chunks)
        if progress:
            progress("documents", done, len(units))
    if report.documents:
        report.formats["document"] = report.documents


def ingest_plan(
    store: Store,
    plan: Plan,
    embedder: Embedder,
    settings: ThreadSettings | None = None,
    progress: ProgressCallback | None = None,
) -> IngestReport:
    """Ingest everything a walk found: chat exports, then documents; the rest is reported as not read."""
    if progress:
        progress("reading", 0, 0)
    result = read_units(plan)
    by_format: dict[str, int] = defaultdict(int)
    kinds = {conversation.ref: conversation.source_format for conversation in result.conversations}
    for message in result.messages:
        by_format[kinds.get(message.conversation) or result.format] += 1
    if result.messages:
        report = ingest_result(store, result, embedder, settings, progress)
    else:
        report = IngestReport(skipped=list(result.skipped), ignored=dict(result.ignored))
    report.not_read = list(result.not_read)
    report.formats = dict(by_format)
    ingest_documents(store, plan, embedder, report, progress)
    report.format = "+".join(sorted(report.formats)) or result.format
    return report


def ingest_path(
    store: Store,
    path: str | Path,
    embedder: Embedder,
    format: str | None = None,
    settings: ThreadSettings | None = None,
    progress: ProgressCallback | None = None,
    limits: Limits | None = None,
    wait: bool = True,
) -> IngestReport:
    """Ingest every chat export and document in a file, folder or zip (`format` forces one reader,
    `"document"` documents only); files no reader takes are listed in the report's `not_read`.

    Everything read is stored and searchable by full text before any new input is embedded; with
    `wait` the vectors are then made too (progress stage "vectors"), else left to `fill_vectors`."""
    with plan_path(path, format, is_document, limits, relative=True) as plan:
        report = ingest_plan(store, plan, embedder, settings, progress)
    if wait and report.read_anything:
        report.embedded = fill_vectors(store, embedder, progress).embedded
    report.with_vector, report.to_embed = store.vector_coverage()
    return report
