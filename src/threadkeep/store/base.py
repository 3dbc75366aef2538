"""The words every store and its callers share: errors, filters, records and listings, term planning."""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass
from datetime import datetime
from typing import Any

import numpy as np

from threadkeep.model import Conversation


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


# --- listings: what a store lists, each with its one JSON shape -----------------------------------
# Times are the ISO text as stored, with the UTC offset each was given.


class _Listed:
    __slots__ = ()

    def to_dict(self) -> dict[str, Any]:
        return {name: getattr(self, name) for name in self.__slots__}


@dataclass(frozen=True, slots=True)
class ConversationSummary(_Listed):
    ref: str
    title: str
    kind: str
    source_format: str
    messages: int
    first_message_at: str | None  # the earliest and latest messages in real time, not by their text
    last_message_at: str | None
    metadata: dict[str, Any]


@dataclass(frozen=True, slots=True)
class DocumentSummary(_Listed):
    id: str
    title: str
    path: str
    updated_at: str


@dataclass(frozen=True, slots=True)
class ReviewFlag(_Listed):
    """A message flagged for a person's look, with the message itself when the store still holds it."""

    conversation: str
    message_id: str
    reason: str
    flagged_at: str
    sender_name: str | None
    sender: str | None
    sent_at: str | None
    text: str | None


@dataclass(frozen=True, slots=True)
class ForgottenConversation(_Listed):
    """What `forget_conversation` records about a conversation it removed (never its messages)."""

    conversation: str
    title: str
    source_format: str
    messages: int
    forgotten_at: str


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
