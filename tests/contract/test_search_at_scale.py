"""The fast search paths give what exact search gives: vector candidates against numpy, the
embedded store's derived vector file rebuilt whenever it cannot be trusted, and full-text
queries whose common words are bounded still finding exact codes."""

from __future__ import annotations

import json
import shutil
from contextlib import contextmanager
from datetime import UTC, datetime, timedelta

import numpy as np
import pytest

from contract.backends import is_postgres
from threadkeep.model import Chunk, Conversation, Document
from threadkeep.store import SearchFilters, open_store
from threadkeep.store import vectors as vector_file
from threadkeep.store.rows import input_hash

DIM = 384
START = datetime(2026, 1, 1, tzinfo=UTC)


def clustered(count: int, seed: int) -> np.ndarray:
    """Unit vectors around a few centres in a low-rank subspace, shaped like text embeddings."""
    rng = np.random.default_rng(seed)
    basis = np.linalg.qr(rng.standard_normal((DIM, 48)))[0].T
    centres = rng.standard_normal((40, 48))
    latent = centres[rng.integers(0, 40, count)] + rng.standard_normal((count, 48))
    vectors = (latent @ basis + 0.05 * rng.standard_normal((count, DIM))).astype(np.float32)
    return vectors / np.linalg.norm(vectors, axis=1, keepdims=True)


def make_chunk(index: int, ref: str, kind: str, text: str | None = None) -> Chunk:
    text = text or f"note {index}"
    common = dict(id=f"{ref}:{index}", source_type=kind, source_ref=ref, text=text, embedding_input=text,
                  occurred_at=START + timedelta(hours=index))  # fmt: skip
    if kind == "document":
        return Chunk(**common, heading_path=(ref,), title=ref)
    return Chunk(**common, evidence_ids=(f"m{index}",), resolution_state="resolved")


def load_sources(store, vectors: np.ndarray, sources: dict[str, tuple[str, range]]) -> dict[str, Chunk]:
    """Write each source's chunks (vector i for chunk i) through the store's own API."""
    written = {}
    for ref, (kind, indexes) in sources.items():
        chunks = [make_chunk(i, ref, kind) for i in indexes]
        embeddings = {input_hash(c.embedding_input): vectors[i] for c, i in zip(chunks, indexes, strict=True)}
        if kind == "document":
            store.replace_document(Document(ref, ref, START, f"{ref}.md", (), ref), ref, chunks, embeddings)
        else:
            store.replace_conversation(Conversation(ref), ref, [], [], chunks, embeddings)
        written.update({c.id: c for c in chunks})
    return written


def exact(chunks: dict[str, Chunk], vectors: np.ndarray, query: np.ndarray, k: int, keep=lambda c: True) -> list:
    scored = [(cid, float(vectors[int(cid.rpartition(":")[2])] @ query)) for cid, c in chunks.items() if keep(c)]
    scored.sort(key=lambda pair: -pair[1])
    return scored[:k]


SOURCES = {
    "conv-a": ("chat", range(0, 600)),
    "conv-b": ("chat", range(600, 1200)),
    "doc-c": ("document", range(1200, 1500)),
}


def test_dense_candidates_are_the_exact_top_hits(store_location):
    vectors, queries = clustered(1500, 1), clustered(15, 2)
    store = open_store(store_location)
    try:
        store.bind_embedder("clustered", DIM)
        chunks = load_sources(store, vectors, SOURCES)
        since = START + timedelta(hours=900)
        recent = lambda c: c.source_type == "chat" and c.occurred_at >= since  # noqa: E731
        cases = [
            (SearchFilters(), lambda c: True),
            (SearchFilters(conversation="conv-b"), lambda c: c.source_ref == "conv-b"),
            (SearchFilters(source_type="document"), lambda c: c.source_type == "document"),
            (SearchFilters(source_type="chat", since=since), recent),
        ]
        approximate = []
        for filters, keep in cases:
            for query in queries:
                found = store.dense_candidates(query, 10, filters)
                truth = exact(chunks, vectors, query, 10, keep)
                scores = dict(truth)
                if is_postgres(store_location) and filters == SearchFilters():
                    # The HNSW graph is approximate (filtered searches this small are exact); the
                    # scores it returns are still the exact cosines.
                    approximate.append(len({cid for cid, _ in found} & set(scores)) / 10)
                    continue
                assert [cid for cid, _ in found] == [cid for cid, _ in truth], filters
                assert [s for _, s in found] == pytest.approx([s for _, s in truth], abs=1e-5)
        assert not approximate or np.mean(approximate) >= 0.9
    finally:
        store.close()


