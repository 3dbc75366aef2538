"""The Python entry point the CLI, HTTP and MCP layers all call.

from threadkeep.api import KnowledgeBase
with KnowledgeBase.open("team.db") as kb:
    kb.ingest("exports/support-group/")
    for hit in kb.search("点图标没反应"):
        print(hit.chunk.text)
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, replace
from datetime import UTC, datetime
from pathlib import Path
from typing import TYPE_CHECKING

from threadkeep.embed import Embedder, get_embedder
from threadkeep.errors import InputError
from threadkeep.model import (
    Chunk,
    Conversation,
    ConversationSummary,
    DocumentSummary,
    ForgottenConversation,
    Hit,
    Message,
    ReadResult,
    ReviewItem,
    Thread,
)
from threadkeep.search import SearchSettings, pending_coverage, retrieve
from threadkeep.store import SearchFilters, Store, default_location, open_store

# Ingest, answering, readers and threading are imported where they are used: a search (every CLI
# call pays its imports) needs none of them, and together they cost most of a cold start.
if TYPE_CHECKING:
    from threadkeep.answer import Answer
    from threadkeep.backfill import FillReport, Progress
    from threadkeep.delta import DeltaReport
    from threadkeep.generate import Endpoint
    from threadkeep.ingest import IngestReport, ProgressCallback
    from threadkeep.readers import Limits
    from threadkeep.threads import ThreadSettings

# An example question is a single short line, so it reads as something a person would type.
EXAMPLE_CHARS = (6, 80)


def attachment_name(message: Message) -> str:
    """`[文件] 日志.zip` as exported, or the file name with its kind, or the kind alone."""
    text = message.text.strip().splitlines()[0] if message.text.strip() else ""
    if text.startswith(("[", "<")):
        return text
    return f"{text} ({message.kind})" if text else f"a {message.kind}"


def coverage_to_dict(vectors: tuple[int, int] | None, stopped: str | None = None) -> dict:
    """The `vectors` entry of search and ask results: present only while some vectors are still to be
    made, so a client can say that the rest was found by its words alone (and, with `stopped`, what
    stopped the process making them)."""
    if not vectors:
        return {}
    return {"vectors": {"with_vector": vectors[0], "to_embed": vectors[1], **({"stopped": stopped} if stopped else {})}}


@dataclass(frozen=True, slots=True)
class ThreadView:
    """A thread's messages, with `context` messages of the conversation around it when asked for.

    `cited` holds the messages the citation rests on; `in_thread` those of the thread itself.
    """

    conversation: str
    messages: list[Message]
    cited: frozenset[str]
    in_thread: frozenset[str] = frozenset()

    def to_dict(self) -> dict:
        return {
            "conversation": self.conversation,
            "messages": [
                {
                    "id": m.id,
                    "sender": m.sender,
                    "sender_name": m.display_name,
                    "sent_at": m.sent_at.isoformat(),
                    "text": "" if m.recalled else m.text,
                    "kind": m.kind,
                    "recalled": m.recalled,
                    "cited": m.id in self.cited,
                    "in_thread": m.id in self.in_thread if self.in_thread else True,
                }
                for m in self.messages
            ],
        }


class KnowledgeBase:
    """One store and its embedder, and everything people and clients do with them.

    The CLI, the HTTP API and the MCP server go through this class only; `store` is public for
    tests and benchmarks that look underneath.
    """

    def __init__(self, store: Store, embedder: Embedder | None = None) -> None:
        self.store = store
        self._embedder = embedder

    @classmethod
    def open(
        cls, location: str | Path | None = None, embedder: Embedder | str | None = None, create: bool = True
    ) -> KnowledgeBase:
        """The knowledge base at `location`; without `create`, `StoreNotFound` when there is none yet."""
        if isinstance(embedder, str):
            embedder = get_embedder(embedder)
        return cls(open_store(location, create=create), embedder)

    @staticmethod
    def default_location() -> str:
        """Where `open` looks without a location: `THREADKEEP_DB`, else a file in the user's data folder."""
        return default_location()

    @property
    def embedder(self) -> Embedder:
        if self._embedder is None:
            self._embedder = get_embedder()
        return self._embedder

    def __enter__(self) -> KnowledgeBase:
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.close()

    def close(self) -> None:
        self.store.close()

    def ingest(
        self,
        path: str | Path,
        format: str | None = None,
        settings: ThreadSettings | None = None,
        progress: ProgressCallback | None = None,
        limits: Limits | None = None,
        wait: bool = True,
    ) -> IngestReport:
        """Ingest every chat export and document under `path` (file, folder or zip); see `IngestReport`.
        Searchable by full text once stored; `wait` also makes the vectors, else `fill_vectors` does."""
        from threadkeep.ingest import ingest_path

        return ingest_path(self.store, path, self.embedder, format, settings, progress, limits, wait)

    def fill_vectors(self, progress: Progress | None = None) -> FillReport:
        """Embed every chunk stored without a vector (those an ingest without `wait` left)."""
        from threadkeep.backfill import fill_vectors

        return fill_vectors(self.store, self.embedder, progress)

    def embed(
        self, progress: Progress | None = None, stop: Callable[[], bool] | None = None, wait: bool = True
    ) -> FillReport | None:
        """`fill_vectors` as the store's one embedding process: while another runs, `wait` follows it and
        takes over the rest; without `wait`, None at once (see `backfill.fill_store`)."""
        from threadkeep.backfill import fill_store

        return fill_store(self.store, self.embedder, progress, stop, wait)

    def embedding_process(self) -> int | None:
        """The process id of the last process that embedded this (SQLite) store, if known."""
        from threadkeep.backfill import lock_holder

        return lock_holder(self.store)

    def start_background_embedding(self) -> int:
        """Start a detached `threadkeep embed --background` for this store; returns its process id."""
        from threadkeep.backfill import log_path, start_background_fill

        return start_background_fill(self.store.address, self.embedder.name, log_path(self.store)).pid

    def embedding_failure(self) -> str | None:
        """What stopped the background embedding process (SQLite), while vectors are still missing."""
        from threadkeep.backfill import background_failure

        return background_failure(self.store)

    def pending_coverage(self) -> tuple[int, int] | None:
        """`vector_coverage()` while some vectors are still to be made, else None (cheap when none are)."""
        return pending_coverage(self.store)

    def vector_coverage(self) -> tuple[int, int]:
        """(chunks with a vector, chunks with text to embed): search is hybrid over the first, full text over all."""
        return self.store.vector_coverage()

    def search(
        self,
        query: str,
        k: int = 10,
        filters: SearchFilters | None = None,
        now: datetime | None = None,
        settings: SearchSettings | None = None,
        per_source: int | None = None,
    ) -> list[Hit]:
        """The best `k` hits; with `per_source`, up to that many documents and chat threads each, interleaved.
        Chat hits are named by their conversation's title."""
        hits = retrieve(self.store, self.embedder, query, k, filters, now, settings, per_source).hits
        conversations = self._conversations_of(hits)
        return [self._as_shown(hit, conversations.get(hit.chunk.source_ref)) for hit in hits]

    @staticmethod
    def _as_shown(hit: Hit, conversation: Conversation | None) -> Hit:
        """A chat hit named by its conversation's title; an assistant session claims no resolution state."""
        if hit.chunk.source_type != "chat" or conversation is None:
            return hit
        state = None if conversation.kind == "assistant" else hit.chunk.resolution_state
        return replace(hit, chunk=replace(hit.chunk, title=conversation.display_title, resolution_state=state))

    def _conversations_of(self, hits: list[Hit]) -> dict[str, Conversation]:
        refs = {hit.chunk.source_ref for hit in hits if hit.chunk.source_type == "chat"}
        records = {ref: self.store.conversation_record(ref) for ref in refs}
        return {ref: record.conversation for ref, record in records.items() if record is not None}

    def ask(
        self,
        question: str,
        k: int = 10,
        filters: SearchFilters | None = None,
        now: datetime | None = None,
        endpoint: Endpoint | None = None,
        show_nearest: bool = False,
    ) -> Answer:
        """A grouped, cited answer, or no answer with the reason and the nearest passages (labelled as not an
        answer); `show_nearest` adds those to an answer too. A configured model only words an answer."""
        from threadkeep.answer import build_answer
        from threadkeep.answerability import Assessment, assess
        from threadkeep.generate import generate

        if not self.store.has_chunks():
            figures = self.store.stats()
            reason = f"the store is empty ({figures.get('location')}); ingest an export or documents first"
            answer = build_answer(question, [], {}, Assessment(False, reason))
            return answer
        # Each source is retrieved and scaled on its own, so documents cannot crowd chat out (or the reverse).
        retrieval = retrieve(self.store, self.embedder, question, k, filters, now, per_source=k)
        assessment = assess(question, retrieval, self.store, filters)
        conversations = self._conversations_of(retrieval.hits)
        hits = [self._as_shown(hit, conversations.get(hit.chunk.source_ref)) for hit in retrieval.hits]
        titles = {ref: conversation.display_title for ref, conversation in conversations.items()}
        kinds = {ref: conversation.kind for ref, conversation in conversations.items()}
        answer = build_answer(question, hits, titles, assessment, show_nearest, kinds, self._attachments)
        if endpoint is not None and answer.status == "answered":
            answer.generated_text = generate(answer, endpoint)
        return answer

    def _attachments(self, chunk: Chunk) -> list[str]:
        """The media messages of a cited chat chunk, named as the export named them."""
        if not chunk.evidence_ids:
            return []
        cited = set(chunk.evidence_ids)
        messages = self.store.load_thread(chunk.source_ref, chunk.evidence_ids[0])
        return [attachment_name(m) for m in messages if m.id in cited and m.is_media]

    def thread(
        self,
        chunk_id: str | None = None,
        conversation: str | None = None,
        message_id: str | None = None,
        context: int = 0,
    ) -> ThreadView | None:
        """The full transcript behind a chat chunk, or the thread holding a message, with cited ids marked;
        with `context`, also that many messages of the conversation before and after the thread."""
        cited: tuple[str, ...] = ()
        if chunk_id is not None:
            chunk = self.store.get_chunks([chunk_id]).get(chunk_id)
            if chunk is None or chunk.source_type != "chat" or not chunk.evidence_ids:
                return None
            conversation, message_id, cited = chunk.source_ref, chunk.evidence_ids[0], chunk.evidence_ids
        if conversation is None or message_id is None:
            raise InputError("give a chunk id, or a conversation and a message id")
        messages = self.store.load_thread(conversation, message_id)
        if not messages:
            return None
        thread_ids = frozenset(m.id for m in messages)
        if context > 0:
            everything = self.store.load_messages(conversation)
            positions = [index for index, m in enumerate(everything) if m.id in thread_ids]
            messages = everything[max(0, positions[0] - context) : positions[-1] + context + 1]
        return ThreadView(conversation, messages, frozenset(cited or (message_id,)), thread_ids)

    def apply_delta(self, path: str | Path, settings: ThreadSettings | None = None) -> DeltaReport:
        from threadkeep.backfill import fill_vectors
        from threadkeep.delta import apply_delta

        report = apply_delta(self.store, path, self.embedder, settings)
        report.embedded = fill_vectors(self.store, self.embedder).embedded
        report.with_vector, report.to_embed = self.store.vector_coverage()
        return report

    @property
    def location(self) -> str:
        """What `KnowledgeBase.open` takes to reach this store again (a path, or a URL that may hold a password)."""
        return self.store.address

    @property
    def name(self) -> str:
        """The store named for someone who must not learn where it is: its file or database name."""
        return self.store.name

    def stats(self) -> dict[str, object]:
        return self.store.stats()

    def is_empty(self) -> bool:
        return not self.store.has_chunks()

    def chunk(self, chunk_id: str) -> Chunk | None:
        return self.store.get_chunks([chunk_id]).get(chunk_id)

    def conversations(self) -> list[ConversationSummary]:
        """Every conversation, by ref: what it is, its message count, its first and last message time."""
        return self.store.list_conversations()

    def documents(self) -> list[DocumentSummary]:
        """Every document, by id."""
        return self.store.list_documents()

    def overview(self, examples: int = 3, shown: int = 8) -> Overview:
        """What a start page shows: the counts, the largest conversations, the latest documents, and a
        few example questions, each the opening question of a resolved discussion that `ask` answers."""
        conversations = sorted(self.conversations(), key=lambda item: -item.messages)
        documents = sorted(self.documents(), key=lambda item: item.updated_at, reverse=True)
        return Overview(self.stats(), conversations[:shown], documents[:shown], self.example_questions(examples))

    def example_questions(self, count: int = 3, tried: int = 8) -> list[str]:
        """Opening questions of recent resolved discussions that get an answer (at most `tried` asked)."""
        from threadkeep.text import is_question

        found: list[str] = []
        candidates = 0
        for chunk in self.store.recent_chat_chunks("resolved", count * 10):
            opening = chunk.text.split("\n", 1)[0]
            text = opening.split(": ", 1)[1].strip() if opening.startswith("[") and ": " in opening else opening
            if not is_question(text) or not EXAMPLE_CHARS[0] <= len(text) <= EXAMPLE_CHARS[1] or text in found:
                continue
            candidates += 1
            if self.ask(text).status == "answered":
                found.append(text)
            if len(found) == count or candidates == tried:
                break
        return found

    def forget(self, conversation: str, now: datetime | None = None) -> ForgottenConversation | None:
        """Remove one conversation and everything built from it, on a person's explicit request, and
        record that it was forgotten (what, when, how many messages; never the text). Ingesting an
        export that still holds it adds it back. None when the store has no such conversation."""
        return self.store.forget_conversation(conversation, now or datetime.now(UTC))

    def remove(self, document_id: str) -> bool:
        """Remove a document and its chunks; False when the store has no such document."""
        return self.store.remove_document(document_id)

    def review(self) -> list[ReviewItem]:
        """What a person may want to look at: flagged messages (nothing deleted), then conversations
        forgotten on request."""
        forgotten = [ReviewItem.forgotten(record) for record in self.store.forgotten_conversations()]
        return self.store.review_items() + forgotten

    def check(self) -> list[str]:
        """Problems found in the stored data; empty when the store is consistent."""
        problems = self.store.integrity_problems()
        stored_model = self.store.stats().get("embedder")
        if stored_model and stored_model != self.embedder.name:
            problems.append(f"vectors were made by {stored_model!r}, the configured model is {self.embedder.name!r}")
        return problems


