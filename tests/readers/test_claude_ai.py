from __future__ import annotations

import json
from pathlib import Path

from threadkeep.readers import claude_ai, detect_format, read_path

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures" / "claude_ai"
EXPORT = FIXTURES / "export"


def test_detects_export_folder_file_and_flat_shapes() -> None:
    assert claude_ai.detect(EXPORT)
    assert claude_ai.detect(EXPORT / "conversations.json")
    assert claude_ai.detect(FIXTURES / "flat_list.json")
    assert claude_ai.detect(FIXTURES / "flat_messages.json")
    assert not claude_ai.detect(EXPORT / "users.json")
    assert detect_format(EXPORT).NAME == "claude_ai"
    assert detect_format(FIXTURES / "flat_list.json").NAME == "claude_ai"


def test_export_in_time_order_human_first_on_ties() -> None:
    result = read_path(EXPORT)
    assert [(m.id, m.role) for m in result.messages] == [
        ("m-01", "user"),
        ("m-02", "assistant"),
        ("m-03", "user"),
        ("m-04", "assistant"),
        ("m-05", "user"),
        ("m-06", "user"),
    ]
    (conversation,) = result.conversations  # the empty second conversation is counted, not emitted
    assert conversation.title == "Postgres vs SQLite for the shop"
    assert conversation.kind == "assistant"
    assert result.ignored == {"thinking": 1, "tool result": 1, "empty conversation": 1}
    assert not result.skipped
    assert result.messages[1].reply_to == "m-01"


def test_attachments_tools_and_missing_times() -> None:
    messages = {m.id: m for m in claude_ai.read(EXPORT).messages}
    assert messages["m-03"].text == (
        "这是我们的需求文档，请据此写出订单表。\n\n[attachment: 需求.md]\n订单必须记录下单时间、金额和状态。"
    )
    assert messages["m-03"].metadata["attachments"] == ["需求.md", "whiteboard.png"]
    assert messages["m-04"].text == "[tool: artifacts — create]\nHere is the schema for the orders table."
    assert messages["m-05"].metadata["time_derived"] == "previous message"
    assert messages["m-05"].sent_at == messages["m-04"].sent_at
    assert messages["m-06"].text == "[file: receipt.jpg]"


def test_flat_list_with_synthetic_times() -> None:
    result = claude_ai.read(FIXTURES / "flat_list.json")
    assert [(m.role, m.text) for m in result.messages] == [
        ("user", "How do I undo the last git commit but keep the changes?"),
        ("assistant", "Run `git reset --soft HEAD~1`."),
        ("user", "And if I already pushed?"),
        ("assistant", "Use `git revert HEAD` instead, so history stays intact."),
    ]
    assert result.ignored == {"system message": 1}
    times = [m.sent_at for m in result.messages]
    assert times == sorted(times) and len(set(times)) == 4
    assert result.conversations[0].metadata["synthetic_times"] is True


def test_flat_messages_object() -> None:
    result = claude_ai.read(FIXTURES / "flat_messages.json")
    assert result.conversations[0].ref == "flat_messages"
    assert result.conversations[0].title == "Regex help"
    assert [m.id for m in result.messages] == ["flat_messages:0", "flat_messages:1"]
    assert result.messages[1].text == "`\\d{4}-\\d{2}-\\d{2}`"


def test_branched_conversation_keeps_the_current_branch() -> None:
    result = claude_ai.read(FIXTURES / "branched.json")
    assert [m.text for m in result.messages] == [
        "Suggest a name for a CLI that keeps chat history.",
        "threadkeep",
        "threadkeep it is.",
    ]
    assert result.ignored == {"other branch": 1}


def test_wrong_types_are_skipped_not_fatal() -> None:
    result = claude_ai.read(FIXTURES / "wrong_types.json")
    assert [m.text for m in result.messages] == ["plain string content", "Answer kept."]
    reasons = " | ".join(skip.reason for skip in result.skipped)
    for expected in ("item 0 is a str", "message 0: is int", "has no sender", "bad created_at", "attachments is str"):
        assert expected in reasons


def test_truncated_json_is_reported() -> None:
    result = claude_ai.read(FIXTURES / "truncated.json")
    assert not result.messages
    assert len(result.skipped) == 1 and "not valid JSON" in result.skipped[0].reason


def test_chatgpt_export_is_not_taken(tmp_path: Path) -> None:
    path = tmp_path / "conversations.json"
    path.write_text(json.dumps([{"title": "x", "mapping": {"a": {"message": None}}}]), encoding="utf-8")
    assert not claude_ai.detect(path)


def test_model_role_is_the_assistant_and_unknown_roles_are_reported_with_their_line() -> None:
    path = FIXTURES / "gemini_messages.json"
    assert detect_format(path).NAME == "claude_ai"
    result = read_path(path)
    assert [(m.role, m.text) for m in result.messages] == [
        ("user", "How much is a week in Lisbon?"),
        ("assistant", "About 900 EUR without flights."),
        ("user", "And in Porto?"),
        ("assistant", "About 750 EUR."),
    ]
    assert result.ignored == {"system message": 1}
    (skip,) = result.skipped
    assert skip.file == str(path) and skip.line == 16 and "unknown role 'critic'" in skip.reason


def test_gemini_contents_with_parts() -> None:
    path = FIXTURES / "gemini_contents.json"
    assert detect_format(path).NAME == "claude_ai"
    result = read_path(path)
    assert [(m.role, m.text) for m in result.messages] == [
        ("user", "Translate 'obrigado' to English."),
        ("assistant", "Thank you."),
    ]
    assert not result.skipped
