"""What every store backend must do alike: ingest, search, re-ingest, constraints, documents,
review flags, integrity, model binding and concurrent writers."""

from __future__ import annotations

import json
import multiprocessing
import shutil
import subprocess
import sys
import threading
from datetime import UTC, datetime, timedelta
from pathlib import Path

import numpy as np
import pytest

from conftest import SAMPLES, message, write_bundle
from contract.backends import ingest_in_process, integrity_errors, is_postgres, rows, write_in_process
from threadkeep.api import KnowledgeBase
from threadkeep.embed import HashEmbedder, get_embedder
from threadkeep.ingest import IngestReport, merging, update_conversation
from threadkeep.model import Chunk, Conversation
from threadkeep.readers import read_path
from threadkeep.store import SearchFilters, StoreError, open_store
from threadkeep.store.rows import input_hash
from threadkeep.text import cjk_bigrams, content_tokens
from threadkeep.threads import ThreadSettings

NOW = datetime(2026, 5, 18, tzinfo=UTC)


class CountingEmbedder(HashEmbedder):
    def __init__(self, dim: int = 64) -> None:
        super().__init__(dim)
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


def chunk_ids(store, source_ref=None):
    if source_ref is None:
        return sorted(row[0] for row in rows(store, "SELECT id FROM chunks"))
    return sorted(row[0] for row in rows(store, "SELECT id FROM chunks WHERE source_ref = ?", (source_ref,)))


def chunk_snapshot(store, source_ref):
    """Everything stored for one source's chunks, comparable across calls on one backend."""
    ids = chunk_ids(store, source_ref)
    vectors = {key: vector.tobytes() for key, vector in store.embeddings_for(source_ref).items()}
    return ids, store.get_chunks(ids), vectors


# --- constraints ----------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "bad",
    [
        dict(evidence_ids=None),
        dict(evidence_ids=()),
        dict(resolution_state=None),
        dict(source_type="document", heading_path=None, resolution_state=None),
        dict(source_type="document", heading_path=("标题",), resolution_state="open"),
    ],
    ids=["chat-no-evidence", "chat-empty-evidence", "chat-no-state", "document-no-heading", "document-with-state"],
)
def test_chunk_shape_constraint_rejects_incomplete_chunks(store_location, bad):
    store = open_store(store_location)
    try:
        with pytest.raises(integrity_errors(store_location), match="chunk_source_shape"):
            store.replace_conversation(Conversation("g-1"), "h", [], [], [chat_chunk(**bad)], {})
        assert store.stats()["chunks"] == 0
        # The failed transaction left nothing behind, not even the conversation row.
        assert store.conversation_record("g-1") is None
        store.replace_conversation(Conversation("g-1"), "h", [], [], [chat_chunk()], {})
        assert store.stats()["chunks"] == 1
    finally:
        store.close()


# --- ingest and re-ingest -------------------------------------------------------------------------


def test_reingesting_the_same_export_changes_nothing(store_location, bundle_factory):
    bundle = bundle_factory(two_conversations())
    embedder = CountingEmbedder()
    with KnowledgeBase.open(store_location, embedder) as kb:
        first = kb.ingest(bundle)
        stats = kb.stats()
        ids = chunk_ids(kb.store)
        calls = embedder.passages
        second = kb.ingest(bundle)
        assert kb.stats() == stats
        assert chunk_ids(kb.store) == ids
        assert kb.store.integrity_problems() == []
    assert first.conversations_rebuilt == 2 and second.conversations_rebuilt == 0
    assert embedder.passages == calls > 0
    assert stats["messages"] == 6 and stats["conversations"] == 2 and stats["embedded_chunks"] == stats["chunks"]


def test_a_grown_export_rebuilds_only_the_changed_conversation(store_location, bundle_factory):
    messages = two_conversations()
    embedder = CountingEmbedder()
    with KnowledgeBase.open(store_location, embedder) as kb:
        kb.ingest(bundle_factory(messages))
        before = chunk_snapshot(kb.store, "g-2")
        calls = embedder.passages
        grown = [*messages, message("a5", "u5", 8, "导出日志在哪里？")]
        report = kb.ingest(bundle_factory(grown))
        assert report.conversations_rebuilt == 1
        assert chunk_snapshot(kb.store, "g-2") == before
        assert embedder.passages == calls + 1  # only the new thread; the old thread keeps its vector
        # An export that no longer holds old messages deletes nothing.
        kb.ingest(bundle_factory([message("a6", "u5", 9, "在设置-关于里")]))
        assert kb.stats()["messages"] == 8
        assert kb.store.integrity_problems() == []


