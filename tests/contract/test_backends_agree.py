"""The two backends are one store: the same data lists and reads back the same, field by field;
times are compared as moments whatever their UTC offsets; full text is kept in step by the store."""

from __future__ import annotations

import pytest

from contract.backends import fill, is_postgres, offsets_conversation, rows, snapshot
from threadkeep.api import KnowledgeBase
from threadkeep.embed import HashEmbedder
from threadkeep.store import SearchFilters


def test_first_and_last_message_are_the_earliest_and_latest_moments(store_location, bundle_factory):
    with KnowledgeBase.open(store_location, HashEmbedder(64)) as kb:
        kb.ingest(bundle_factory(offsets_conversation()))
        (listed,) = kb.store.list_conversations()
        # As text, m3's "2026-05-13T23:30..." is the smallest and m1's "...T10:00" the largest.
        assert listed.first_message_at == "2026-05-14T10:00:00+08:00"
        assert listed.last_message_at == "2026-05-13T23:30:00-05:00"
        assert [m.id for m in kb.store.load_messages("g-1")] == ["m1", "m2", "m4", "m3"]
        assert kb.conversations()[0].first_message_at == "2026-05-14T10:00:00+08:00"


def test_both_backends_list_and_read_back_the_same_field_by_field(make_location, bundle_factory, tmp_path):
    taken = {}
    for backend in ("sqlite", "postgres"):
        with KnowledgeBase.open(make_location(backend), HashEmbedder(64)) as kb:
            fill(kb, bundle_factory, tmp_path)
            taken[backend] = snapshot(kb)
    sqlite, postgres = taken["sqlite"], taken["postgres"]
    assert sqlite["conversations"][0].first_message_at == "2026-05-14T10:00:00+08:00"
    assert len(sqlite["review"]) == 2 and len(sqlite["forgotten"]) == 1 and sqlite["problems"] == []
    for part in sqlite:
        if part == "lexical":  # BM25 and ts_rank order ties differently; the same chunks match
            assert sorted(sqlite[part]) == sorted(postgres[part])
        else:
            assert sqlite[part] == postgres[part], part


def test_full_text_follows_every_write_to_the_chunks_table(store_location, bundle_factory):
    """Full text is kept in step by the store itself: even SQL that deletes chunks directly leaves
    no entry behind."""
    with KnowledgeBase.open(store_location, HashEmbedder(64)) as kb:
        kb.ingest(bundle_factory(offsets_conversation()))
        assert kb.store.lexical_candidates("同步卡住", 5, SearchFilters())
        kb.store.db.execute("DELETE FROM chunks WHERE source_ref = 'g-1'")  # autocommitted on both
        if not is_postgres(store_location):
            assert rows(kb.store, "SELECT count(*) FROM chunks_fts") == [(0,)]
        assert kb.store.lexical_candidates("同步卡住", 5, SearchFilters()) == []
        problems = kb.store.integrity_problems()
        assert not any("full-text" in problem for problem in problems), problems


def test_sqlite_vacuum_keeps_the_chunk_numbers_full_text_and_vectors_use(tmp_path, bundle_factory):
    location = str(tmp_path / "kb.db")
    with KnowledgeBase.open(location, HashEmbedder(64)) as kb:
        fill(kb, bundle_factory, tmp_path)
        before = snapshot(kb)
        # Removing a document leaves gaps in the numbering; VACUUM renumbers tables without an
        # INTEGER PRIMARY KEY, which would point full text and the vector file at other chunks.
        kb.store.remove_document(kb.store.list_documents()[0].id)
        kb.store.db.execute("VACUUM")
        after = snapshot(kb)
    with KnowledgeBase.open(location, HashEmbedder(64)) as kb:
        assert snapshot(kb) == after
    gone = set(before["chunks"]) - set(after["chunks"])
    assert gone and after["problems"] == []
    assert after["lexical"] == [cid for cid in before["lexical"] if cid not in gone]
    assert after["dense"] == [(score, cid) for score, cid in before["dense"] if cid not in gone]


@pytest.mark.parametrize("backend", ["sqlite", "postgres"])
def test_thread_lookup_goes_through_each_message_thread(make_location, bundle_factory, backend):
    with KnowledgeBase.open(make_location(backend), HashEmbedder(64)) as kb:
        kb.ingest(bundle_factory(offsets_conversation()))
        threads = rows(kb.store, "SELECT id, conversation FROM threads ORDER BY id")
        for thread_id, conversation in threads:
            members = [row[0] for row in rows(kb.store, "SELECT id FROM messages WHERE thread_id = ?", (thread_id,))]
            assert sorted(m.id for m in kb.store.load_thread(conversation, members[0])) == sorted(members)
        assert kb.store.load_thread("g-1", "nope") == []
