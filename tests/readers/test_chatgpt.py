from __future__ import annotations

from pathlib import Path

from threadkeep.readers import chatgpt, detect_format, read_path

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures" / "chatgpt"
EXPORT = FIXTURES / "export"
MONADS = "6650a1b2-0000-4000-8000-00000000000a"
BREAD = "6650a1b2-0000-4000-8000-00000000000b"
MIRROR = "6650a1b2-0000-4000-8000-00000000000c"


def conversation(ref: str) -> list:
    return [m for m in read_path(EXPORT).messages if m.conversation == ref]


def test_detects_export_but_not_claude() -> None:
    assert chatgpt.detect(EXPORT)
    assert chatgpt.detect(FIXTURES / "single_bom.json")
    assert not chatgpt.detect(EXPORT / "user.json")
    assert not chatgpt.detect(FIXTURES.parent / "claude_ai" / "export")
    assert detect_format(EXPORT).NAME == "chatgpt"


def test_reads_the_kept_branch_not_the_first_child() -> None:
    messages = conversation(MONADS)
    assert [m.id for m in messages] == ["u1", "a2", "u2", "a3"]
    assert "burrito" not in " ".join(m.text for m in messages)
    assert messages[1].text == "A monad wraps a value with a way to chain computations that carry context."
    assert messages[1].metadata["model"] == "gpt-4o"
    assert messages[1].reply_to == "u1"


def test_code_tool_call_and_output_become_one_reply() -> None:
    reply = conversation(MONADS)[3]
    assert reply.text == (
        "[tool: python — print(sum(range(10)))]\nIt prints 45: `sum` over the range is the chained computation."
    )
    assert reply.metadata["merged_records"] == 2


def test_null_time_is_borrowed_from_the_previous_message() -> None:
    question = conversation(MONADS)[2]
    assert question.metadata["time_derived"] == "previous message"
    assert question.sent_at == conversation(MONADS)[1].sent_at


def test_multimodal_parts_and_hidden_context() -> None:
    messages = conversation(BREAD)
    assert [m.role for m in messages] == ["user", "assistant"]
    assert messages[0].text == "[image]\n\n这张图里的面包为什么塌了？"
    assert messages[0].kind == "text"
    assert messages[0].metadata["media"] == ["image"]
    assert messages[0].metadata["attachments"] == ["bread.jpg"]
    assert messages[1].text.startswith('[tool: browser — search("bread collapse overproofing")]\n多半是发酵过度')


def test_missing_current_node_takes_the_newest_leaf() -> None:
    messages = conversation(MIRROR)
    assert [m.text for m in messages] == ["Mirror a folder on Linux?", "Use `rsync -a --delete src/ dst/`."]
    (meta,) = [c.metadata for c in read_path(EXPORT).conversations if c.ref == MIRROR]
    assert meta["branch"] == "latest leaf (current_node missing)"


def test_counts_what_it_leaves_out() -> None:
    result = read_path(EXPORT)
    assert result.ignored == {"other branch": 4, "hidden message": 2, "tool message": 2}
    assert not result.skipped
    assert all(c.kind == "assistant" for c in result.conversations)
    assert all(m.sent_at.tzinfo is not None for m in result.messages)


def test_single_object_with_bom() -> None:
    result = chatgpt.read(FIXTURES / "single_bom.json")
    assert [m.id for m in result.messages] == ["c-u1", "c-a-new"]


def test_truncated_and_wrong_types() -> None:
    truncated = chatgpt.read(FIXTURES / "truncated.json")
    assert not truncated.messages and "not valid JSON" in truncated.skipped[0].reason
    result = chatgpt.read(FIXTURES / "wrong_types.json")
    assert [m.text for m in result.messages] == ["Kept despite its bad time.", "Answer kept."]
    reasons = " | ".join(skip.reason for skip in result.skipped)
    for expected in (
        "conversation 0 is a str",
        "without a mapping",
        "bad create_time",
        "no author role",
        "parts is dict",
    ):
        assert expected in reasons