def test_stored_messages_and_conversations_read_back_as_written(store_location, bundle_factory):
    bundle = bundle_factory(
        [
            message("a1", "u1", 0, "E1024 登录失败", mentions=["u2"]),
            message("a2", "u2", 1, "换成 3.1.4 版本", quotedMessageId="a1"),
        ],
        members=[{"senderRef": "u1", "displayName": "小明"}],
        conversations=[{"conversationRef": "g-1", "title": "客户群", "kind": "group"}],
    )
    with KnowledgeBase.open(store_location, HashEmbedder(64)) as kb:
        kb.ingest(bundle)
        stored = kb.store.load_messages("g-1")
        assert [m.id for m in stored] == ["a1", "a2"]
        assert stored[0].sender_name == "小明" and stored[1].reply_to == "a1"
        assert stored[0].sent_at == datetime(2026, 5, 14, 10, 0, tzinfo=UTC) + timedelta(hours=-8)
        assert stored[0].sent_at.utcoffset() == timedelta(hours=8)  # the sender's own offset is kept
        record = kb.store.conversation_record("g-1")
        assert record is not None and record.conversation.title == "客户群"
        (listed,) = kb.store.list_conversations()
        assert listed.ref == "g-1" and listed.messages == 2
        assert listed.first_message_at == "2026-05-14T10:00:00+08:00"
        assert listed.last_message_at == "2026-05-14T10:01:00+08:00"
        assert kb.store.conversation_record("nope") is None and kb.store.load_messages("nope") == []


def test_load_thread_returns_the_whole_thread_of_a_message(store_location, bundle_factory):
    with KnowledgeBase.open(store_location, HashEmbedder(64)) as kb:
        kb.ingest(bundle_factory(two_conversations()))
        thread = [m.id for m in kb.store.load_thread("g-1", "a2")]
        assert thread == ["a1", "a2", "a3", "a4"]
        assert [m.id for m in kb.store.load_thread("g-2", "b1")] == ["b1", "b2"]
        assert kb.store.load_thread("g-2", "a2") == [] and kb.store.load_thread("nope", "a1") == []
        assert kb.store.load_thread("g-1", "a1")[0].text == "我这边点了图标一点反应都没有"


# --- search ---------------------------------------------------------------------------------------


def test_chat_chunks_keep_noise_out_of_the_embedding_input(store_location, bundle_factory):
    with KnowledgeBase.open(store_location, HashEmbedder(64)) as kb:
        kb.ingest(bundle_factory(two_conversations()))
        (hit,) = kb.search("图标没反应", k=1, filters=SearchFilters(conversation="g-1"))
    chunk = hit.chunk
    assert "+1" in chunk.text and "+1" not in chunk.embedding_input
    assert chunk.evidence_ids == ("a1", "a2", "a3", "a4")
    assert chunk.resolution_state == "resolved"


def test_search_filters_by_conversation(store_location, bundle_factory):
    with KnowledgeBase.open(store_location, HashEmbedder(64)) as kb:
        kb.ingest(bundle_factory(two_conversations()))
        hits = kb.search("发票", filters=SearchFilters(conversation="g-1"))
    assert hits and all(hit.chunk.source_ref == "g-1" for hit in hits)


def test_a_newer_fix_outranks_an_older_one_with_the_same_text(store_location, bundle_factory):
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
    with KnowledgeBase.open(store_location, HashEmbedder(64)) as kb:
        kb.ingest(bundle_factory(old + new))
        hits = kb.search("同步卡在99%", k=2, now=datetime(2026, 11, 1, tzinfo=UTC))
    assert [hit.chunk.source_ref for hit in hits] == ["new", "old"]


def many_conversations(count: int = 6) -> list[dict]:
    topics = ["同步卡住不动", "上传速度很慢", "登录失败 E1024", "安装报错 0x80070005", "发票怎么开", "代理设置"]
    messages = []
    for c in range(count):
        day = f"2026-05-{10 + c:02d}"
        ref = f"conv-{c}"
        messages.append(
            {
                "messageId": f"{ref}:1",
                "conversationRef": ref,
                "senderRef": "u1",
                "sentAt": f"{day}T10:00:00+08:00",
                "text": f"{topics[c]}怎么办？",
            }
        )
        messages.append(
            {
                "messageId": f"{ref}:2",
                "conversationRef": ref,
                "senderRef": "u2",
                "sentAt": f"{day}T10:05:00+08:00",
                "text": f"{topics[c]}的话重启客户端试试",
                "quotedMessageId": f"{ref}:1",
            }
        )
    return messages


