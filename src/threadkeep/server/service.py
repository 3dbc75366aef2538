"""What the MCP server and the HTTP API share: input limits, the folders ingest may read, one locked knowledge base.

Every call goes to `threadkeep.api.KnowledgeBase` unchanged; this module only
checks the input, holds a lock (one store connection and one embedder serve
every thread), and turns results into JSON-ready dicts. Whether there is an
answer, what is cited and how it is labelled is computed by the API, never here.
"""

from __future__ import annotations

import os
import threading
from collections.abc import Iterable
from pathlib import Path

from threadkeep.api import KnowledgeBase
from threadkeep.cli import hit_to_dict
from threadkeep.embed import Embedder
from threadkeep.generate import Endpoint, GenerationError
from threadkeep.readers import ArchiveError, UnknownFormatError, format_names
from threadkeep.store import SearchFilters, StoreError

MAX_QUERY_CHARS = 2_000
MAX_K = 50
DEFAULT_SEARCH_K = 5
DEFAULT_ASK_K = 10
MAX_REF_CHARS = 500  # conversation refs, chunk ids, message ids
MAX_PATH_CHARS = 4_096
MAX_FOLDER_ENTRIES = 200_000  # entries walked to check a folder for links that leave the allowed folders
SOURCE_TYPES = ("chat", "document")


class ServiceError(Exception):
    """A request the service will not or cannot carry out; `status` is the HTTP status that fits."""

    status = 400

    def __init__(self, message: str, status: int | None = None) -> None:
        super().__init__(message)
        self.message = message
        if status is not None:
            self.status = status


class NotFound(ServiceError):
    status = 404


class Refused(ServiceError):
    status = 403


class IngestRoots:
    """The folders a server may ingest from, resolved once (symlinks and `..` included)."""

    def __init__(self, roots: Iterable[str | Path] = ()) -> None:
        resolved: list[Path] = []
        for root in roots:
            if not str(root).strip():
                continue
            path = Path(root).expanduser()
            if not path.is_dir():
                raise ValueError(f"ingest folder {str(root)!r} is not an existing folder")
            resolved.append(path.resolve())
        self.roots: tuple[Path, ...] = tuple(dict.fromkeys(resolved))

    @classmethod
    def from_env(cls, name: str) -> IngestRoots:
        """Folders from an environment variable holding a path-separated list (`:` on POSIX)."""
        return cls(os.environ.get(name, "").split(os.pathsep))

    def __bool__(self) -> bool:
        return bool(self.roots)

    def describe(self) -> str:
        if not self.roots:
            return "ingest is disabled: no folders are configured"
        return "allowed folders: " + ", ".join(str(root) for root in self.roots)

    def contains(self, path: Path) -> bool:
        return any(path == root or path.is_relative_to(root) for root in self.roots)

    def check(self, requested: str) -> Path:
        """The resolved path when it lies inside an allowed folder, else `Refused` (or `NotFound`)."""
        if not self.roots:
            raise Refused("ingest is disabled: the server has no allowed folders (start it with --ingest-root PATH)")
        if not requested or not requested.strip():
            raise ServiceError("give a path to ingest")
        if len(requested) > MAX_PATH_CHARS or "\x00" in requested:
            raise ServiceError("the path is not a valid path")
        candidate = Path(requested)
        if not candidate.is_absolute():
            candidate = self.roots[0] / candidate
        # Refuse before looking at existence, so nothing is revealed about files outside the folders.
        resolved = candidate.resolve()
        if not self.contains(resolved):
            raise Refused(f"{requested!r} is outside the folders this server may ingest from ({self.describe()})")
        if not resolved.exists():
            raise NotFound(f"{requested!r} does not exist")
        if resolved.is_dir():
            self._check_links(resolved, requested)
        return resolved

    def _check_links(self, folder: Path, requested: str) -> None:
        """Refuse a folder holding a symlink that points outside the allowed folders."""
        seen = 0
        for parent, dirs, files in os.walk(folder, followlinks=False):
            for name in (*dirs, *files):
                seen += 1
                if seen > MAX_FOLDER_ENTRIES:
                    raise ServiceError(f"{requested!r} holds more than {MAX_FOLDER_ENTRIES} entries")
                entry = Path(parent) / name
                if entry.is_symlink() and not self.contains(entry.resolve()):
                    relative = entry.relative_to(folder)
                    raise Refused(f"{requested!r} holds a link ({relative}) that points outside the allowed folders")


def check_text(value: str, name: str, limit: int = MAX_QUERY_CHARS) -> str:
    if not isinstance(value, str) or not value.strip():
        raise ServiceError(f"{name} is empty")
    if len(value) > limit:
        raise ServiceError(f"{name} is too long: {len(value)} characters, at most {limit}")
    return value.strip()


