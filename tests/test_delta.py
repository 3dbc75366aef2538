import json

from click.testing import CliRunner

from conftest import learned_idle_minutes, message
from test_store_and_ingest import CountingEmbedder
from threadkeep.api import KnowledgeBase
from threadkeep.cli import main
from threadkeep.model import Skip
from threadkeep.store import SearchFilters

MEMBERS = [{"senderRef": "u1", "displayName": "小明"}, {"senderRef": "u3", "displayName": "老王"}]


# Past the packaged reply model's idle gap: the two lines are two threads until a message between joins them.
LATE = learned_idle_minutes() + 1


def base_messages():
    return [
        message("a1", "u1", 0, "同步一直卡住不动怎么办"),
        message("b1", "u1", LATE, "重启客户端就行"),
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

        mention = message("m1", "u3", LATE - 22, "@小明 你这个问题我也遇到过", mentionedRefs=["u1"])
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
            ],
        )
        report = kb.apply_delta(delta)
        assert (report.recalled, report.flagged_missing) == (1, 1)
        assert [skip.line for skip in report.skipped] == [3] and "nothing to withdraw" in report.skipped[0].reason
        assert report.rejected == []
        hits = kb.search("电话 13912345678")
        assert not any("13912345678" in hit.chunk.text + hit.chunk.embedding_input for hit in hits)
        assert kb.stats()["messages"] == 5  # recalled and missing messages are kept, not deleted
        review = kb.store.review_items()
        assert [(item.message_id, item.text) for item in review] == [("a1", "同步一直卡住不动怎么办")]
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


def conversation_rows(kb, ref):
    messages = kb.store.db.execute("SELECT * FROM messages WHERE conversation = ? ORDER BY id", (ref,)).fetchall()
    chunks = kb.store.db.execute("SELECT * FROM chunks WHERE source_ref = ? ORDER BY id", (ref,)).fetchall()
    return messages, chunks


def test_a_malformed_line_leaves_its_conversation_untouched_names_the_field_and_fails(tmp_path, bundle_factory):
    bundle = bundle_factory(base_messages(), members=MEMBERS)
    db = tmp_path / "kb.db"
    with KnowledgeBase.open(db, CountingEmbedder()) as kb:
        kb.ingest(bundle)
        g2_before = conversation_rows(kb, "g-2")
    no_offset = {**message("x4", "u4", 3, "开好了", conversation="g-2"), "sentAt": "2026-05-14T10:03:00"}
    delta = write_delta(
        bundle,
        [
            {"operation": "upsert", "item": message("a2", "u2", 1, "看下网络代理设置")},
            {"operation": "upsert", "item": message("x5", "u2", 4, "发票已寄出", conversation="g-2")},
            {"operation": "upsert", "item": no_offset},
            {"operation": "recalled", "messageId": "x3", "item": {"conversationRef": "g-2"}},
            {"operation": "missing", "messageId": "x2", "item": {"conversationRef": "g-2"}},
            {"operation": "upsert", "item": {**message("x6", "u2", 5, conversation="g-2"), "mentionedRefs": "u1"}},
            {"operation": "recall", "messageId": "x1", "item": {"conversationRef": "g-2"}},
        ],
    )
    command = ["apply-delta", str(delta), "--db", str(db)]
    env = {"THREADKEEP_EMBEDDER": "hash-64"}
    result = CliRunner().invoke(main, [*command, "--json"], env=env)
    assert result.exit_code == 1, result.output
    rejected = json.loads(result.stdout)["rejected"]["first"]
    assert [str(Skip(item["file"], item["line"], item["reason"])) for item in rejected] == [
        f"{delta}:3: item.sentAt: time '2026-05-14T10:03:00' has no UTC offset",
        f"{delta}:6: item.mentionedRefs must be a list of strings",
        f"{delta}:7: operation must be one of upsert, recalled, missing, got 'recall'",
    ]
    assert "3 delta lines could not be applied; left unchanged: g-2" in " ".join(result.stderr.split())
    printed = CliRunner().invoke(main, command, env=env)
    assert printed.exit_code == 1 and "item.mentionedRefs" in printed.stderr
    with KnowledgeBase.open(db, CountingEmbedder()) as kb:
        assert conversation_rows(kb, "g-2") == g2_before  # nothing of g-2's lines: no upsert, recall or flag
        assert kb.store.review_items() == []
        assert [m.id for m in kb.store.load_messages("g-1")] == ["a1", "a2", "b1"]  # g-1 had no bad line
        report = kb.apply_delta(delta)  # applying it again changes nothing more, and fails the same way
        assert report.refused == ["g-2"] and len(report.rejected) == 3 and report.conversations_rebuilt == 0
        assert kb.check() == []


def test_a_line_naming_no_conversation_stops_the_whole_delta(tmp_path, bundle_factory):
    bundle = bundle_factory(base_messages(), members=MEMBERS)
    with KnowledgeBase.open(tmp_path / "kb.db", CountingEmbedder()) as kb:
        kb.ingest(bundle)
        before = kb.stats()
        delta = write_delta(bundle, [{"operation": "upsert", "item": message("a2", "u2", 1, "看下网络代理设置")}])
        with delta.open("a", encoding="utf-8") as handle:
            handle.write('{"operation": "upsert", "item": \n["not", "an", "object"]\n')
        report = kb.apply_delta(delta)
        assert report.refused_all and report.conversations_rebuilt == 0 and kb.stats() == before
        assert [(skip.line, skip.reason.split(" (")[0]) for skip in report.rejected] == [
            (2, "not valid JSON"),
            (3, "line must be a JSON object, got list"),
        ]
        first = report.to_dict()["rejected"]["first"][0]
        assert (first["file"], first["line"]) == (str(delta), 2) and first["reason"].startswith("not valid JSON")