def test_dense_candidates_score_cosine_similarity_and_apply_every_filter(store_location, bundle_factory, tmp_path):
    embedder = HashEmbedder(64)
    docs = tmp_path / "docs"
    docs.mkdir()
    (docs / "faq.md").write_text("# 常见问题\n\n## 同步卡住\n\n同步卡住不动时重启客户端。\n", encoding="utf-8")
    with KnowledgeBase.open(store_location, embedder) as kb:
        kb.ingest(bundle_factory(many_conversations()))
        kb.ingest(docs)
        store = kb.store
        query = embedder.embed_query("同步卡住不动")
        everything = store.dense_candidates(query, 50, SearchFilters())
        chunks = store.get_chunks(chunk_id for chunk_id, _ in everything)
        assert len(everything) == store.stats()["embedded_chunks"] == 7
        scores = [score for _, score in everything]
        assert scores == sorted(scores, reverse=True)
        for chunk_id, score in everything:
            expected = float(np.dot(embedder.embed_passages([chunks[chunk_id].embedding_input])[0], query))
            assert score == pytest.approx(expected, abs=1e-5)
        top3 = store.dense_candidates(query, 3, SearchFilters())
        assert [i for i, _ in top3] == [i for i, _ in everything[:3]]
        assert [score for _, score in top3] == pytest.approx(scores[:3])

        by_conversation = store.dense_candidates(query, 50, SearchFilters(conversation="conv-2"))
        assert {chunks[i].source_ref for i, _ in by_conversation} == {"conv-2"}
        documents = store.dense_candidates(query, 50, SearchFilters(source_type="document"))
        assert [chunks[i].source_type for i, _ in documents] == ["document"]
        since, until = datetime(2026, 5, 12, tzinfo=UTC), datetime(2026, 5, 13, 12, tzinfo=UTC)
        window = store.dense_candidates(query, 50, SearchFilters(source_type="chat", since=since, until=until))
        assert sorted(chunks[i].source_ref for i, _ in window) == ["conv-2", "conv-3"]
        assert store.dense_candidates(query, 50, SearchFilters(conversation="nowhere")) == []

        lexical = store.lexical_candidates("同步卡住", 50, SearchFilters(source_type="chat", until=until))
        found = store.get_chunks(i for i, _ in lexical)
        assert [found[i].source_ref for i, _ in lexical] == ["conv-0"]
        assert store.lexical_candidates("同步卡住", 50, SearchFilters(source_type="chat", since=since)) == []
        assert store.lexical_candidates("同步卡住", 50, SearchFilters(source_type="document"))


def test_full_text_finds_chinese_words_codes_and_bigrams(store_location, bundle_factory):
    messages = [
        message("a1", "u1", 0, "手机一锁屏就停止同步了"),
        message("a2", "u2", 1, "把电池优化关掉", quotedMessageId="a1"),
        message("b1", "u3", 0, "安装时报错 0x80070005 怎么办", conversation="g-2"),
        message("b2", "u2", 1, "用管理员身份运行安装包", conversation="g-2", quotedMessageId="b1"),
        message("c1", "u4", 0, "登录提示 E1024", conversation="g-3"),
        message("c2", "u2", 1, "E1024 是密码过期，重置一下", conversation="g-3", quotedMessageId="c1"),
    ]
    with KnowledgeBase.open(store_location, HashEmbedder(64)) as kb:
        kb.ingest(bundle_factory(messages))
        store = kb.store

        def top(query: str) -> str:
            found = store.lexical_candidates(query, 5, SearchFilters())
            assert found, query
            scores = [score for _, score in found]
            assert scores == sorted(scores, reverse=True)  # higher is better, as for SQLite's negated bm25
            return store.get_chunks([found[0][0]])[found[0][0]].source_ref

        assert top("0x80070005") == "g-2"
        assert top("e1024") == "g-3"
        assert top("电池优化") == "g-1"
        # jieba cuts 「锁屏之后」 and 「一锁屏就停」 differently: no word in common, the bigram 锁屏 still matches.
        query, text = "锁屏之后", "手机一锁屏就停止同步了"
        assert not set(content_tokens(query)) & set(content_tokens(text))
        assert set(cjk_bigrams(query)) & set(cjk_bigrams(text)) == {"锁屏"}
        assert top(query) == "g-1"
        assert store.lexical_candidates("的 了 吗", 5, SearchFilters()) == []  # stop words only
        assert store.lexical_candidates('"-) OR (', 5, SearchFilters()) == []  # query syntax is not parsed
        assert store.lexical_candidates("发票", 5, SearchFilters(conversation="g-1")) == []


