"""What the MCP server and the HTTP API share: input limits, the folders ingest may read, one locked knowledge base.

Every call goes to `threadkeep.api.KnowledgeBase` unchanged; this module only
checks the input, holds a lock (one store connection and one embedder serve
every thread), and turns results into JSON-ready dicts. Whether there is an
answer, what is cited and how it is labelled is computed by the API, never here.

Ingests run in a worker process with its own store connection, never under the
lock: a slow or stuck ingest (a huge export, a pathological line) cannot hold up
searches, and the store's own write rules keep concurrent writers safe.

Nothing a client receives names a place on the server: files are shown relative
to the ingest folder that holds them, the store by its file or database name.
"""

from __future__ import annotations

import contextlib
import dataclasses
import multiprocessing
import os
import re
import threading
from collections.abc import Iterable, Iterator
from multiprocessing.connection import Connection
from pathlib import Path
from typing import Any

from threadkeep.api import KnowledgeBase, SearchFilters, search_to_dict
from threadkeep.embed import Embedder
from threadkeep.errors import (
    ConfigurationError,
    GenerationError,
    InputError,
    NotFoundError,
    RefusedError,
    StoreError,
    ThreadkeepError,
)
from threadkeep.generate import Endpoint
from threadkeep.ingest import IngestReport
from threadkeep.model import DocumentSummary
from threadkeep.readers import format_names

MAX_QUERY_CHARS = 2_000
MAX_K = 50
DEFAULT_SEARCH_K = 5
DEFAULT_ASK_K = 10
MAX_REF_CHARS = 500  # conversation refs, chunk ids, message ids
MAX_PATH_CHARS = 4_096
MAX_FOLDER_ENTRIES = 200_000  # entries walked to check a folder for links that leave the allowed folders
SOURCE_TYPES = ("chat", "document")
MAX_CONTEXT = 20  # messages shown before and after a thread


# The HTTP status of each kind of error (the first that applies); any other is the server's fault.
HTTP_STATUS: tuple[tuple[type[ThreadkeepError], int], ...] = (
    (NotFoundError, 404),
    (RefusedError, 403),
    (InputError, 400),
    (GenerationError, 502),
)


def http_status(error: ThreadkeepError) -> int:
    return next((status for kind, status in HTTP_STATUS if isinstance(error, kind)), 500)


class IngestRoots:
    """The folders a server may ingest from, resolved once (symlinks and `..` included)."""

    def __init__(self, roots: Iterable[str | Path] = ()) -> None:
        resolved: list[Path] = []
        for root in roots:
            if not str(root).strip():
                continue
            path = Path(root).expanduser()
            if not path.is_dir():
                raise ConfigurationError(f"ingest folder {str(root)!r} is not an existing folder")
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
        names = ", ".join(repr(root.name or "/") for root in self.roots)
        return f"allowed folders: {names} (a relative path is read from {self.roots[0].name or '/'!r})"

    def contains(self, path: Path) -> bool:
        return any(path == root or path.is_relative_to(root) for root in self.roots)

    def public(self, path: str | Path) -> str:
        """A path as a client may see it: relative to the allowed folder holding it, else its name only."""
        path = Path(path)
        for root in sorted(self.roots, key=lambda root: len(root.parts), reverse=True):
            if path == root:
                return "."
            if path.is_relative_to(root):
                return str(path.relative_to(root))
        return path.name

    def public_text(self, text: str) -> str:
        """A message with every allowed folder's own path taken out (the deepest first)."""
        for root in sorted(self.roots, key=lambda root: len(str(root)), reverse=True):
            if root != Path(root.anchor):  # "/" as a folder: every path is already relative to it
                text = text.replace(str(root) + os.sep, "")
                text = re.sub(re.escape(str(root)) + r"(?![^\s'\"(),;:])", ".", text)
        return text

    def check(self, requested: str) -> Path:
        """The resolved path when it lies inside an allowed folder, else `RefusedError` (or `NotFoundError`)."""
        if not self.roots:
            raise RefusedError(
                "ingest is disabled: the server has no allowed folders (start it with --ingest-root PATH)"
            )
        if not requested or not requested.strip():
            raise InputError("give a path to ingest")
        if len(requested) > MAX_PATH_CHARS or "\x00" in requested:
            raise InputError("the path is not a valid path")
        candidate = Path(requested)
        if not candidate.is_absolute():
            candidate = self.roots[0] / candidate
        # Refuse before looking at existence, so nothing is revealed about files outside the folders.
        resolved = candidate.resolve()
        if not self.contains(resolved):
            raise RefusedError(f"{requested!r} is outside the folders this server may ingest from ({self.describe()})")
        if not resolved.exists():
            raise NotFoundError(f"{requested!r} does not exist")
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
                    raise InputError(f"{requested!r} holds more than {MAX_FOLDER_ENTRIES} entries")
                entry = Path(parent) / name
                if entry.is_symlink() and not self.contains(entry.resolve()):
                    relative = entry.relative_to(folder)
                    raise RefusedError(
                        f"{requested!r} holds a link ({relative}) that points outside the allowed folders"
                    )


