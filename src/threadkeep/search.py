"""Hybrid search: dense vectors and full text, fused on normalised scores, chat decayed by age.

Only chunks with a non-empty embedding input are indexed either way, so noise
never ranks. Each retriever's scores are scaled to 0..1 over its own candidates
(the best candidate 1, the weakest 0) and averaged, so a chunk's relevance says
how close it is, not just where it ranks. Time decay applies to chat chunks only
(documents do not age the way a chat answer does) and acts on that relevance: it
can take away at most `1 - decay_floor` of it, so it reorders near-equals and
never lifts a weak new thread over a much closer old one.

Three things reorder the fused hits. A conversation's (or document's) later hits yield to close hits
of other sources (`repeat_factor`), so an answer spread over several chats is not crowded out by
one chat's many exchanges. Of two chat hits both retrievers find equally close, the newer ranks
first (`newer_among_equals`): the fused relevance can set them far apart where the raw scores are
near, since each retriever's scores are scaled over its candidates. And when the query names a time
("two weeks ago", "on 3 June"; `threadkeep.when`), chat said outside it keeps only `off_time_factor`
of its relevance, while chat said within it is also ranked among itself, so its best match counts fully.

With `per_source`, documents and chat are retrieved and scaled separately and
their hits interleaved, so one source's score scale cannot bury the other.
"""

from __future__ import annotations

import heapq
from collections import Counter, deque
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field, replace
from datetime import UTC, datetime, timedelta

import numpy as np

from threadkeep.embed import Embedder, one_openmp_thread
from threadkeep.model import Chunk, Hit
from threadkeep.store import SearchFilters, Store
from threadkeep.when import Span, named_span

SOURCE_TYPES = ("chat", "document")
# Two chat hits are equally close when the dense side puts them within this many standard deviations of
# the query's candidate cosines (the store's own spread for this query, on any model's scale) ...
EQUAL_SPREAD = 0.75
# ... and full text gives the lower of the two at least this share of the higher's score (or finds neither).
EQUAL_TEXT = 0.6
# Of two such hits the newer ranks first when it is at least this much newer: a fix goes stale in weeks
# (`half_life_days`), not between two exchanges of one afternoon.
NEWER_BY = timedelta(days=1)


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
    # A hit counts this share of its relevance for each hit of its conversation (or document) ranked
    # above it, so a second source's close hit is not pushed out of the top by a fifth exchange of one
    # chat: questions whose answer is spread over several chats (benchmarks/README.md). 1 = off.
    repeat_factor: float = 0.7
    # When the query names a time ("two weeks ago", "on 3 June, 2023"; `threadkeep.when`), a chat hit
    # said outside it keeps this share of its relevance. 1 = the time named is not read.
    off_time_factor: float = 0.8


@dataclass(slots=True)
class Retrieval:
    """Hits and what the retrievers saw, for the answerability decision."""

    hits: list[Hit]
    dense: list[tuple[str, float]] = field(default_factory=list)  # (chunk id, cosine), best first
    lexical: list[tuple[str, float]] = field(default_factory=list)  # (chunk id, full-text score), best first
    # The dense candidates among the chat said in the time the query names ("last June"), best first; empty
    # when it names none. A passage standing out of these is as close as the question's time allows.
    window: list[tuple[str, float]] = field(default_factory=list)
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


def said_within(chunk: Chunk, span: Span) -> bool:
    return span.overlaps(chunk.started_at or chunk.occurred_at, chunk.occurred_at)


def relevance(
    chunk: Chunk, dense: float, lexical: float, now: datetime, settings: SearchSettings, span: Span | None
) -> float:
    """A chunk's fused relevance from its two scaled ones, chat decayed by age and by the time named."""
    fused = settings.dense_weight * dense + (1.0 - settings.dense_weight) * lexical
    if chunk.source_type == "chat":
        fused *= age_factor((now - chunk.occurred_at).total_seconds() / 86400, settings)
        if span is not None and not said_within(chunk, span):
            fused *= settings.off_time_factor
    return fused