def test_full_text_reads_the_lexical_input_beyond_what_is_embedded(store_location):
    store = open_store(store_location)
    try:
        store.bind_embedder("hash-4", 4)
        long_one = chat_chunk(
            embedding_input="user: sync fails …", lexical_input="user: sync fails\nassistant: reinstall zeroconf"
        )
        short_one = chat_chunk(id="c2", embedding_input="user: zeroconf docs?", evidence_ids=("m2",))
        vectors = {input_hash(c.embedding_input): np.ones(4, dtype=np.float32) for c in (long_one, short_one)}
        store.replace_conversation(Conversation("g-1"), "h", [], [], [long_one, short_one], vectors)
        found = [chunk_id for chunk_id, _ in store.lexical_candidates("reinstall", 5, SearchFilters())]
        assert found == ["c1"]
        assert sorted(chunk_id for chunk_id, _ in store.lexical_candidates("zeroconf", 5, SearchFilters())) == [
            "c1",
            "c2",
        ]
    finally:
        store.close()


def test_tool_output_is_found_by_full_text_but_never_shown(store_location, tmp_path):
    session = tmp_path / "session.jsonl"
    shutil.copy(Path(__file__).resolve().parents[1] / "fixtures" / "claude_code" / "queued.jsonl", session)
    with KnowledgeBase.open(store_location, HashEmbedder(64)) as kb:
        kb.ingest(session)
        found = kb.store.lexical_candidates("Razer Kiyo Pro", 5, SearchFilters())
        assert found, "lsusb's output is searchable"
        chunk = kb.store.get_chunks([found[0][0]])[found[0][0]]
        assert "Which webcam is plugged in?" in chunk.text and "Razer" not in chunk.text
        assert kb.store.integrity_problems() == []


def test_a_word_match_outranks_a_bigram_only_match(store_location, bundle_factory):
    messages = [
        message("b1", "u1", 0, "查账单据", conversation="g-2"),  # 账单 only as a bigram (查账 / 单据)
        message("a1", "u1", 0, "账单页在哪里可以找到"),  # the word 账单
        message("c1", "u1", 0, "对账单独处理", conversation="g-3"),  # 账单 only as a bigram (对账 / 单独)
    ]
    assert "账单" not in content_tokens("查账单据") + content_tokens("对账单独处理")
    with KnowledgeBase.open(store_location, HashEmbedder(64)) as kb:
        kb.ingest(bundle_factory(messages))
        found = kb.store.lexical_candidates("账单", 5, SearchFilters())
        chunks = kb.store.get_chunks(i for i, _ in found)
    assert chunks[found[0][0]].source_ref == "g-1"
    assert sorted(chunks[i].source_ref for i, _ in found) == ["g-1", "g-2", "g-3"]


# --- documents ------------------------------------------------------------------------------------


def test_documents_ingest_replace_and_remove(store_location, tmp_path):
    docs = tmp_path / "docs"
    shutil.copytree(SAMPLES / "docs", docs)
    embedder = CountingEmbedder()
    with KnowledgeBase.open(store_location, embedder) as kb:
        report = kb.ingest(docs)
        listed = kb.store.list_documents()
        assert report.documents == len(listed) == 3 and report.documents_rebuilt == 3
        assert [item.id for item in listed] == sorted(item.id for item in listed)
        stats = kb.stats()
        assert stats["documents"] == 3 and stats["document_chunks"] == stats["chunks"] > 3
        assert kb.store.integrity_problems() == []
        faq = next(item for item in listed if "FAQ" in item.id)
        others = {item.id: chunk_snapshot(kb.store, item.id) for item in listed if item is not faq}
        faq_before = chunk_ids(kb.store, faq.id)

        assert kb.ingest(docs).documents_rebuilt == 0
        path = docs / "常见问题FAQ.md"
        path.write_text(path.read_text(encoding="utf-8").replace("结束任务", "结束进程"), encoding="utf-8")
        calls = embedder.passages
        assert kb.ingest(docs).documents_rebuilt == 1
        faq_after = chunk_ids(kb.store, faq.id)
        assert len(faq_after) == len(faq_before) and len(set(faq_after) - set(faq_before)) == 1
        assert embedder.passages == calls + 1  # only the edited section is embedded again
        assert {doc: chunk_snapshot(kb.store, doc) for doc in others} == others

        section = kb.search("点击托盘图标没有反应怎么处理", k=3, filters=SearchFilters(source_type="document"), now=NOW)
        assert section and all(hit.chunk.heading_path for hit in section)

        assert kb.store.remove_document(faq.id) is True
        assert kb.store.remove_document(faq.id) is False
        assert chunk_ids(kb.store, faq.id) == [] and kb.store.document_hash(faq.id) is None
        assert len(kb.store.list_documents()) == 2
        assert kb.stats()["document_chunks"] == stats["document_chunks"] - len(faq_before)
        assert kb.store.integrity_problems() == []