def check_ref(value: str | None, name: str) -> str | None:
    if value is None or value == "":
        return None
    if len(value) > MAX_REF_CHARS:
        raise ServiceError(f"{name} is too long: at most {MAX_REF_CHARS} characters")
    return value


def check_k(k: int) -> int:
    if isinstance(k, bool) or not isinstance(k, int) or not 1 <= k <= MAX_K:
        raise ServiceError(f"k must be a whole number from 1 to {MAX_K}")
    return k


class Service:
    """One knowledge base behind a lock, called the same way from MCP tools and HTTP endpoints."""

    def __init__(self, kb: KnowledgeBase, ingest_roots: IngestRoots | None = None, endpoint: Endpoint | None = None):
        self.kb = kb
        self.ingest_roots = ingest_roots or IngestRoots()
        self.endpoint = endpoint
        self._lock = threading.Lock()

    @classmethod
    def open(
        cls,
        db: str | None = None,
        ingest_roots: IngestRoots | None = None,
        embedder: Embedder | str | None = None,
        endpoint: Endpoint | None = None,
    ) -> Service:
        return cls(KnowledgeBase.open(db, embedder), ingest_roots, endpoint)

    def close(self) -> None:
        with self._lock:
            self.kb.close()

    def search(
        self, query: str, k: int = DEFAULT_SEARCH_K, conversation: str | None = None, source_type: str | None = None
    ) -> dict:
        query = check_text(query, "query")
        k = check_k(k)
        conversation = check_ref(conversation, "conversation")
        if source_type is not None and source_type not in SOURCE_TYPES:
            raise ServiceError(f"source_type must be one of {', '.join(SOURCE_TYPES)}")
        filters = SearchFilters(conversation=conversation, source_type=source_type)
        with self._lock, _store_errors():
            hits = self.kb.search(query, k=k, filters=filters)
        return {"query": query, "hits": [hit_to_dict(hit) for hit in hits]}

    def ask(self, question: str, k: int = DEFAULT_ASK_K, conversation: str | None = None) -> dict:
        question = check_text(question, "question")
        k = check_k(k)
        filters = SearchFilters(conversation=check_ref(conversation, "conversation"))
        with self._lock, _store_errors():
            try:
                return self.kb.ask(question, k=k, filters=filters, endpoint=self.endpoint).to_dict()
            except GenerationError as error:
                # The model only words the answer: without it the computed answer is still complete.
                answer = self.kb.ask(question, k=k, filters=filters).to_dict()
                answer["generation_error"] = str(error)
                return answer

    def thread(
        self, chunk_id: str | None = None, conversation: str | None = None, message_id: str | None = None
    ) -> dict:
        chunk_id = check_ref(chunk_id, "chunk_id")
        conversation = check_ref(conversation, "conversation")
        message_id = check_ref(message_id, "message_id")
        if chunk_id is None and (conversation is None or message_id is None):
            raise ServiceError("give a chunk_id, or a conversation and a message_id")
        with self._lock, _store_errors():
            view = self.kb.thread(chunk_id=chunk_id, conversation=conversation, message_id=message_id)
        if view is None:
            if chunk_id is not None:
                raise NotFound(f"no chat chunk {chunk_id!r} (document chunks have no thread)")
            raise NotFound(f"no message {message_id!r} in conversation {conversation!r}")
        return view.to_dict()

    def conversations(self) -> dict:
        with self._lock, _store_errors():
            return {"conversations": self.kb.store.list_conversations()}

    def documents(self) -> dict:
        with self._lock, _store_errors():
            return {"documents": self.kb.store.list_documents()}

    def stats(self) -> dict:
        with self._lock, _store_errors():
            return dict(self.kb.stats())

    def ingest(self, path: str, format: str | None = None) -> dict:
        if format is not None and format not in (*format_names(), "document"):
            raise ServiceError(f"unknown format {format!r} (known: {', '.join([*format_names(), 'document'])})")
        resolved = self.ingest_roots.check(path)
        with self._lock, _store_errors():
            try:
                report = self.kb.ingest(resolved, format=format)
            except (UnknownFormatError, ArchiveError) as error:
                raise ServiceError(str(error)) from error
        return {"path": str(resolved), **report.to_dict()}


class _store_errors:
    """Store failures become a `ServiceError` carrying the store's own message."""

    def __enter__(self) -> None:
        return None

    def __exit__(self, kind: type[BaseException] | None, error: BaseException | None, tb: object) -> None:
        if isinstance(error, StoreError):
            raise ServiceError(f"store error: {error}", 500) from error
        if isinstance(error, FileNotFoundError):
            raise NotFound(str(error)) from error