@dataclass(frozen=True, slots=True)
class Overview:
    """What a start page shows (see `KnowledgeBase.overview`)."""

    stats: dict[str, object]
    conversations: list[ConversationSummary]
    documents: list[DocumentSummary]
    example_questions: list[str]

    def to_dict(self) -> dict[str, object]:
        return {
            "stats": self.stats,
            "conversations": [item.to_dict() for item in self.conversations],
            "documents": [item.to_dict() for item in self.documents],
            "example_questions": self.example_questions,
        }


def search_to_dict(query: str, hits: list[Hit]) -> dict[str, object]:
    """The one JSON shape of a search's result: the query as searched and its hits, best first."""
    return {"query": query, "hits": [hit.to_dict() for hit in hits]}


def read_chats(path: str | Path, format: str | None = None, limits: Limits | None = None) -> ReadResult:
    """The chat exports under `path` as read; documents and other files are listed in `not_read`."""
    from threadkeep.documents import is_document
    from threadkeep.readers import read_path

    return read_path(path, format, limits, is_document=is_document)


def threads_of(
    path: str | Path, format: str | None = None, settings: ThreadSettings | None = None, limits: Limits | None = None
) -> tuple[ReadResult, list[Thread]]:
    """An export as read, and the threads of each of its conversations, without any store."""
    from threadkeep.threads import build_threads

    result = read_chats(path, format, limits)
    kinds = {conversation.ref: conversation.kind for conversation in result.conversations}
    by_conversation: dict[str, list] = {}
    for message in result.messages:
        by_conversation.setdefault(message.conversation, []).append(message)
    threads: list[Thread] = []
    for ref, messages in by_conversation.items():
        threads.extend(build_threads(kinds.get(ref, "group"), messages, settings))
    return result, threads