# The vector file is the embedded store's own.


def written_store(make_location):
    """A SQLite store of 1,500 clustered vectors in `SOURCES`, closed (a writer leaves its vector file for
    the next process), with 5 queries: (location, store, vectors, queries, chunks)."""
    store_location = make_location("sqlite")
    vectors, queries = clustered(1500, 3), clustered(5, 4)
    store = open_store(store_location)
    store.bind_embedder("clustered", DIM)
    chunks = load_sources(store, vectors, SOURCES)
    store.close()
    return store_location, store, vectors, queries, chunks


def test_a_missing_damaged_or_foreign_vector_file_is_rebuilt(make_location, tmp_path):
    store_location, store, vectors, queries, chunks = written_store(make_location)

    def answers(location) -> list:
        reader = open_store(location)
        try:
            return [reader.dense_candidates(q, 10, SearchFilters()) for q in queries]
        finally:
            reader.close()

    truth = [exact(chunks, vectors, q, 10) for q in queries]
    path = store.vector_file
    assert path.exists()
    assert [[cid for cid, _ in found] for found in answers(store_location)] == [[c for c, _ in t] for t in truth]

    path.unlink()
    assert [[cid for cid, _ in found] for found in answers(store_location)] == [[c for c, _ in t] for t in truth]
    assert path.exists()

    whole = path.read_bytes()
    for damaged in (whole[: len(whole) // 2], whole[:-64] + bytes(64), b"not a vector file"):
        path.write_bytes(damaged)
        assert [[cid for cid, _ in found] for found in answers(store_location)] == [[c for c, _ in t] for t in truth]
        assert path.read_bytes() != damaged

    other = open_store(tmp_path / "other.db")
    other.bind_embedder("clustered", DIM)
    load_sources(other, clustered(1500, 9), SOURCES)  # same ids, other vectors
    other.close()
    shutil.copy(other.vector_file, path)
    assert [[cid for cid, _ in found] for found in answers(store_location)] == [[c for c, _ in t] for t in truth]


def test_changes_made_after_the_file_was_written_are_searched(make_location, monkeypatch):
    store_location = make_location("sqlite")
    vectors, queries = clustered(2100, 5), clustered(8, 6)
    reader, writer = open_store(store_location), open_store(store_location)
    try:
        writer.bind_embedder("clustered", DIM)
        chunks = load_sources(writer, vectors, SOURCES)
        reader.dense_candidates(queries[0], 10, SearchFilters())  # the reader's index, from the file
        stale = reader.vector_file.read_bytes()

        # Another connection replaces one conversation (new vectors), removes the document and adds one.
        changed = {"conv-a": ("chat", range(1500, 2100)), "conv-d": ("chat", range(1200, 1500))}
        writer.remove_document("doc-c")
        chunks = {cid: c for cid, c in chunks.items() if c.source_ref not in ("conv-a", "doc-c")}
        chunks.update(load_sources(writer, vectors, changed))

        def check(store) -> None:
            for query in queries:
                for filters, keep in [
                    (SearchFilters(), lambda c: True),
                    (SearchFilters(conversation="conv-a"), lambda c: c.source_ref == "conv-a"),
                    (SearchFilters(source_type="document"), lambda c: False),
                ]:
                    truth = exact(chunks, vectors, query, 10, keep)
                    assert [cid for cid, _ in store.dense_candidates(query, 10, filters)] == [c for c, _ in truth]

        check(reader)  # replayed from the change log into the reader's delta
        # A writer that folds the changes into a new file also trims the log ...
        monkeypatch.setattr("threadkeep.store.sqlite.FOLD_AT", 1)
        writer.close()
        check(reader)  # ... so the reader picks up the new file
        # A stale file whose changes are no longer in the log is not trusted: the store reads SQLite afresh.
        reader.vector_file.write_bytes(stale)
        fresh = open_store(store_location)
        try:
            check(fresh)
        finally:
            fresh.close()
    finally:
        reader.close()


def test_common_words_are_bounded_and_exact_codes_still_decide(store_location, monkeypatch):
    # Budgets small enough that this small store has common words: 同步 is in every chunk.
    monkeypatch.setattr("threadkeep.store.base.POSTINGS_BUDGET", 10)
    monkeypatch.setattr("threadkeep.store.sqlite.POSTINGS_BUDGET", 10)
    monkeypatch.setattr("threadkeep.store.sqlite.NEWEST_MATCHES", 15)
    monkeypatch.setattr("threadkeep.store.postgres.NEWEST_MATCHES", 15)
    texts = [f"同步 进度 {i} 卡住" if i % 2 else f"同步 上传 {i}" for i in range(40)]
    texts[7] = "同步 报错 E1024 重启"
    texts[21] = "安装 同步 报错 0x80070005"
    store = open_store(store_location)
    try:
        store.bind_embedder("hash-4", 4)
        chunks = [make_chunk(i, "conv-a", "chat", text) for i, text in enumerate(texts)]
        vectors = {input_hash(c.embedding_input): np.ones(4, dtype=np.float32) for c in chunks}
        store.replace_conversation(Conversation("conv-a"), "h", [], [], chunks, vectors)
        if is_postgres(store_location):
            store.db.execute("ANALYZE chunks")  # the term statistics the PostgreSQL store reads

        def ids(query: str, k: int = 10, **filters) -> list[str]:
            return [chunk_id for chunk_id, _ in store.lexical_candidates(query, k, SearchFilters(**filters))]

        assert ids("同步 E1024") == ["conv-a:7"]  # the code decides; the word every chunk has is left out
        assert ids("0x80070005 同步 报错") == ["conv-a:21", "conv-a:7"]
        assert ids("同步 0x80070005", conversation="conv-b") == []
        newest = ids("同步", k=50)  # only the common word: its newest matches, ranked
        assert 0 < len(newest) <= 15
        assert {int(chunk_id.rpartition(":")[2]) for chunk_id in newest} <= set(range(25, 40))
    finally:
        store.close()


def test_term_counts_follow_every_write(store_location, monkeypatch):
    # SQLite remembers a term's count between searches: a write by this store or by another
    # connection makes it count again, so a word grown common is left out at once, and back in.
    if is_postgres(store_location):
        pytest.skip("PostgreSQL plans terms from its ANALYZE statistics, read again after a while")
    monkeypatch.setattr("threadkeep.store.base.POSTINGS_BUDGET", 10)
    monkeypatch.setattr("threadkeep.store.sqlite.POSTINGS_BUDGET", 10)
    texts = ["报错 E1024 重启", "报错 上传", "报错 登录", "安装 进度"]
    common = [make_chunk(i, "conv-b", "chat", f"报错 同步 {i}") for i in range(100, 120)]
    store, other = open_store(store_location), open_store(store_location)
    try:
        store.bind_embedder("hash-4", 4)
        vectors = {input_hash(c.embedding_input): np.ones(4, dtype=np.float32) for c in common}
        chunks = [make_chunk(i, "conv-a", "chat", text) for i, text in enumerate(texts)]
        vectors.update({input_hash(c.embedding_input): np.ones(4, dtype=np.float32) for c in chunks})
        store.replace_conversation(Conversation("conv-a"), "h", [], [], chunks, vectors)

        def ids(query: str) -> list[str]:
            return sorted(chunk_id for chunk_id, _ in store.lexical_candidates(query, 50, SearchFilters()))

        rare = ["conv-a:0", "conv-a:1", "conv-a:2"]
        assert ids("报错 E1024") == rare
        other.replace_conversation(Conversation("conv-b"), "h", [], [], common, vectors)
        assert ids("报错 E1024") == ["conv-a:0"]  # 报错 is in 23 chunks now: past the budget
        rare_again = [make_chunk(100, "conv-b", "chat", "安装")]
        store.replace_conversation(Conversation("conv-b"), "h2", [], [], rare_again, vectors)
        assert ids("报错 E1024") == rare
        other.replace_conversation(Conversation("conv-b"), "h3", [], [], common, vectors)
        assert ids("报错 E1024") == ["conv-a:0"]
    finally:
        other.close()
        store.close()


def test_past_the_bit_candidates_the_top_hits_are_still_exact(make_location):
    # 5,000 vectors: more than the Hamming stage keeps for a top-10, so bits, int8 and exact
    # re-scoring all take part; filters passing most of the file (chat) and a small share of it
    # (the document) take the scan and the gather path.
    vectors, queries = clustered(5000, 11), clustered(12, 12)
    with big_store(make_location, vectors) as (store, chunks):
        for filters, keep in big_cases():
            for query in queries:
                truth = exact(chunks, vectors, query, 10, keep)
                found = store.dense_candidates(query, 10, filters)
                assert [cid for cid, _ in found] == [cid for cid, _ in truth], filters
                assert [s for _, s in found] == pytest.approx([s for _, s in truth], abs=1e-5)


BIG_SOURCES = {
    "conv-a": ("chat", range(0, 2500)),
    "conv-b": ("chat", range(2500, 4200)),
    "doc-c": ("document", range(4200, 5000)),
}


def filtered_recalls(store, chunks, vectors, queries) -> list[float]:
    """Recall@10 of each query under each filter of `big_cases`; every hit passes its filter and
    carries its exact score."""
    recalls = []
    for filters, keep in big_cases():
        for query in queries:
            truth = dict(exact(chunks, vectors, query, 10, keep))
            found = store.dense_candidates(query, 10, filters)
            for chunk_id, score in found:
                assert keep(chunks[chunk_id])
                assert score == pytest.approx(float(vectors[int(chunk_id.rpartition(":")[2])] @ query), abs=1e-5)
            recalls.append(len(set(dict(found)) & set(truth)) / len(truth))
    return recalls


def big_cases() -> list:
    return [
        (SearchFilters(), lambda c: True),
        (SearchFilters(source_type="chat"), lambda c: c.source_type == "chat"),
        (SearchFilters(conversation="conv-a"), lambda c: c.source_ref == "conv-a"),
        (SearchFilters(source_type="document"), lambda c: c.source_type == "document"),
    ]


@contextmanager
def big_store(make_location, vectors: np.ndarray):
    """A SQLite store holding `vectors` as the chunks of BIG_SOURCES: (store, chunks by id)."""
    store = open_store(make_location("sqlite"))
    try:
        store.bind_embedder("clustered", DIM)
        yield store, load_sources(store, vectors, BIG_SOURCES)
    finally:
        store.close()


def test_through_the_bit_stages_scores_are_exact_and_the_top_hits_found(make_location, monkeypatch):
    # The same 5,000 vectors, the int8 scan limit lowered so every search goes through the Hamming
    # stage (3,000 kept) and the signed-bit score (2,000 kept) before int8 and exact re-scoring. These
    # 40-cluster vectors are the hard case for sign bits (many nearly equally close: Hamming distance
    # alone ranks the true top 10 as far as 3,751st), so a rare miss is allowed, never a wrong score; a
    # signed-bit score read from the wrong bits would rank like chance and keep about 40 % of the top 10.
    monkeypatch.setattr("threadkeep.store.vectors.INT8_SCAN", 1_000)
    monkeypatch.setattr("threadkeep.store.vectors.HAMMING_KEEP", 3_000)
    vectors, queries = clustered(5000, 11), clustered(12, 12)
    with big_store(make_location, vectors) as (store, chunks):
        assert np.mean(filtered_recalls(store, chunks, vectors, queries)) >= 0.98


def test_postgres_walks_each_source_types_own_graph(make_location, monkeypatch):
    store_location = make_location("postgres")
    # Exact search only below 50 passing chunks, so a conversation of 2,700 goes through HNSW.
    monkeypatch.setattr("threadkeep.store.postgres.EXACT_SEARCH_FLOOR", 50)
    monkeypatch.setattr("threadkeep.store.postgres.PostgresStore._rows_estimate", lambda self: 1.0)
    sources = {
        "conv-a": ("chat", range(0, 2700)),
        "conv-b": ("chat", range(2700, 2740)),
        "doc-c": ("document", range(2740, 3040)),
    }
    vectors, queries = clustered(3040, 13), clustered(10, 14)
    store = open_store(store_location)
    try:
        store.bind_embedder("clustered", DIM)
        chunks = load_sources(store, vectors, sources)
        store.db.execute("ANALYZE chunks")  # the planner's estimate of the chunks a filter passes
        # At 3,000 rows the planner rightly sorts them all rather than walk the graph; a million-chunk
        # table is what makes it choose the graph, so here sorting and scanning are priced out.
        store.db.execute("SET enable_seqscan = off; SET enable_bitmapscan = off; SET enable_sort = off")

        def index_scans() -> dict[str, int]:
            store.db.execute("SELECT pg_stat_force_next_flush()")
            store.db.execute("SELECT 1")  # the flush happens as this backend finishes a transaction
            store.db.execute("SELECT pg_stat_clear_snapshot()")
            found = store.db.execute(
                "SELECT indexrelname, idx_scan FROM pg_stat_user_indexes "
                "WHERE indexrelname LIKE 'chunks_embedding%%' AND schemaname = current_schema()"
            ).fetchall()
            return dict(found)

        every, chat, document = "chunks_embedding", "chunks_embedding_chat", "chunks_embedding_document"
        cases = [
            (SearchFilters(source_type="document"), lambda c: c.source_type == "document", document),
            (SearchFilters(source_type="chat"), lambda c: c.source_type == "chat", chat),
            (SearchFilters(), lambda c: True, every),
            # Most chunks pass: the walk steps over the others (iterative scan).
            (SearchFilters(conversation="conv-a"), lambda c: c.source_ref == "conv-a", every),
            (SearchFilters(conversation="conv-a", source_type="chat"), lambda c: c.source_ref == "conv-a", chat),
        ]
        assert set(index_scans()) == {every, chat, document}
        for filters, keep, graph in cases:
            before = index_scans()
            recalls = []
            for query in queries:
                found = store.dense_candidates(query, 10, filters)
                truth = dict(exact(chunks, vectors, query, 10, keep))
                assert all(keep(chunks[cid]) for cid, _ in found), filters
                assert len(found) == 10
                assert [s for _, s in found] == sorted((s for _, s in found), reverse=True)
                recalls.append(len(set(dict(found)) & set(truth)) / 10)
                exact_scores = {cid: float(vectors[int(cid.rpartition(":")[2])] @ query) for cid, _ in found}
                assert [s for _, s in found] == pytest.approx([exact_scores[cid] for cid, _ in found], abs=1e-5)
            after = index_scans()
            assert {name for name in after if after[name] > before[name]} == {graph}, filters
            assert after[graph] >= before[graph] + len(queries)
            assert np.mean(recalls) >= 0.9, filters
        # A conversation the planner expects to be small is compared exactly, through the btree indexes.
        before = index_scans()
        for query in queries:
            found = store.dense_candidates(query, 10, SearchFilters(conversation="conv-b"))
            truth = exact(chunks, vectors, query, 10, lambda c: c.source_ref == "conv-b")
            assert [cid for cid, _ in found] == [cid for cid, _ in truth]
            assert [s for _, s in found] == pytest.approx([s for _, s in truth], abs=1e-5)
        assert index_scans() == before
        assert store.dense_candidates(queries[0], 10, SearchFilters(source_type="email")) == []
    finally:
        store.close()


def test_postgres_ranks_full_text_matches_from_the_row_itself(make_location):
    # A row with a 384-d vector passes PostgreSQL's ~2 kB TOAST threshold; the tsvectors must stay
    # in it, or ranking each match reads its TOAST index and pages too (5 pages a match, measured).
    store = open_store(make_location("postgres"))
    try:
        store.bind_embedder("clustered", DIM)
        vectors = clustered(400, 21)
        chunks = [
            make_chunk(i, "conv-a", "chat", "同步 " + " ".join(f"w{i}x{j}" for j in range(60))) for i in range(400)
        ]
        embeddings = {input_hash(c.embedding_input): vectors[i] for i, c in enumerate(chunks)}
        store.replace_conversation(Conversation("conv-a"), "h", [], [], chunks, embeddings)
        store.db.execute("ANALYZE chunks")
        (plan,) = store.db.execute(
            "EXPLAIN (ANALYZE, BUFFERS, FORMAT JSON) SELECT id, ts_rank(words, q) FROM chunks, "
            "to_tsquery('simple', '同步') q WHERE words @@ q"
        ).fetchone()[0]
        (row_bytes,) = store.db.execute("SELECT min(pg_column_size(c.*)) FROM chunks c").fetchone()
        pages = plan["Plan"]["Shared Hit Blocks"] + plan["Plan"]["Shared Read Blocks"]
        assert plan["Plan"]["Actual Rows"] == 400
        assert row_bytes > 2000  # big enough that PostgreSQL toasts something in each row
        assert pages < 400  # the rows themselves (several to a page) and the index, no TOAST
        assert [cid for cid, _ in store.lexical_candidates("w7x3", 5, SearchFilters())] == ["conv-a:7"]
    finally:
        store.close()


def embedding_like(count: int, seed: int, shift: float = 0.0) -> np.ndarray:
    """Unit vectors shaped like text embeddings where sign bits do worst: one large direction shared
    by all (cosine ~.85 between any two, as between e5's vectors of unrelated texts), around it 200
    topics spread over every dimension with a decaying spread, each text scattered as widely as the
    topics are. `shift` moves them along another fixed direction (e5's queries sit apart from its
    passages)."""
    shape = np.random.default_rng(100)
    basis = np.linalg.qr(shape.standard_normal((DIM, DIM)))[0]
    spread = 1.0 / np.arange(1, DIM)
    centres = shape.standard_normal((200, DIM - 1)) * spread
    rng = np.random.default_rng(seed)
    latent = centres[rng.integers(0, 200, count)] + rng.standard_normal((count, DIM - 1)) * spread
    vectors = 4.0 * basis[0] + latent @ basis[1:] + shift * shape.standard_normal(DIM) / np.sqrt(DIM)
    return (vectors / np.linalg.norm(vectors, axis=1, keepdims=True)).astype(np.float32)


def test_vectors_sharing_one_large_direction_keep_their_top_hits_through_the_bits(make_location, monkeypatch):
    # The bit stages keep 5 % and 2 % of the vectors passing the filters (at a million chunks they keep
    # 0.5 % and 0.2 %). On these vectors the first file format's bits (signs of the offset from the
    # mean, plain Hamming distance) kept .92 of the top 10 this way, 3 of one query's (.79 unfiltered).
    monkeypatch.setattr("threadkeep.store.vectors.INT8_SCAN", 0)
    monkeypatch.setattr("threadkeep.store.vectors.hamming_candidates", lambda k: 250)
    monkeypatch.setattr("threadkeep.store.vectors.bit_candidates", lambda k: 100)
    vectors, queries = embedding_like(5000, 31), embedding_like(16, 32, shift=0.3)
    with big_store(make_location, vectors) as (store, chunks):
        recalls = filtered_recalls(store, chunks, vectors, queries)
        assert np.mean(recalls) >= 0.98
        assert min(recalls) >= 0.8


def file_header(path) -> dict:
    with open(path, "rb") as source:
        source.read(len(vector_file.MAGIC))
        return json.loads(source.read(int.from_bytes(source.read(8), "little")))


def test_a_vector_file_of_the_first_format_is_rebuilt_and_the_store_still_answers(make_location, monkeypatch):
    store_location, store, vectors, queries, chunks = written_store(make_location)
    path = store.vector_file
    header = file_header(path)
    segment, _ = vector_file.load(path, {})
    # The file as the first format wrote it: the same header, the arrays it held (sign bits of the offset
    # from the mean, int8 codes, the fields filters read) and none of the tail's.
    first = ("rowids", "kinds", "ref_codes", "times", "bits", "codes", "scales", "mean")
    with monkeypatch.context() as patched:
        patched.setattr(vector_file, "FORMAT", 1)
        patched.setattr(vector_file, "ARRAYS", first)
        vector_file.save(segment, path, {key: header[key] for key in ("store_id", "embedder", "dim", "seq")})
    assert file_header(path)["format"] == 1 and set(file_header(path)["arrays"]) == set(first)

    reader = open_store(store_location)
    try:
        for query in queries:
            truth = exact(chunks, vectors, query, 10)
            found = reader.dense_candidates(query, 10, SearchFilters())
            assert [cid for cid, _ in found] == [cid for cid, _ in truth]
            assert [s for _, s in found] == pytest.approx([s for _, s in truth], abs=1e-5)
    finally:
        reader.close()
    assert file_header(path)["format"] == vector_file.FORMAT == 2