# --- review flags and integrity -------------------------------------------------------------------


def test_review_flags_are_kept_once_and_joined_with_their_message(store_location, bundle_factory):
    with KnowledgeBase.open(store_location, HashEmbedder(64)) as kb:
        kb.ingest(bundle_factory(two_conversations(), members=[{"senderRef": "u4", "displayName": "老王"}]))
        flagged_at = datetime(2026, 5, 15, 9, tzinfo=UTC)
        for _ in range(2):
            kb.store.flag_for_review("g-2", "b1", "missing from the latest export", flagged_at)
        kb.store.flag_for_review("g-1", "gone", "missing from the latest export", flagged_at + timedelta(hours=1))
        items = kb.store.review_items()
        assert kb.stats()["messages"] == 6  # flagging deletes nothing
    assert [(item.conversation, item.message_id) for item in items] == [("g-2", "b1"), ("g-1", "gone")]
    first = items[0]
    assert first.reason == "missing from the latest export" and first.flagged_at == flagged_at.isoformat()
    assert first.sender_name == "老王" and first.sender == "u4" and first.text == "发票怎么开？"
    assert items[1].text is None and items[1].sender is None


def test_integrity_problems_name_chunks_citing_missing_messages(store_location):
    store = open_store(store_location)
    try:
        store.bind_embedder("hash-4", 4)
        vector = np.array([1, 0, 0, 0], dtype=np.float32)
        chunk = chat_chunk(evidence_ids=("m1", "m2"))
        store.replace_conversation(Conversation("g-1"), "h", [], [], [chunk], {})
        problems = store.integrity_problems()
        assert any("chunk c1 cites messages not in the store: m1, m2" in p for p in problems)
        # A vector not made yet is pending work (`threadkeep embed`), not damage.
        assert not any("vector" in p for p in problems) and store.vector_coverage() == (0, 1)

        store.replace_conversation(Conversation("g-1"), "h", [], [], [chunk], {input_hash("x"): vector})
        assert store.vector_coverage() == (1, 1)
        assert store.embeddings_for("g-1")[input_hash("x")].tolist() == vector.tolist()
    finally:
        store.close()


def test_check_finds_a_deleted_message_that_a_thread_still_lists(store_location, bundle_factory, tmp_path):
    messages = [*two_conversations(), message("a5", "u5", 7, "我的手机号 13912345678", quotedMessageId="a1")]
    bundle = bundle_factory(messages)
    (bundle / "delta.jsonl").write_text(
        json.dumps({"operation": "recalled", "messageId": "a5", "item": {"conversationRef": "g-1"}}) + "\n"
    )
    with KnowledgeBase.open(store_location, HashEmbedder(64)) as kb:
        kb.ingest(bundle)
        kb.apply_delta(bundle)
        assert kb.check() == []
        (thread,) = [row[0] for row in rows(kb.store, "SELECT thread_id FROM messages WHERE id = 'a5'")]
        cited = {mid for chunk in kb.store.get_chunks(chunk_ids(kb.store)).values() for mid in chunk.evidence_ids}
        assert "a5" not in cited  # a recalled message is cited by no chunk: only its thread still lists it
        kb.store.db.execute("DELETE FROM messages WHERE id = 'a5'")
        assert kb.check() == [f"thread {thread} lists messages not in the store: a5"]


def test_the_store_refuses_a_different_embedding_model(store_location, bundle_factory):
    bundle = bundle_factory(two_conversations())
    with KnowledgeBase.open(store_location, HashEmbedder(64)) as kb:
        kb.ingest(bundle)
    with KnowledgeBase.open(store_location, HashEmbedder(32)) as kb, pytest.raises(StoreError, match="hash-64"):
        kb.ingest(bundle)
    with KnowledgeBase.open(store_location, HashEmbedder(64)) as kb:
        assert kb.stats()["embedder"] == "hash-64"
        assert kb.ingest(bundle).conversations_rebuilt == 0


# --- concurrency ----------------------------------------------------------------------------------


