"""The Python entry point the CLI, HTTP and MCP layers all call.

from threadkeep.api import KnowledgeBase
with KnowledgeBase.open("team.db") as kb:
    kb.ingest("exports/support-group/")
    for hit in kb.search("点图标没反应"):
        print(hit.chunk.text)
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from pathlib import Path

from threadkeep.answer import Answer, build_answer
from threadkeep.answerability import Assessment, assess
from threadkeep.delta import DeltaReport, apply_delta
from threadkeep.documents import is_document
from threadkeep.embed import Embedder, get_embedder
from threadkeep.generate import Endpoint, generate
from threadkeep.ingest import IngestReport, ProgressCallback, ingest_path
from threadkeep.model import Hit, Message, ReadResult, Thread
from threadkeep.readers import Limits, read_path
from threadkeep.search import SearchSettings, retrieve
from threadkeep.store import SearchFilters, Store, open_store
from threadkeep.threads import ThreadSettings, build_threads


@dataclass(frozen=True, slots=True)
class ThreadView:
    conversation: str
    messages: list[Message]
    cited: frozenset[str]

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
                }
                for m in self.messages
            ],
        }


class KnowledgeBase:
    def __init__(self, store: Store, embedder: Embedder | None = None) -> None:
        self.store = store
        self._embedder = embedder

    @classmethod
    def open(cls, location: str | Path | None = None, embedder: Embedder | str | None = None) -> KnowledgeBase:
        if isinstance(embedder, str):
            embedder = get_embedder(embedder)
        return cls(open_store(location), embedder)

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
    ) -> IngestReport:
        """Ingest every chat export and document under `path` (file, folder or zip); see `IngestReport`."""
        return ingest_path(self.store, path, self.embedder, format, settings, progress, limits)

    def search(
        self,
        query: str,
        k: int = 10,
        filters: SearchFilters | None = None,
        now: datetime | None = None,
        settings: SearchSettings | None = None,
        per_source: int | None = None,
    ) -> list[Hit]:
        """The best `k` hits; with `per_source`, up to that many documents and chat threads each, interleaved."""
        return retrieve(self.store, self.embedder, query, k, filters, now, settings, per_source).hits

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
        figures = self.store.stats()
        if not figures.get("chunks"):
            reason = f"the store is empty ({figures.get('location')}); ingest an export or documents first"
            answer = build_answer(question, [], {}, Assessment(False, reason))
            return answer
        # Each source is retrieved and scaled on its own, so documents cannot crowd chat out (or the reverse).
        retrieval = retrieve(self.store, self.embedder, question, k, filters, now, per_source=k)
        titles = {item["ref"]: str(item["title"]) for item in self.store.list_conversations()}
        assessment = assess(question, retrieval, self.store, filters)
        answer = build_answer(question, retrieval.hits, titles, assessment, show_nearest)
        if endpoint is not None and answer.status == "answered":
            answer.generated_text = generate(answer, endpoint)
        return answer

    def thread(
        self, chunk_id: str | None = None, conversation: str | None = None, message_id: str | None = None
    ) -> ThreadView | None:
        """The full transcript behind a chat chunk, or the thread holding a message, with cited ids marked."""
        cited: tuple[str, ...] = ()
        if chunk_id is not None:
            chunk = self.store.get_chunks([chunk_id]).get(chunk_id)
            if chunk is None or chunk.source_type != "chat" or not chunk.evidence_ids:
                return None
            conversation, message_id, cited = chunk.source_ref, chunk.evidence_ids[0], chunk.evidence_ids
        if conversation is None or message_id is None:
            raise ValueError("give a chunk id, or a conversation and a message id")
        messages = self.store.load_thread(conversation, message_id)
        if not messages:
            return None
        return ThreadView(conversation, messages, frozenset(cited or (message_id,)))

    def apply_delta(self, path: str | Path, settings: ThreadSettings | None = None) -> DeltaReport:
        return apply_delta(self.store, path, self.embedder, settings)

    def stats(self) -> dict[str, object]:
        return self.store.stats()

    def check(self) -> list[str]:
        """Problems found in the stored data; empty when the store is consistent."""
        problems = self.store.integrity_problems()
        stored_model = self.store.stats().get("embedder")
        if stored_model and stored_model != self.embedder.name:
            problems.append(f"vectors were made by {stored_model!r}, the configured model is {self.embedder.name!r}")
        return problems


def read_chats(path: str | Path, format: str | None = None, limits: Limits | None = None) -> ReadResult:
    """The chat exports under `path` as read; documents and other files are listed in `not_read`."""
    return read_path(path, format, limits, is_document=is_document)


def threads_of(
    path: str | Path, format: str | None = None, settings: ThreadSettings | None = None, limits: Limits | None = None
) -> tuple[ReadResult, list[Thread]]:
    """An export as read, and the threads of each of its conversations, without any store."""
    result = read_chats(path, format, limits)
    kinds = {conversation.ref: conversation.kind for conversation in result.conversations}
    by_conversation: dict[str, list] = {}
    for message in result.messages:
        by_conversation.setdefault(message.conversation, []).append(message)
    threads: list[Thread] = []
    for ref, messages in by_conversation.items():
        threads.extend(build_threads(kinds.get(ref, "group"), messages, settings))
    return result, threads
