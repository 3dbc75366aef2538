from datetime import UTC, datetime, timedelta

from conftest import message
from threadkeep.api import KnowledgeBase
from threadkeep.chunks.exchange import chunk_exchange
from threadkeep.embed import E5Embedder
from threadkeep.model import Message
from threadkeep.threads.exchanges import split_exchanges

START = datetime(2026, 5, 1, tzinfo=UTC)


def turn(index, role, text):
    return Message(f"a:{index}", "a", role, START + timedelta(seconds=index), text, role=role)


def test_a_long_exchange_embeds_its_question_and_reply_start_and_indexes_all_of_it():
    model = E5Embedder()
    paragraphs = [
        f"第{i}步：打开设置页面，找到同步选项，然后检查代理配置是否正确。Step {i}: check the proxy." for i in range(60)
    ]
    messages = [
        turn(0, "user", "怎么排查同步失败？"),
        turn(1, "assistant", "\n\n".join(paragraphs)),
        turn(2, "user", "代理在哪里设置"),
        turn(3, "assistant", "设置-网络-代理"),
    ]
    threads = split_exchanges(messages)
    assert [t.message_ids for t in threads] == [("a:0", "a:1"), ("a:2", "a:3")]
    by_id = {m.id: m for m in messages}
    [chunk] = chunk_exchange(threads[0], by_id, model.count_tokens, 192)
    assert model.count_tokens(chunk.embedding_input) <= 192
    assert chunk.embedding_input.startswith("user: 怎么排查同步失败？\nassistant: 第0步")
    assert chunk.embedding_input.endswith("…")
    assert chunk.evidence_ids == ("a:0", "a:1")
    assert all(f"第{i}步" in chunk.indexed_text for i in range(60))
    assert all(f"第{i}步" in chunk.text for i in range(60))
    [short] = chunk_exchange(threads[1], by_id, model.count_tokens, 192)
    assert short.embedding_input == "user: 代理在哪里设置\nassistant: 设置-网络-代理"
    assert short.indexed_text == short.embedding_input


def test_a_long_question_leaves_room_for_the_reply():
    model = E5Embedder()
    pasted = " ".join(f"line {i} of the pasted crash log: NullPointerException in SyncWorker" for i in range(80))
    messages = [turn(0, "user", "why does this crash?\n" + pasted), turn(1, "assistant", "The worker has no account.")]
    [thread] = split_exchanges(messages)
    [chunk] = chunk_exchange(thread, {m.id: m for m in messages}, model.count_tokens, 192)
    assert model.count_tokens(chunk.embedding_input) <= 192
    assert chunk.embedding_input.endswith("assistant: The worker has no account.")
    assert "line 79 of" in chunk.indexed_text


def test_an_assistant_bundle_is_split_into_exchanges_by_who_spoke_first(bundle_factory, hash_embedder):
    talk = [
        message("s1:1", "me", 0, "how do I rotate the logs?", conversation="s1"),
        message("s1:2", "helper", 1, "Use logrotate with a weekly rule.", conversation="s1"),
        message("s1:3", "me", 2, "and keep four of them?", conversation="s1"),
        message("s1:4", "helper", 3, "Add `rotate 4` to the rule.", conversation="s1"),
        message("s2:1", "assistant", 0, "Hello! How can I help?", conversation="s2"),
        message("s2:2", "me", 1, "what is a cron expression for every monday?", conversation="s2"),
        message("s2:3", "assistant", 2, "0 0 * * 1", conversation="s2"),
    ]
    bundle = bundle_factory(talk, conversations=[{"conversationRef": ref, "kind": "assistant"} for ref in ("s1", "s2")])
    with KnowledgeBase.open(bundle.parent / "kb.db", hash_embedder) as kb:
        kb.ingest(bundle)
        evidence = sorted(hit.chunk.evidence_ids for hit in kb.search("rotate logs cron monday", k=10))
        assert kb.ingest(bundle).conversations_rebuilt == 0
    assert evidence == [("s1:1", "s1:2"), ("s1:3", "s1:4"), ("s2:1",), ("s2:2", "s2:3")]


def test_tool_text_is_indexed_but_neither_embedded_nor_shown():
    tool_text = "[tool: Bash — lsusb]\nBus 002 Device 003: ID 1532:0e05 Razer Kiyo Pro"
    reply = Message(
        "a:1",
        "a",
        "assistant",
        START,
        "It is the USB camera on bus 2.",
        role="assistant",
        metadata={"tool_text": tool_text},
    )
    messages = {"a:0": turn(0, "user", "Which webcam is plugged in?"), "a:1": reply}
    threads = split_exchanges(list(messages.values()))
    [short] = chunk_exchange(threads[0], messages, len, 192)
    [long] = chunk_exchange(threads[0], messages, len, 72)
    assert long.lexical_input.startswith(short.embedding_input)
    for chunk in (short, long):
        assert "Razer Kiyo Pro" in chunk.indexed_text
        assert "Razer" not in chunk.text and "Razer" not in chunk.embedding_input
