import json

from conftest import message
from test_store_and_ingest import CountingEmbedder
from threadkeep.api import KnowledgeBase
from threadkeep.store import SearchFilters

MEMBERS = [{"senderRef": "u1", "displayName": "小明"}, {"senderRef": "u3", "displayName": "老王"}]


def base_messages():
    return [
        message("a1", "u1", 0, "同步一直卡住不动怎么办"),
        message("b1", "u3", 10, "重启客户端就行"),
        message("x1", "u4", 0, "发票怎么开？", conversation="g-2"),
        message("x2", "u2", 1, "管理后台账单页申请", conversation="g-2", quotedMessageId="x1"),
        message("x3", "u5", 2, "我的电话是13912345678", conversation="g-2"),
    ]


def write_delta(folder, operations):
    (folder / "delta.jsonl").write_text(
        "\n".join(json.dumps(op, ensure_ascii=False) for op in operations) + "\n", encoding="utf-8"
    )
    return folder / "delta.jsonl"


def threads_of(kb, conversation):
    rows = kb.store.db.execute("SELECT message_ids FROM threads WHERE conversation = ?", (conversation,))
    return sorted(sorted(json.loads(row[0])) for row in rows)


def test_an_upsert_that_mentions_merges_threads_and_leaves_other_conversations_alone(tmp_path, bundle_factory):
    bundle = bundle_factory(base_messages(), members=MEMBERS)
    with KnowledgeBase.open(tmp_path / "kb.db", CountingEmbedder()) as kb:
        kb.ingest(bundle)
        assert threads_of(kb, "g-1") == [["a1"], ["b1"]]
        other_before = kb.store.db.execute("SELECT * FROM chunks WHERE source_ref = 'g-2' ORDER BY id").fetchall()
        other_messages = kb.store.db.execute("SELECT * FROM messages WHERE conversation = 'g-2'").fetchall()

        mention = message("m1", "u3", 9, "@小明 你这个问题我也遇到过", mentionedRefs=["u1"])
        report = kb.apply_delta(write_delta(bundle, [{"operation": "upsert", "item": mention}]))

        assert report.conversations_rebuilt == 1 and report.upserted == 1
        assert threads_of(kb, "g-1") == [["a1", "b1", "m1"]]
        assert kb.store.db.execute("SELECT * FROM chunks WHERE source_ref = 'g-2' ORDER BY id").fetchall() == (
            other_before
        )
        assert kb.store.db.execute("SELECT * FROM messages WHERE conversation = 'g-2'").fetchall() == other_messages
        assert kb.check() == []


def test_recalled_messages_leave_search_and_missing_ones_stay(tmp_path, bundle_factory):
    bundle = bundle_factory(base_messages(), members=MEMBERS)
    with KnowledgeBase.open(tmp_path / "kb.db", CountingEmbedder()) as kb:
        kb.ingest(bundle)
        assert any("13912345678" in hit.chunk.text for hit in kb.search("电话 13912345678"))
        delta = write_delta(
            bundle,
            [
                {"operation": "recalled", "messageId": "x3", "item": {"conversationRef": "g-2"}},
                {"operation": "missing", "messageId": "a1", "item": {"conversationRef": "g-1"}},
                {"operation": "recalled", "messageId": "nope", "item": {"conversationRef": "g-2"}},
                {"operation": "explode"},
            ],
        )
        report = kb.apply_delta(delta)
        assert (report.recalled, report.flagged_missing) == (1, 1)
        assert sorted(skip.line for skip in report.skipped) == [3, 4]
        hits = kb.search("电话 13912345678")
        assert not any("13912345678" in hit.chunk.text + hit.chunk.embedding_input for hit in hits)
        assert kb.stats()["messages"] == 5  # recalled and missing messages are kept, not deleted
        review = kb.store.review_items()
        assert [(item["message_id"], item["text"]) for item in review] == [("a1", "同步一直卡住不动怎么办")]
        assert kb.search("同步卡住", filters=SearchFilters(conversation="g-1"))
        assert kb.check() == []


def test_applying_the_same_delta_twice_changes_nothing(tmp_path, bundle_factory):
    bundle = bundle_factory(base_messages(), members=MEMBERS)
    embedder = CountingEmbedder()
    with KnowledgeBase.open(tmp_path / "kb.db", embedder) as kb:
        kb.ingest(bundle)
        delta = write_delta(bundle, [{"operation": "upsert", "item": message("a2", "u2", 1, "看下网络代理设置")}])
        kb.apply_delta(delta)
        rows = kb.store.db.execute("SELECT id, text FROM chunks ORDER BY id").fetchall()
        calls = embedder.passages
        again = kb.apply_delta(delta)
        assert again.conversations_rebuilt == 0 and embedder.passages == calls
        assert kb.store.db.execute("SELECT id, text FROM chunks ORDER BY id").fetchall() == rows