def conversation_messages(ref: str, count: int = 150) -> list[dict]:
    messages = []
    for i in range(count):
        item = message(
            f"{ref}:{i}", f"u{i % 4}", i * 2, f"{ref} 的第{i}个问题 同步卡住 E{1000 + i}？", conversation=ref
        )
        if i % 3:
            item["quotedMessageId"] = f"{ref}:{i - i % 3}"
        messages.append(item)
    return messages


def conversation_bundle(folder, ref: str, count: int = 150):
    return write_bundle(folder, conversation_messages(ref, count))


def test_two_processes_ingesting_different_conversations_both_succeed(store_location, tmp_path):
    bundles = [str(conversation_bundle(tmp_path / ref, ref)) for ref in ("left", "right")]
    open_store(store_location).close()  # schema in place before the race, as after any first run
    context = multiprocessing.get_context("spawn")
    barrier, results = context.Barrier(2), context.Queue()
    workers = [
        context.Process(target=ingest_in_process, args=(store_location, bundle, barrier, results)) for bundle in bundles
    ]
    for worker in workers:
        worker.start()
    for worker in workers:
        worker.join(timeout=120)
    assert [worker.exitcode for worker in workers] == [0, 0]
    reports = sorted(results.get(timeout=5) for _ in workers)
    assert [report[1] for report in reports] == [1, 1]
    store = open_store(store_location)
    try:
        refs = [item.ref for item in store.list_conversations()]
        assert refs == ["left", "right"]
        assert store.stats()["messages"] == 300
        assert store.integrity_problems() == []
    finally:
        store.close()


def run_writers(location: str, jobs: list[tuple[str, str]]) -> list[tuple[str, int, int]]:
    """Run each (operation, path) in its own process, all released at once; (operation, rebuilt, redone), sorted."""
    context = multiprocessing.get_context("spawn")
    barrier, results = context.Barrier(len(jobs)), context.Queue()
    workers = [
        context.Process(target=write_in_process, args=(location, operation, path, barrier, results))
        for operation, path in jobs
    ]
    for worker in workers:
        worker.start()
    for worker in workers:
        worker.join(timeout=120)
    assert [worker.exitcode for worker in workers] == [0] * len(jobs)
    return sorted(results.get(timeout=5) for _ in workers)


def grown_and_delta(tmp_path, base: int = 300) -> tuple[list[dict], Path, Path]:
    """A stored conversation of `base` messages in `tmp_path / "old"`, the next export of it with 50 newer
    messages, and a delta adding 50 more: (every message of both, the grown export, the delta)."""
    everything = conversation_messages("g", base + 50)
    write_bundle(tmp_path / "old", everything[:base])
    grown = write_bundle(tmp_path / "grown", everything)
    extra = [
        message(f"late:{i}", f"u{i % 3}", base * 2 + 150 + i, f"补充第{i}条 重启后好了", conversation="g")
        for i in range(50)
    ]
    delta = tmp_path / "delta" / "delta.jsonl"
    delta.parent.mkdir()
    delta.write_text("".join(json.dumps({"operation": "upsert", "item": item}) + "\n" for item in extra))
    return everything + extra, grown, delta


def assert_all_stored(location: str, items: list[dict]) -> None:
    store = open_store(location)
    try:
        stored = {m.id for m in store.load_messages("g")}
        expected = {item["messageId"] for item in items}
        assert len(expected - stored) == 0, f"{len(expected - stored)} messages lost"
        assert stored == expected and store.integrity_problems() == []
    finally:
        store.close()


def test_a_writer_builds_on_a_commit_made_after_it_read(store_location, tmp_path):
    """The race made certain: another writer commits between this writer's read and its write, so the
    write must be redone on what that writer stored, or the other writer's messages are lost."""
    items, grown, delta = grown_and_delta(tmp_path)
    with KnowledgeBase.open(store_location, HashEmbedder(64)) as kb:
        kb.ingest(tmp_path / "old")
        export = read_path(grown)
        merge = merging(export.conversations[0], export.messages)
        other_rebuilt: list[int] = []

        def revise_after_the_other_writer(record, stored):
            if not other_rebuilt:  # the first attempt read before the other writer's commit
                with KnowledgeBase.open(store_location, HashEmbedder(64)) as other:
                    other_rebuilt.append(other.apply_delta(delta).conversations_rebuilt)
            return merge(record, stored)

        report = IngestReport(format=export.format)
        revise = revise_after_the_other_writer
        written = update_conversation(kb.store, "g", revise, kb.embedder, ThreadSettings(), report)
    assert written and other_rebuilt == [1] and report.redone == 1
    assert_all_stored(store_location, items)


