from datetime import UTC, datetime, timedelta

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
