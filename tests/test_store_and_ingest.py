import sqlite3
from datetime import UTC, datetime

import pytest

from conftest import message
from threadkeep.api import KnowledgeBase
from threadkeep.embed import HashEmbedder
from threadkeep.model import Chunk, Conversation
from threadkeep.store import SearchFilters, StoreError, open_store


class CountingEmbedder(HashEmbedder):
    def __init__(self) -> None:
        super().__init__(64)
        self.passages = 0

    def embed_passages(self, texts):
        self.passages += len(texts)
        return super().embed_passages(texts)


def two_conversations():
    return [
        message("a1", "u1", 0, "我这边点了图标一点反应都没有"),
        message("a2", "u2", 3, "把托盘里的进程结束再打开", quotedMessageId="a1"),
        message("a3", "u1", 5, "好了，谢谢", quotedMessageId="a2"),
        message("a4", "u3", 6, "+1"),
        message("b1", "u4", 0, "发票怎么开？", conversation="g-2"),
        message("b2", "u2", 1, "管理后台账单页申请发票", conversation="g-2", quotedMessageId="b1"),
    ]


def chat_chunk(**changes):
    base = dict(
        id="c1",
        source_type="chat",
        source_ref="g-1",
        text="x",
        embedding_input="x",
        occurred_at=datetime(2026, 5, 14, tzinfo=UTC),
        evidence_ids=("m1",),
        resolution_state="open",
    )
    base.update(changes)
    return Chunk(**base)


@pytest.mark.parametrize(
    "bad",
    [
        dict(evidence_ids=None),
        dict(evidence_ids=()),
        dict(resolution_state=None),
        dict(source_type="document", heading_path=None, resolution_state=None),
        dict(source_type="document", heading_path=("标题",), resolution_state="open"),
    ],
)
def test_chunk_shape_constraint_rejects_incomplete_chunks(tmp_path, bad):
    store = open_store(tmp_path / "kb.db")
    with pytest.raises(sqlite3.IntegrityError, match="CHECK constraint failed"):
        store.replace_conversation(Conversation("g-1"), "h", [], [], [chat_chunk(**bad)], {})
    assert store.stats()["chunks"] == 0
    store.close()


def test_reingesting_the_same_export_changes_nothing(tmp_path, bundle_factory):
    bundle = bundle_factory(two_conversations())
    embedder = CountingEmbedder()
    with KnowledgeBase.open(tmp_path / "kb.db", embedder) as kb:
        first = kb.ingest(bundle)
        stats = kb.stats()
        ids = sorted(row[0] for row in kb.store.db.execute("SELECT id FROM chunks"))
        calls = embedder.passages
        second = kb.ingest(bundle)
        assert kb.stats() == stats
        assert sorted(row[0] for row in kb.store.db.execute("SELECT id FROM chunks")) == ids
    assert first.conversations_rebuilt == 2 and second.conversations_rebuilt == 0
    assert embedder.passages == calls > 0
    assert stats["messages"] == 6


def test_a_grown_export_rebuilds_only_the_changed_conversation(tmp_path, bundle_factory):
    messages = two_conversations()
    embedder = CountingEmbedder()
    with KnowledgeBase.open(tmp_path / "kb.db", embedder) as kb:
        kb.ingest(bundle_factory(messages))
        before = kb.store.db.execute("SELECT * FROM chunks WHERE source_ref = 'g-2'").fetchall()
        calls = embedder.passages
        grown = [*messages, message("a5", "u5", 8, "导出日志在哪里？")]
        report = kb.ingest(bundle_factory(grown))
        after = kb.store.db.execute("SELECT * FROM chunks WHERE source_ref = 'g-2'").fetchall()
        assert report.conversations_rebuilt == 1
        assert before == after
        assert embedder.passages == calls + 1  # only the new thread; the old thread keeps its vector
        # An export that no longer holds old messages deletes nothing.
        kb.ingest(bundle_factory([message("a6", "u5", 9, "在设置-关于里")]))
        assert kb.stats()["messages"] == 8


def test_the_store_refuses_a_different_embedding_model(tmp_path, bundle_factory):
    bundle = bundle_factory(two_conversations())
    with KnowledgeBase.open(tmp_path / "kb.db", HashEmbedder(64)) as kb:
        kb.ingest(bundle)
    with KnowledgeBase.open(tmp_path / "kb.db", HashEmbedder(32)) as kb, pytest.raises(StoreError, match="hash-64"):
        kb.ingest(bundle)


def test_chat_chunks_keep_noise_out_of_the_embedding_input(tmp_path, bundle_factory):
    with KnowledgeBase.open(tmp_path / "kb.db", HashEmbedder(64)) as kb:
        kb.ingest(bundle_factory(two_conversations()))
        (hit,) = kb.search("图标没反应", k=1, filters=SearchFilters(conversation="g-1"))
    chunk = hit.chunk
    assert "+1" in chunk.text and "+1" not in chunk.embedding_input
    assert chunk.evidence_ids == ("a1", "a2", "a3", "a4")
    assert chunk.resolution_state == "resolved"


def test_search_filters_by_conversation(tmp_path, bundle_factory):
    with KnowledgeBase.open(tmp_path / "kb.db", HashEmbedder(64)) as kb:
        kb.ingest(bundle_factory(two_conversations()))
        hits = kb.search("发票", filters=SearchFilters(conversation="g-1"))
    assert hits and all(hit.chunk.source_ref == "g-1" for hit in hits)


def test_a_newer_fix_outranks_an_older_one_with_the_same_text(tmp_path, bundle_factory):
    old = [
        message("o1", "u1", 0, "同步卡在99%怎么办", conversation="old"),
        message("o2", "u2", 1, "删除缓存目录后重启", conversation="old", quotedMessageId="o1"),
    ]
    new = [
        {
            **item,
            "messageId": "n" + item["messageId"][1:],
            "conversationRef": "new",
            "sentAt": item["sentAt"].replace("2026-05", "2026-10"),
            **({"quotedMessageId": "n1"} if "quotedMessageId" in item else {}),
        }
        for item in old
    ]
    with KnowledgeBase.open(tmp_path / "kb.db", HashEmbedder(64)) as kb:
        kb.ingest(bundle_factory(old + new))
        hits = kb.search("同步卡在99%", k=2, now=datetime(2026, 11, 1, tzinfo=UTC))
    assert [hit.chunk.source_ref for hit in hits] == ["new", "old"]
