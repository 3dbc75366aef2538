import itertools
from datetime import UTC, datetime, timedelta

from threadkeep.chunks.exchange import chunk_exchange
from threadkeep.embed import E5Embedder
from threadkeep.model import Message
from threadkeep.threads.exchanges import split_exchanges

START = datetime(2026, 5, 1, tzinfo=UTC)


def turn(index, role, text):
    return Message(f"a:{index}", "a", role, START + timedelta(seconds=index), text, role=role)


def test_a_long_reply_is_split_into_overlapping_windows_the_model_can_read():
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
    chunks = chunk_exchange(threads[0], by_id, model.count_tokens, 480)
    assert len(chunks) > 2
    assert all(model.count_tokens(chunk.embedding_input) <= 480 for chunk in chunks)
    assert all(chunk.embedding_input.startswith("user: 怎么排查同步失败？") for chunk in chunks)
    assert all(chunk.evidence_ids == ("a:0", "a:1") for chunk in chunks)
    assert len({chunk.id for chunk in chunks}) == len(chunks)
    for earlier, later in itertools.pairwise(chunks):
        tail = earlier.embedding_input.splitlines()[-1][-20:]
        assert tail in later.embedding_input  # windows overlap
    every_step = "".join(chunk.embedding_input for chunk in chunks)
    assert all(f"第{i}步" in every_step for i in range(60))
    short = chunk_exchange(threads[1], by_id, model.count_tokens, 480)
    assert short[0].embedding_input == "user: 代理在哪里设置\nassistant: 设置-网络-代理"
