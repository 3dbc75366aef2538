"""Ingest: read an export, rebuild the conversations that changed, embed what is new.

Each conversation is written in one transaction, so a crash leaves every
conversation either as it was or as it is now, and the next run picks up
where it stopped. A conversation whose messages did not change is not touched;
a chunk whose embedding input did not change keeps its vector.
"""

from __future__ import annotations

import hashlib
import json
from collections import defaultdict
from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path

import numpy as np

from threadkeep.chunks.chat import chunk_thread_windows
from threadkeep.chunks.document import chunk_document
from threadkeep.chunks.exchange import chunk_exchange
from threadkeep.documents import DocumentError, is_document, iter_documents, read_document
from threadkeep.embed import Embedder
from threadkeep.model import Chunk, Conversation, Message, ReadResult, Skip
from threadkeep.readers import UnknownFormatError, detect_format, read_path
from threadkeep.store import Store
from threadkeep.store.sqlite import input_hash
from threadkeep.threads import ThreadSettings, build_threads
from threadkeep.threads.exchanges import mark_turn_roles

# Bump when threading or chunking changes what the same messages produce, so stores rebuild.
PIPELINE_VERSION = "6"

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
# Suffixes no chat export uses: such a file is read as a document without asking the chat readers.
DOCUMENT_ONLY_SUFFIXES = frozenset({".md", ".markdown", ".html", ".htm", ".pdf", ".docx"})

ProgressCallback = Callable[[str, int, int], None]  # (stage, done, total)


@dataclass(slots=True)
class IngestReport:
    format: str = ""
    messages_read: int = 0
    conversations: int = 0
    conversations_rebuilt: int = 0
    threads: int = 0
    chunks: int = 0
    embedded: int = 0
    embeddings_reused: int = 0
    documents: int = 0
    documents_rebuilt: int = 0
    skipped: list[Skip] = field(default_factory=list)
    ignored: dict[str, int] = field(default_factory=dict)

    def to_dict(self) -> dict:
        data = asdict(self)
        data["skipped"] = [str(skip) for skip in self.skipped]
        return data


def content_hash(conversation: Conversation, messages: Sequence[Message], settings: ThreadSettings) -> str:
    digest = hashlib.sha256()
    chunking = f"{CHAT_WINDOW_TOKENS}|{EXCHANGE_EMBED_TOKENS}"
    digest.update(f"{PIPELINE_VERSION}|{chunking}|{settings!r}|{conversation.title}|{conversation.kind}".encode())
    for message in messages:
        record = asdict(message)
        digest.update(json.dumps(record, sort_keys=True, default=str, ensure_ascii=False).encode())
    return digest.hexdigest()


def merge_messages(stored: Sequence[Message], incoming: Sequence[Message]) -> list[Message]:
    """Stored messages updated by incoming ones (same id replaces); nothing stored is dropped."""
    by_id = {message.id: message for message in stored}
    by_id.update((message.id, message) for message in incoming)
    return sorted(by_id.values(), key=lambda message: message.sent_at)


def _embed_missing(
    chunks: Sequence[Chunk], known: dict[str, np.ndarray], embedder: Embedder, report: IngestReport
) -> dict[str, np.ndarray]:
    vectors: dict[str, np.ndarray] = {}
    todo: dict[str, str] = {}
    for chunk in chunks:
        if not chunk.embedding_input:
            continue
        key = input_hash(chunk.embedding_input)
        if key in known:
            vectors[key] = known[key]
            report.embeddings_reused += 1
        else:
            todo[key] = chunk.embedding_input
    if todo:
        matrix = embedder.embed_passages(list(todo.values()))
        vectors.update(zip(todo, matrix, strict=True))
        report.embedded += len(todo)
    return vectors


def rebuild_conversation(
    store: Store,
    conversation: Conversation,
    messages: Sequence[Message],
    embedder: Embedder,
    settings: ThreadSettings,
    report: IngestReport,
) -> bool:
    """Re-thread and re-chunk one conversation from all its messages, unless nothing changed.

    Returns whether the store was written. Vectors of chunks whose embedding input is
    unchanged are reused; only new inputs reach the embedder.
    """
    if conversation.kind == "assistant":
        messages = mark_turn_roles(messages)
    record = store.conversation_record(conversation.ref)
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
            for chunk in chunk_thread_windows(thread, by_id, embedder.count_tokens, CHAT_WINDOW_TOKENS)
        ]
    vectors = _embed_missing(chunks, store.embeddings_for(conversation.ref), embedder, report)
    store.replace_conversation(conversation, digest, messages, threads, chunks, vectors)
    report.conversations_rebuilt += 1
    report.threads += len(threads)
    report.chunks += len(chunks)
    return True


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
    for ref, incoming in by_conversation.items():
        conversation = conversations.get(ref) or Conversation(ref, ref, "group", result.format)
        stored = store.load_messages(ref) if store.conversation_record(ref) else []
        rebuild_conversation(store, conversation, merge_messages(stored, incoming), embedder, settings, report)
        done_messages += len(incoming)
        if progress:
            progress("conversations", done_messages, len(result.messages))
    return report


def ingest_documents(
    store: Store, path: Path, embedder: Embedder, progress: ProgressCallback | None = None
) -> IngestReport:
    """Ingest a document file or every document under a folder; unchanged documents are left alone."""
    store.bind_embedder(embedder.name, embedder.dim)
    report = IngestReport(format="document")
    root = path if path.is_dir() else path.parent
    files = list(iter_documents(path))
    max_tokens = embedder.max_tokens - TOKEN_MARGIN
    for done, file in enumerate(files, start=1):
        try:
            document = read_document(file, root)
        except DocumentError as error:
            report.skipped.append(Skip(str(file), None, error.reason))
            continue
        report.documents += 1
        digest = f"{PIPELINE_VERSION}:{document.content_hash}:{document.updated_at.isoformat()}:{max_tokens}"
        if store.document_hash(document.id) != digest:
            chunks = chunk_document(document, embedder.count_tokens, max_tokens=max_tokens)
            vectors = _embed_missing(chunks, store.embeddings_for(document.id), embedder, report)
            store.replace_document(document, digest, chunks, vectors)
            report.documents_rebuilt += 1
            report.chunks += len(chunks)
        if progress:
            progress("documents", done, len(files))
    return report


def is_document_input(path: Path) -> bool:
    """Documents rather than a chat export: a document file no chat reader claims, or a folder of them."""
    if path.is_file() and path.suffix.lower() in DOCUMENT_ONLY_SUFFIXES:
        return True
    try:
        detect_format(path)
    except UnknownFormatError:
        return is_document(path) if path.is_file() else any(True for _ in iter_documents(path))
    return False


def ingest_path(
    store: Store,
    path: str | Path,
    embedder: Embedder,
    format: str | None = None,
    settings: ThreadSettings | None = None,
    progress: ProgressCallback | None = None,
) -> IngestReport:
    """Ingest a chat export or documents, whichever `path` holds (`format="document"` forces documents)."""
    path = Path(path)
    if format == "document" or (format is None and path.exists() and is_document_input(path)):
        return ingest_documents(store, path, embedder, progress)
    return ingest_result(store, read_path(path, format), embedder, settings, progress)