def check_text(value: str, name: str, limit: int = MAX_QUERY_CHARS) -> str:
    if not isinstance(value, str) or not value.strip():
        raise InputError(f"{name} is empty")
    if len(value) > limit:
        raise InputError(f"{name} is too long: {len(value)} characters, at most {limit}")
    return value.strip()


def check_ref(value: str | None, name: str) -> str | None:
    if value is None or value == "":
        return None
    if len(value) > MAX_REF_CHARS:
        raise InputError(f"{name} is too long: at most {MAX_REF_CHARS} characters")
    return value


def check_k(k: int, name: str = "k") -> int:
    if isinstance(k, bool) or not isinstance(k, int) or not 1 <= k <= MAX_K:
        raise InputError(f"{name} must be a whole number from 1 to {MAX_K}")
    return k


class Service:
    """One knowledge base behind a lock, called the same way from MCP tools and HTTP endpoints."""

    def __init__(self, kb: KnowledgeBase, ingest_roots: IngestRoots | None = None, endpoint: Endpoint | None = None):
        self.kb = kb
        self.ingest_roots = ingest_roots or IngestRoots()
        self.endpoint = endpoint
        self._lock = threading.Lock()
        self._worker = IngestWorker(kb)

    @classmethod
    def open(
        cls,
        db: str | None = None,
        ingest_roots: IngestRoots | None = None,
        embedder: Embedder | str | None = None,
        endpoint: Endpoint | None = None,
        create: bool = True,
    ) -> Service:
        """`create` False: a missing store is `StoreNotFound` rather than a new, empty one."""
        return cls(KnowledgeBase.open(db, embedder, create=create), ingest_roots, endpoint)

    def close(self) -> None:
        self._worker.close()
        with self._lock:
            self.kb.close()

    def public_text(self, text: str) -> str:
        """A message as a client may see it: no ingest folder's path, the store by its name only."""
        text = self.ingest_roots.public_text(text.replace(self.kb.location, self.kb.name))
        return POSTGRES_URL.sub(self.kb.name, text)

    def describe(self, error: ThreadkeepError) -> str:
        """An error's message as a client may see it (see `public_text`)."""
        message = f"store error: {error}" if isinstance(error, StoreError) else str(error)
        return self.public_text(message)

    def search(
        self,
        query: str,
        k: int = DEFAULT_SEARCH_K,
        conversation: str | None = None,
        source_type: str | None = None,
        per_source: int | None = None,
    ) -> dict:
        """The best `k` hits; with `per_source`, up to that many document sections and chat threads, interleaved."""
        query = check_text(query, "query")
        k = check_k(k)
        if per_source is not None:
            per_source = check_k(per_source, "per_source")
        conversation = check_ref(conversation, "conversation")
        if source_type is not None and source_type not in SOURCE_TYPES:
            raise InputError(f"source_type must be one of {', '.join(SOURCE_TYPES)}")
        filters = SearchFilters(conversation=conversation, source_type=source_type)
        with self._lock, _missing_files():
            hits = self.kb.search(query, k=k, filters=filters, per_source=per_source)
        return search_to_dict(query, hits)

    def ask(self, question: str, k: int = DEFAULT_ASK_K, conversation: str | None = None) -> dict:
        question = check_text(question, "question")
        k = check_k(k)
        filters = SearchFilters(conversation=check_ref(conversation, "conversation"))
        with self._lock, _missing_files():
            try:
                return self.kb.ask(question, k=k, filters=filters, endpoint=self.endpoint).to_dict()
            except GenerationError as error:
                # The model only words the answer: without it the computed answer is still complete.
                answer = self.kb.ask(question, k=k, filters=filters).to_dict()
                answer["generation_error"] = str(error)
                return answer

    def thread(
        self,
        chunk_id: str | None = None,
        conversation: str | None = None,
        message_id: str | None = None,
        context: int = 0,
    ) -> dict:
        if isinstance(context, bool) or not isinstance(context, int) or not 0 <= context <= MAX_CONTEXT:
            raise InputError(f"context must be a whole number from 0 to {MAX_CONTEXT}")
        chunk_id = check_ref(chunk_id, "chunk_id")
        conversation = check_ref(conversation, "conversation")
        message_id = check_ref(message_id, "message_id")
        if chunk_id is None and (conversation is None or message_id is None):
            raise InputError("give a chunk_id, or a conversation and a message_id")
        with self._lock, _missing_files():
            view = self.kb.thread(chunk_id=chunk_id, conversation=conversation, message_id=message_id, context=context)
            known = chunk_id is not None and self.kb.chunk(chunk_id) is not None
        if view is None:
            if chunk_id is not None and not known:
                raise NotFoundError(f"unknown chunk_id {chunk_id!r}: use one from ask or search")
            if chunk_id is not None:
                raise NotFoundError(f"chunk {chunk_id!r} is a document section: only chat chunks have a thread")
            raise NotFoundError(f"no message {message_id!r} in conversation {conversation!r}")
        return view.to_dict()

    def conversations(self) -> dict:
        with self._lock, _missing_files():
            listed = self.kb.conversations()
        return {"conversations": [item.to_dict() for item in listed]}

    def documents(self) -> dict:
        with self._lock, _missing_files():
            listed = self.kb.documents()
        return {"documents": [self._public_document(item).to_dict() for item in listed]}

    def stats(self) -> dict:
        with self._lock, _missing_files():
            return self._public_stats(self.kb.stats())

    def overview(self) -> dict:
        with self._lock, _missing_files():
            overview = self.kb.overview()
        documents = [self._public_document(item) for item in overview.documents]
        return dataclasses.replace(overview, stats=self._public_stats(overview.stats), documents=documents).to_dict()

    def _public_stats(self, figures: dict[str, object]) -> dict[str, object]:
        return {**figures, "location": self.kb.name}

    def _public_document(self, item: DocumentSummary) -> DocumentSummary:
        return dataclasses.replace(item, path=self.ingest_roots.public(item.path))

    def ingest(self, path: str, format: str | None = None) -> dict:
        """Ingest in the worker process; searches go on meanwhile. The report names files relative to their folder."""
        if format is not None and format not in (*format_names(), "document"):
            raise InputError(f"unknown format {format!r} (known: {', '.join([*format_names(), 'document'])})")
        resolved = self.ingest_roots.check(path)
        with _missing_files():
            try:
                report = self._worker.ingest(resolved, format)
            except (ThreadkeepError, FileNotFoundError):
                raise
            except ValueError as error:
                raise InputError(str(error)) from error
            except OSError as error:
                raise ThreadkeepError(f"cannot read {path!r}: {error.strerror or error}") from error
        # The report names files relative to the path ingested (a file: by its name); a client sees
        # them relative to the ingest folder, like the path it sent.
        base = resolved if resolved.is_dir() else resolved.parent
        report.skipped, report.not_read = (
            [
                dataclasses.replace(
                    skip, file=self.ingest_roots.public(base / skip.file), reason=self.public_text(skip.reason)
                )
                for skip in skips
            ]
            for skips in (report.skipped, report.not_read)
        )
        return {"path": self.ingest_roots.public(resolved), **report.to_dict()}