def test_an_ingest_and_a_delta_on_the_same_conversation_at_once_lose_nothing(store_location, tmp_path):
    """Two processes released at once on one conversation; however they interleave, nothing is lost."""
    items, grown, delta = grown_and_delta(tmp_path)
    with KnowledgeBase.open(store_location, HashEmbedder(64)) as kb:
        kb.ingest(tmp_path / "old")
        assert kb.stats()["messages"] == 300

    reports = run_writers(store_location, [("ingest", str(grown)), ("delta", str(delta))])

    assert [(operation, rebuilt) for operation, rebuilt, _ in reports] == [("delta", 1), ("ingest", 1)]
    assert_all_stored(store_location, items)


def test_searches_answer_while_another_process_rewrites_the_conversation(store_location, tmp_path):
    everything = conversation_messages("g", 400)
    write_bundle(tmp_path / "old", everything[:200])
    grown = write_bundle(tmp_path / "grown", everything)
    with KnowledgeBase.open(store_location, HashEmbedder(64)) as kb:
        kb.ingest(tmp_path / "old")
        context = multiprocessing.get_context("spawn")
        barrier, results = context.Barrier(2), context.Queue()
        writer = context.Process(target=write_in_process, args=(store_location, "ingest", str(grown), barrier, results))
        writer.start()
        barrier.wait(timeout=60)
        answered = []
        while writer.is_alive():
            hits = kb.search("同步卡住 E1100", k=3)
            assert hits and all(hit.chunk.source_ref == "g" for hit in hits)
            answered.append(len(kb.store.load_messages("g")) in (200, 400))  # before or after, never between
        writer.join(timeout=120)
        assert writer.exitcode == 0 and results.get(timeout=5)[1] == 1
        assert answered and all(answered)
        assert kb.stats()["messages"] == 400 and kb.store.integrity_problems() == []


