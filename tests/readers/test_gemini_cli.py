from __future__ import annotations

from pathlib import Path

from threadkeep.readers import detect_format, gemini_cli, read_path

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures" / "gemini_cli"
PROJECT = FIXTURES / "tmp" / "8876362f5a5f00ff0d93bf9c95efa883e60cbd44bfa1db1f77ad4280aeab35a6"
SESSION = PROJECT / "chats" / "session-2025-12-03T06-35-477739d0.json"
SID = "477739d0-1b78-4aa7-9116-02d08c952344"


def test_detects_sessions_logs_and_folders() -> None:
    assert gemini_cli.detect(SESSION)
    assert gemini_cli.detect(PROJECT / "logs.json")
    assert gemini_cli.detect(FIXTURES / "windows" / "logs.json")
    assert gemini_cli.detect(FIXTURES / "tmp")
    assert detect_format(SESSION).NAME == "gemini_cli"
    assert not gemini_cli.detect(FIXTURES.parent / "claude_ai" / "flat_messages.json")


def test_session_turns_with_tool_calls() -> None:
    result = gemini_cli.read(SESSION)
    assert [(m.id, m.role) for m in result.messages] == [
        ("553d877e-dd47-42b6-ae51-84d990c8ae10", "user"),
        ("d0d8eed9-9936-4c96-97c1-eb7541b05b2a", "assistant"),
        ("2f1c0a9e-0000-4000-8000-000000000005", "user"),
        ("2f1c0a9e-0000-4000-8000-000000000006", "assistant"),
    ]
    first_reply = result.messages[1]
    assert first_reply.text == (
        "[tool: read_file — /home/ana/shop/Makefile]\n`pytest -n0` disables parallel workers; use `-n auto`."
    )
    assert first_reply.metadata == {"model": "gemini-2.5-pro", "merged_records": 2}
    assert result.messages[3].text == "它让 pytest-xdist 按 CPU 核数启动 worker。\n[tool: run_shell_command — nproc]"
    assert result.ignored == {"thought": 1, "info message": 1, "error message": 1}
    (conversation,) = result.conversations
    assert conversation.ref == SID and conversation.kind == "assistant"
    assert conversation.metadata["projectHash"].startswith("8876362f")


def test_missing_timestamp_borrows_the_record_before() -> None:
    question = gemini_cli.read(SESSION).messages[2]
    assert question.text == "顺便解释一下 -n auto 是什么意思？"
    assert question.metadata["time_derived"] == "previous record"
    assert question.sent_at.isoformat() == "2025-12-03T06:36:30.198000+00:00"


def test_folder_reads_logs_only_for_sessions_without_a_chat_file() -> None:
    result = read_path(FIXTURES / "tmp")
    assert {c.ref for c in result.conversations} == {SID, "a0a0a0a0-1111-4222-8333-444455556666"}
    logged = [m for m in result.messages if m.conversation != SID]
    assert [m.text for m in logged] == ["/chat save before-refactor", "Refactor utils.py into a package"]
    assert all(m.role == "user" for m in logged)
    assert result.ignored["prompt already in a session file"] == 2


def test_utf16_logs_with_repeated_ids_and_null_time() -> None:
    result = gemini_cli.read(FIXTURES / "windows" / "logs.json")
    assert [(m.id, m.text) for m in result.messages] == [
        ("b1b1b1b1-2222-4333-8444-555566667777:0", "把日志级别调成 DEBUG"),
        ("b1b1b1b1-2222-4333-8444-555566667777:row1", "再调回 INFO"),
    ]
    assert result.messages[1].metadata["time_derived"] == "previous message"
    assert result.ignored == {"gemini log row": 1}


def test_wrong_types_and_truncation() -> None:
    result = gemini_cli.read(FIXTURES / "session-bad-types.json")
    assert [m.text for m in result.messages] == ["A part object instead of a string.", "Answer kept.\n\n[image]"]
    assert len(result.skipped) == 5
    truncated = gemini_cli.read(FIXTURES / "session-truncated.json")
    assert not truncated.messages and "not valid JSON" in truncated.skipped[0].reason