# A PostgreSQL location as a store error may quote it (without its password): shown by database name instead.
POSTGRES_URL = re.compile(r"postgres(?:ql)?://[^\s'\"(),;]+")


@contextlib.contextmanager
def _missing_files() -> Iterator[None]:
    """A file that went missing while a request used it is `NotFoundError`."""
    try:
        yield
    except FileNotFoundError as error:
        raise NotFoundError(str(error)) from error


class IngestWorker:
    """Ingests in a separate process with its own store connection, one at a time.

    A thread would not do: a reader stuck in a regular expression holds the interpreter lock, and
    searches with it. The process starts on the first ingest and keeps its embedder loaded. If it
    dies (killed, out of memory), the ingest fails with a 500 and the next one starts a new process;
    what it had committed stays, and what it had not is rolled back by the store.
    """

    def __init__(self, kb: KnowledgeBase) -> None:
        self.kb = kb
        self._lock = threading.Lock()
        self._process: multiprocessing.process.BaseProcess | None = None
        self._connection: Connection | None = None

    def ingest(self, path: Path, format: str | None) -> IngestReport:
        with self._lock:
            connection = self._start()
            try:
                connection.send((str(path), format))
                done, value = connection.recv()
            except (EOFError, OSError) as error:  # the worker died mid-ingest
                self._stop()
                message = f"the ingest stopped unexpectedly ({type(error).__name__}); run it again"
                raise ThreadkeepError(message) from error
        if not done:
            raise value
        return value

    def _start(self) -> Connection:
        if self._process is not None and self._process.is_alive() and self._connection is not None:
            return self._connection
        self._stop()
        context = multiprocessing.get_context("spawn")
        ours, theirs = context.Pipe()
        self._process = context.Process(
            target=_ingest_worker,
            args=(theirs, self.kb.location, self.kb.embedder.name),
            name="threadkeep-ingest",
            daemon=True,
        )
        self._process.start()
        theirs.close()
        self._connection = ours
        return ours

    def _stop(self) -> None:
        if self._connection is not None:
            self._connection.close()
        if self._process is not None:
            self._process.join(timeout=5)
            if self._process.is_alive():
                self._process.kill()
                self._process.join()
        self._process = self._connection = None

    def close(self) -> None:
        """Stop the worker; one busy with an ingest is killed (the store keeps whole conversations only)."""
        if self._lock.acquire(blocking=False):
            try:
                self._stop()
            finally:
                self._lock.release()
        elif self._process is not None:
            self._process.kill()


def _ingest_worker(connection: Connection, location: str, embedder: str) -> None:
    """The worker process: ingest each (path, format) received, answer (True, report) or (False, error)."""
    kb: KnowledgeBase | None = None
    try:
        while True:
            try:
                path, format = connection.recv()
            except EOFError:  # the server closed its end
                return
            outcome: tuple[bool, Any]
            try:
                kb = kb or KnowledgeBase.open(location, embedder)
                outcome = (True, kb.ingest(path, format=format))
            except (ThreadkeepError, OSError, ValueError) as error:  # what ingest raises for bad input or a bad store
                outcome = (False, error)
            connection.send(outcome)
    finally:
        if kb is not None:
            kb.close()
