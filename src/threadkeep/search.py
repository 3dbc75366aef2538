"""Hybrid search: dense vectors and full text, fused on normalised scores, chat decayed by age.

Only chunks with a non-empty embedding input are indexed either way, so noise
never ranks. Each retriever's scores are scaled to 0..1 over its own candidates
(the best candidate 1, the weakest 0) and averaged, so a chunk's relevance says
how close it is, not just where it ranks. Time decay applies to chat chunks only
(documents do not age the way a chat answer does) and acts on that relevance: it
can take away at most `1 - decay_floor` of it, so it reorders near-equals and
never lifts a weak new thread over a much closer old one.

With `per_source`, documents and chat are retrieved and scaled separately and
their hits interleaved, so one source's score scale cannot bury the other.
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from datetime import UTC, datetime

import numpy as np

from threadkeep.embed import Embedder
from threadkeep.model import Hit
from threadkeep.store import SearchFilters, Store

SOURCE_TYPES = ("chat", "document")


@dataclass(frozen=True, slots=True)
class SearchSettings:
    candidates: int = 50  # taken from each retriever before fusion
    dense_weight: float = 0.5  # share of the dense relevance; full text has the rest
    # A chat fix goes stale in weeks (versions move on): most of the decay's effect comes within two
    # months, so of two equally close fixes 2.5 months apart the newer leads (benchmarks/decay_order.py).
    half_life_days: float = 30.0
    # The most the decay can take from a chat chunk's relevance: 0.8 means an old thread keeps at
    # least 80 % of it, so only threads within 20 % of each other can swap places by age.
    decay_floor: float = 0.8


@dataclass(slots=True)
class Retrieval:
    """Hits and what the retrievers saw, for the answerability decision."""

    hits: list[Hit]
    dense: list[tuple[str, float]] = field(default_factory=list)  # (chunk id, cosine), best first
    lexical: list[tuple[str, float]] = field(default_factory=list)  # (chunk id, full-text score), best first
    # (chunks with a vector, chunks with text to embed) while some have no vector yet, else None: the
    # dense side sees only the first, so until they are made those chunks are found by their words only.
    vectors: tuple[int, int] | None = None


def pending_coverage(store: Store) -> tuple[int, int] | None:
    """(chunks with a vector, chunks with text to embed) while some vectors are still to be made, else None."""
    return store.vector_coverage() if store.pending_vectors() else None


def decay(age_days: float, half_life_days: float) -> float:
    return 0.5 ** (max(age_days, 0.0) / half_life_days)


def age_factor(age_days: float, settings: SearchSettings) -> float:
    """What a chat chunk keeps of its relevance at this age: 1 when new, `decay_floor` when very old."""
    return settings.decay_floor + (1.0 - settings.decay_floor) * decay(age_days, settings.half_life_days)


def scaled(ranking: list[tuple[str, float]]) -> dict[str, float]:
    """Scores mapped to 0..1 over the candidate list: the best 1, the weakest 0 (all 1 when they are equal)."""
    if not ranking:
        return {}
    scores = np.array([score for _, score in ranking], dtype=np.float64)
    low, high = float(scores.min()), float(scores.max())
    if high - low <= 1e-12:
        return {chunk_id: 1.0 for chunk_id, _ in ranking}
    return {chunk_id: (score - low) / (high - low) for chunk_id, score in ranking}


def _fuse(
    store: Store,
    dense: list[tuple[str, float]],
    lexical: list[tuple[str, float]],
    now: datetime,
    settings: SearchSettings,
) -> list[Hit]:
    dense_relevance, lexical_relevance = scaled(dense), scaled(lexical)
    dense_rank = {chunk_id: rank for rank, (chunk_id, _) in enumerate(dense)}
    lexical_rank = {chunk_id: rank for rank, (chunk_id, _) in enumerate(lexical)}
    cosine = dict(dense)
    ids = list(dict.fromkeys([chunk_id for chunk_id, _ in dense] + [chunk_id for chunk_id, _ in lexical]))
    chunks = store.get_chunks(ids)
    hits = []
    for chunk_id in ids:
        chunk = chunks.get(chunk_id)
        if chunk is None:
            continue
        relevance = settings.dense_weight * dense_relevance.get(chunk_id, 0.0) + (
            1.0 - settings.dense_weight
        ) * lexical_relevance.get(chunk_id, 0.0)
        if chunk.source_type == "chat":
            relevance *= age_factor((now - chunk.occurred_at).total_seconds() / 86400, settings)
        hits.append(Hit(chunk, relevance, cosine.get(chunk_id), lexical_rank.get(chunk_id), dense_rank.get(chunk_id)))
    hits.sort(key=lambda hit: (-hit.score, hit.chunk.id))
    return hits


def interleave(rankings: list[list[Hit]], per_source: int) -> list[Hit]:
    """Up to `per_source` hits of each ranking, alternating, the ranking with the best first hit leading."""
    rankings = sorted((ranking[:per_source] for ranking in rankings if ranking), key=lambda r: -r[0].score)
    merged: list[Hit] = []
    for position in range(per_source):
        merged.extend(ranking[position] for ranking in rankings if position < len(ranking))
    return merged


def retrieve(
    store: Store,
    embedder: Embedder,
    query: str,
    k: int = 10,
    filters: SearchFilters | None = None,
    now: datetime | None = None,
    settings: SearchSettings | None = None,
    per_source: int | None = None,
) -> Retrieval:
    """The best `k` hits (or `per_source` of each source, interleaved) and both retrievers' candidates."""
    settings = settings or SearchSettings()
    filters = filters or SearchFilters()
    now = now or datetime.now(UTC)
    vector = embedder.embed_query(query)
    vectors = pending_coverage(store)
    if per_source is None or filters.source_type is not None:
        dense = store.dense_candidates(vector, settings.candidates, filters)
        lexical = store.lexical_candidates(query, settings.candidates, filters)
        hits = _fuse(store, dense, lexical, now, settings)[: per_source or k]
        return Retrieval(hits, dense, lexical, vectors)
    rankings, dense, lexical = [], [], []
    for source_type in SOURCE_TYPES:
        scoped = replace(filters, source_type=source_type)
        source_dense = store.dense_candidates(vector, settings.candidates, scoped)
        source_lexical = store.lexical_candidates(query, settings.candidates, scoped)
        rankings.append(_fuse(store, source_dense, source_lexical, now, settings))
        dense += source_dense
        lexical += source_lexical
    dense.sort(key=lambda item: -item[1])
    lexical.sort(key=lambda item: -item[1])
    return Retrieval(interleave(rankings, per_source), dense, lexical, vectors)


def search(
    store: Store,
    embedder: Embedder,
    query: str,
    k: int = 10,
    filters: SearchFilters | None = None,
    now: datetime | None = None,
    settings: SearchSettings | None = None,
    per_source: int | None = None,
) -> list[Hit]:
    return retrieve(store, embedder, query, k, filters, now, settings, per_source).hits