def test_opening_a_new_store_from_several_threads_at_once(store_location):
    errors: list[BaseException] = []

    def open_and_bind() -> None:
        try:
            store = open_store(store_location)
            store.bind_embedder("hash-8", 8)
            store.close()
        except BaseException as error:  # collected and re-raised by the test thread
            errors.append(error)

    threads = [threading.Thread(target=open_and_bind) for _ in range(4)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert errors == []
    store = open_store(store_location)
    assert store.stats()["embedder"] == "hash-8"
    store.close()


# --- the real model on the sample corpus -----------------------------------------------------------


class CachedEmbedder:
    """The default model, with passages remembered so the second backend does not pay again."""

    def __init__(self) -> None:
        self.model = get_embedder()
        self.name, self.dim, self.max_tokens = self.model.name, self.model.dim, self.model.max_tokens
        self.cache: dict[str, np.ndarray] = {}

    def embed_passages(self, texts):
        todo = [text for text in dict.fromkeys(texts) if text not in self.cache]
        if todo:
            self.cache.update(zip(todo, self.model.embed_passages(todo), strict=True))
        return np.vstack([self.cache[text] for text in texts]) if texts else self.model.embed_passages([])

    def embed_query(self, text):
        return self.model.embed_query(text)

    def count_tokens(self, text):
        return self.model.count_tokens(text)


@pytest.fixture(scope="module")
def default_embedder():
    return CachedEmbedder()


def test_the_sample_corpus_with_the_default_model(store_location, default_embedder, tmp_path):
    docs = tmp_path / "docs"
    shutil.copytree(SAMPLES / "docs", docs)
    with KnowledgeBase.open(store_location, default_embedder) as kb:
        kb.ingest(SAMPLES / "support_group")
        kb.ingest(docs)
        assert kb.store.integrity_problems() == []
        stats = kb.stats()
        assert stats["embedder"] == default_embedder.name and stats["documents"] == 3

        hits = kb.search("我这边点了图标一点反应都没有", k=3, now=NOW)
        icon_threads = {"yunshu-support-1:6", "yunshu-support-1:212"}
        assert any(
            hit.chunk.source_type == "chat"
            and hit.chunk.resolution_state == "resolved"
            and icon_threads & set(hit.chunk.evidence_ids)
            for hit in hits
        ), [hit.chunk.text[:80] for hit in hits]
        assert all(hit.dense_score is None or -1.0 <= hit.dense_score <= 1.0 for hit in hits)

        hits = kb.search("点击托盘图标没有反应怎么处理", k=3, now=NOW)
        documents = [hit.chunk for hit in hits if hit.chunk.source_type == "document"]
        assert documents and documents[0].heading_path[-1] == "点击托盘图标没有反应"

        before = kb.stats()
        report = kb.ingest(SAMPLES / "support_group")
        assert report.conversations_rebuilt == 0 and report.embedded == 0 and kb.stats() == before


# --- PostgreSQL only: what SQLite cannot do or cannot fail at --------------------------------------


class Abandoned(Exception):
    pass


@pytest.fixture
def postgres_location(make_location):
    return make_location("postgres")


def test_postgres_writers_on_different_conversations_do_not_wait_and_readers_see_commits_only(
    postgres_location, bundle_factory
):
    writer, other = open_store(postgres_location), open_store(postgres_location)
    try:
        with KnowledgeBase(writer, HashEmbedder(64)) as kb:
            kb.ingest(bundle_factory(two_conversations()))
            g1 = chunk_ids(writer, "g-1")
            with pytest.raises(Abandoned), writer._transaction("chat:g-1") as cursor:  # a rebuild of g-1, midway
                cursor.execute("DELETE FROM chunks WHERE source_ref = 'g-1'")
                assert chunk_ids(writer, "g-1") == []
                # Uncommitted: another connection still sees g-1 whole ...
                assert chunk_ids(other, "g-1") == g1
                # ... and rebuilds g-2 without waiting for g-1's transaction.
                other.db.execute("SET lock_timeout = '2s'")
                other.replace_conversation(
                    Conversation("g-2"), "h2", [], [], [chat_chunk(id="x", source_ref="g-2")], {}
                )
                assert chunk_ids(other, "g-2") == ["x"]
                raise Abandoned  # the rebuild of g-1 fails midway: nothing of it stays
            assert chunk_ids(other, "g-1") == chunk_ids(writer, "g-1") == g1
    finally:
        other.close()


def test_postgres_unreachable_server_is_a_clear_store_error():
    with pytest.raises(StoreError, match=r"cannot connect to PostgreSQL at postgresql://postgres@127\.0\.0\.1:1/x"):
        open_store("postgresql://postgres:secret@127.0.0.1:1/x?connect_timeout=2")


def test_postgres_missing_database_and_wrong_query_dimensions_are_store_errors(postgres_location, bundle_factory):
    missing = postgres_location.replace("/threadkeep_test_", "/threadkeep_absent_", 1)
    with pytest.raises(StoreError, match=r"does not exist.*createdb threadkeep_absent_"):
        open_store(missing)
    with KnowledgeBase.open(postgres_location, HashEmbedder(64)) as kb:
        kb.ingest(bundle_factory(two_conversations()))
        with pytest.raises(StoreError, match="query vector has 32 dimensions"):
            kb.store.dense_candidates(HashEmbedder(32).embed_query("发票"), 5, SearchFilters())
        assert kb.store.dense_candidates(HashEmbedder(64).embed_query("发票"), 5, SearchFilters())


def test_postgres_without_pgvector_says_how_to_install_it(postgres_location):
    import psycopg

    # A schema whose own pg_available_extensions (searched before pg_catalog) lists nothing.
    schema = postgres_location.rpartition("search_path%3D")[2].split("%2C")[0]
    with psycopg.connect(postgres_location, autocommit=True) as conn:
        conn.execute(
            f"CREATE VIEW {schema}.pg_available_extensions AS "
            "SELECT * FROM pg_catalog.pg_available_extensions WHERE false"
        )
    hidden = postgres_location.replace("%2Cpublic", "%2Cpg_catalog%2Cpublic")
    with pytest.raises(StoreError, match=r"does not have pgvector.*scripts/install-pgvector\.sh"):
        open_store(hidden)


def test_postgres_refuses_a_schema_from_a_newer_version(postgres_location):
    open_store(postgres_location).close()
    store = open_store(postgres_location)
    store.db.execute("INSERT INTO schema_migrations (version) VALUES (99)")
    store.close()
    with pytest.raises(StoreError, match="newer threadkeep"):
        open_store(postgres_location)


def test_the_sqlite_path_never_imports_psycopg(tmp_path):
    code = (
        "import sys; from threadkeep.store import open_store; "
        f"open_store({str(tmp_path / 'kb.db')!r}).close(); "
        "assert not any(name.startswith('psycopg') for name in sys.modules), 'psycopg imported'"
    )
    subprocess.run([sys.executable, "-c", code], check=True)


def test_the_postgres_backend_is_chosen_by_url(postgres_location):
    from threadkeep.store.postgres import PostgresStore

    store = open_store(postgres_location.replace("postgresql://", "postgres://", 1))
    try:
        assert isinstance(store, PostgresStore)
        assert store.stats()["location"].startswith("postgresql://postgres@")
    finally:
        store.close()
    assert is_postgres(postgres_location)