def _fuse(
    store: Store,
    dense: list[tuple[str, float]],
    lexical: list[tuple[str, float]],
    now: datetime,
    settings: SearchSettings,
    span: Span | None = None,
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
        score = relevance(
            chunk, dense_relevance.get(chunk_id, 0.0), lexical_relevance.get(chunk_id, 0.0), now, settings, span
        )
        hits.append(Hit(chunk, score, cosine.get(chunk_id), lexical_rank.get(chunk_id), dense_rank.get(chunk_id)))
    hits.sort(key=lambda hit: (-hit.score, hit.chunk.id))
    return hits


def diversified(hits: list[Hit], repeat_factor: float) -> list[Hit]:
    """`hits` (best first) reordered so that a source's later hits yield to close hits of other sources.

    Picked greedily, each hit weighing `repeat_factor` to the power of its source's hits already picked;
    scores are left as they are. The hits of one source keep their order, and so does a ranking of one
    source only (one group chat): only the mix of sources changes.
    """
    if repeat_factor >= 1.0 or len(hits) < 2:
        return hits
    queues: dict[tuple[str, str], deque[Hit]] = {}
    for hit in hits:
        queues.setdefault((hit.chunk.source_type, hit.chunk.source_ref), deque()).append(hit)
    # Each source's next hit waits in a heap by its weighed score (ties: chunk id); only the source picked
    # from gets a new key, so a pick costs a log, not a look at every source (100 hits of 60 sources: 0.3
    # instead of 2.5 ms).
    waiting = [(-queue[0].score, queue[0].chunk.id, source) for source, queue in queues.items()]
    heapq.heapify(waiting)
    picked: Counter[tuple[str, str]] = Counter()
    ordered: list[Hit] = []
    while waiting:
        _, _, source = heapq.heappop(waiting)
        queue = queues[source]
        ordered.append(queue.popleft())
        picked[source] += 1
        if queue:
            heapq.heappush(waiting, (-queue[0].score * repeat_factor ** picked[source], queue[0].chunk.id, source))
    return ordered


def newer_among_equals(
    hits: list[Hit], dense: list[tuple[str, float]], lexical: list[tuple[str, float]], span: Span | None = None
) -> list[Hit]:
    """`hits` (best first) with each chat hit ranked right below an older, equally close chat hit moved above
    it (chat hits only, each one place at most; the two swap scores, so the order stays by score). Chat of
    the time the query names stays above chat of other times."""
    cosines = [cosine for _, cosine in dense]
    spread = float(np.std(cosines)) if len(cosines) > 1 else 0.0
    text = dict(lexical)

    def equally_close(upper: Hit, lower: Hit) -> bool:
        if (upper.dense_score is None) != (lower.dense_score is None):
            return False
        if upper.dense_score is not None and upper.dense_score - lower.dense_score > EQUAL_SPREAD * spread:
            return False
        high, low = text.get(upper.chunk.id), text.get(lower.chunk.id)
        if high is None or low is None:
            return high is low
        return min(high, low) >= EQUAL_TEXT * max(high, low)

    ordered = list(hits)
    chat = [position for position, hit in enumerate(ordered) if hit.chunk.source_type == "chat"]
    step = 0
    while step + 1 < len(chat):
        above, below = chat[step], chat[step + 1]
        upper, lower = ordered[above], ordered[below]
        if (
            lower.chunk.occurred_at - upper.chunk.occurred_at >= NEWER_BY
            and not (span is not None and said_within(upper.chunk, span) and not said_within(lower.chunk, span))
            and equally_close(upper, lower)
        ):
            ordered[above], ordered[below] = replace(lower, score=upper.score), replace(upper, score=lower.score)
            step += 2
        else:
            step += 1
    return ordered


def ranked(
    store: Store,
    vector: np.ndarray,
    query: str,
    filters: SearchFilters,
    now: datetime,
    settings: SearchSettings,
    span: Span | None,
    lexical: list[tuple[str, float]],
) -> tuple[list[Hit], list[tuple[str, float]], list[tuple[str, float]], list[tuple[str, float]]]:
    """Fused hits, diversified, both retrievers' candidates and the dense candidates of the time named;
    `lexical` is the full-text candidates under `filters`.

    When the query names a time, chat said then is also retrieved and scaled on its own, and each chunk
    keeps the better of its two scores: the best match of that time counts fully even when other
    times' chat is closer, or fills every candidate list.
    """
    dense = store.dense_candidates(vector, settings.candidates, filters)
    hits = _fuse(store, dense, lexical, now, settings, span)
    window: list[tuple[str, float]] = []
    if span is not None and filters.source_type in (None, "chat"):
        since = max(span.since, filters.since) if filters.since else span.since
        until = min(span.until, filters.until) if filters.until else span.until
        within = replace(filters, source_type="chat", since=since, until=until)
        if since <= until:
            best = {hit.chunk.id: hit for hit in hits}
            window = store.dense_candidates(vector, settings.candidates, within)
            for hit in _fuse(
                store,
                window,
                store.lexical_candidates(query, settings.candidates, within),
                now,
                settings,
            ):
                if hit.chunk.id not in best or best[hit.chunk.id].score < hit.score:
                    best[hit.chunk.id] = hit
            hits = sorted(best.values(), key=lambda hit: (-hit.score, hit.chunk.id))
    hits = newer_among_equals(hits, dense, lexical, span)
    return diversified(hits, settings.repeat_factor), dense, lexical, window


def interleave(rankings: list[list[Hit]], per_source: int, lead: dict[str, float] | None = None) -> list[Hit]:
    """Up to `per_source` hits of each ranking, alternating, the ranking with the best first hit leading.

    `lead` (chunk id to relevance) says which first hit is best when the rankings' own scores are not
    on one scale; a first hit it does not hold counts its own score.
    """
    lead = lead or {}
    rankings = sorted(
        (ranking[:per_source] for ranking in rankings if ranking),
        key=lambda r: -lead.get(r[0].chunk.id, r[0].score),
    )
    merged: list[Hit] = []
    for position in range(per_source):
        merged.extend(ranking[position] for ranking in rankings if position < len(ranking))
    return merged


# The query is embedded on a thread of its own while full text runs on the caller's: the model's C code
# and SQLite both let go of the GIL, so on two cores the two overlap instead of adding up, the model
# on one core (`one_openmp_thread`), full text on the other (benchmarks/README.md, "Stores at scale").
# One thread: queries from several callers are embedded one after another, each on its own core.
_QUERIES = ThreadPoolExecutor(max_workers=1, thread_name_prefix="threadkeep-query")


def _embed_query(embedder: Embedder, query: str) -> np.ndarray:
    one_openmp_thread()
    return embedder.embed_query(query)


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
    embedding = _QUERIES.submit(_embed_query, embedder, query)
    vectors = pending_coverage(store)
    span = named_span(query, now) if settings.off_time_factor < 1.0 else None
    scopes = (
        [filters]
        if per_source is None or filters.source_type is not None
        else [replace(filters, source_type=source_type) for source_type in SOURCE_TYPES]
    )
    found = [store.lexical_candidates(query, settings.candidates, scope) for scope in scopes]
    vector = embedding.result()
    if len(scopes) == 1:
        hits, dense, lexical, window = ranked(store, vector, query, filters, now, settings, span, found[0])
        return Retrieval(hits[: per_source or k], dense, lexical, window=window, vectors=vectors)
    rankings, dense, lexical, window = [], [], [], []
    for scoped, scoped_lexical in zip(scopes, found, strict=True):
        source_hits, source_dense, source_lexical, source_window = ranked(
            store, vector, query, scoped, now, settings, span, scoped_lexical
        )
        rankings.append(source_hits)
        dense += source_dense
        lexical += source_lexical
        window += source_window
    dense.sort(key=lambda item: -item[1])
    lexical.sort(key=lambda item: -item[1])
    # Each source's relevance is scaled over its own candidates, so both first hits are near 1 and the
    # chat one is then decayed: on that scale documents would nearly always lead. Cosines and full-text
    # scores are on one scale across sources (one model, one index), so the lead goes to the source
    # whose best hit is closer when both sources' candidates are scaled together. (A best hit found only
    # among the chat of the time the question names is in neither list: it keeps its own score.)
    both_dense, both_lexical = scaled(dense), scaled(lexical)
    lead = {
        chunk.id: relevance(chunk, both_dense.get(chunk.id, 0.0), both_lexical.get(chunk.id, 0.0), now, settings, span)
        for chunk in (ranking[0].chunk for ranking in rankings if ranking)
        if chunk.id in both_dense or chunk.id in both_lexical
    }
    return Retrieval(interleave(rankings, per_source, lead), dense, lexical, window=window, vectors=vectors)


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
