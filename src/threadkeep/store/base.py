"""The words every store and its callers share: filters, records, term planning (errors and listings
are the package's own, from `errors` and `model`)."""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass
from datetime import datetime

import numpy as np

from threadkeep.errors import ConcurrentWriteError
from threadkeep.errors import StoreError as StoreError  # re-exported: the backends raise it
from threadkeep.errors import StoreNotFound as StoreNotFound
from threadkeep.model import Conversation
from threadkeep.model import ConversationSummary as ConversationSummary  # what a store lists
from threadkeep.model import DocumentSummary as DocumentSummary
from threadkeep.model import ForgottenConversation as ForgottenConversation
from threadkeep.model import ReviewItem as ReviewItem


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
# (PostgreSQL ranks them; SQLite cannot rank without reading every posting). PostgreSQL finds them
# by reading chunks until this many match, or every match: at 300k chunks 2,000 cost 5.7 ms of
# server CPU for the two commonest words and up to 84 ms for a term in a few percent of chunks,
# 500 cost 1.5 ms and up to 32 ms (benchmarks/store_scale.py's queries).
NEWEST_MATCHES = 500


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
