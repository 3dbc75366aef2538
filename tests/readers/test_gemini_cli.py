from __future__ import annotations

import json
from pathlib import Path

from threadkeep.readers import claude_code, codex_cli, detect_format, gemini_cli, read_path

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures" / "gemini_cli"
PROJECT = FIXTURES / "tmp" / "8876362f5a5f00ff0d93bf9c95efa883e60cbd44bfa1db1f77ad4280aeab35a6"
SESSION = PROJECT / "chats" / "session-2025-12-03T06-35-477739d0.json"
SID = "477739d0-1b78-4aa7-9116-02d08c952344"
LOG_SID = "5c1d2e3f-7a8b-4c9d-8e0f-1a2b3c4d5e6f"
LOG = PROJECT / "chats" / f"session-2026-04-20T10-15-{LOG_SID[:8]}.jsonl"
REWRITTEN = PROJECT / "chats" / "session-2026-04-21T08-00-9e8d7c6b.jsonl"
SUBAGENT = PROJECT / "chats" / LOG_SID / "0d9c8b7a-6f5e-4d3c-8b2a-190817263544.jsonl"


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
        ("2f1c0a9e-0000-4000-8000-000000000003", "assistant"),
        ("2f1c0a9e-0000-4000-8000-000000000005", "user"),
        ("2f1c0a9e-0000-4000-8000-000000000006", "assistant"),
    ]
    # The tool-call-only entry before it is not a reply: its call and output are searchable, not shown.
    first_reply = result.messages[1]
    assert first_reply.text == "`pytest -n0` disables parallel workers; use `-n auto`."
    assert first_reply.metadata == {
        "model": "gemini-2.5-pro",
        "merged_records": 2,
        "tool_text": "[tool: read_file — /home/ana/shop/Makefile]\ntest: pytest -n0",
    }
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
    assert {c.ref for c in result.conversations} == {
        SID,
        LOG_SID,
        "9e8d7c6b-5a49-4837-a625-140312110f0e",
        "a0a0a0a0-1111-4222-8333-444455556666",
    }
    logged = [m for m in result.messages if m.conversation == "a0a0a0a0-1111-4222-8333-444455556666"]
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


def test_jsonl_session_is_replayed_like_the_cli_loads_it() -> None:
    assert gemini_cli.detect(LOG) and detect_format(LOG).NAME == "gemini_cli"
    assert not claude_code.detect(LOG) and not codex_cli.detect(LOG)
    result = gemini_cli.read(LOG)
    # The tool-call-only entry (written twice: the repeat replaces it) is not a turn; the rewind
    # removed the autofocus question and its answer; the user turn shows what was typed.
    assert [(m.role, m.text) for m in result.messages] == [
        ("user", "Which webcam is plugged in?"),
        ("assistant", "It is the USB camera on bus 2, device 3."),
        ("user", "@notes.md what did I write about focus?"),
        ("assistant", "You wrote: keep autofocus on for calls."),
    ]
    assert result.messages[1].id == "b7e0c1d2-0001-4000-8000-00000000000c"
    assert "Razer Kiyo Pro" in result.messages[1].metadata["tool_text"]
    assert "[tool: run_shell_command — lsusb]" in result.messages[1].metadata["tool_text"]
    assert result.ignored["rewound message"] == 2 and result.ignored["info message"] == 1
    assert not result.skipped
    (conversation,) = result.conversations
    assert conversation.ref == LOG_SID and conversation.title == "Identify the plugged-in webcam"
    assert conversation.metadata["lastUpdated"] == "2026-04-20T10:17:30.001Z"


def test_set_messages_replaces_the_list_read_so_far() -> None:
    result = gemini_cli.read(REWRITTEN)
    assert [m.text for m in result.messages] == [
        "Summarise CHANGELOG.md",
        "2.1 drops Python 3.9.",
        "When was 2.1 released?",
        "On 2026-03-02.",
    ]


def test_subagent_sessions_are_counted_not_read() -> None:
    assert gemini_cli.detect(SUBAGENT)
    result = gemini_cli.read(SUBAGENT)
    assert not result.messages and result.ignored == {"subagent session": 1}


def test_chats_folder_reads_jsonl_and_legacy_json_once_each() -> None:
    result = gemini_cli.read(PROJECT / "chats")
    refs = [c.ref for c in result.conversations]
    assert sorted(refs) == sorted([SID, LOG_SID, "9e8d7c6b-5a49-4837-a625-140312110f0e"])
    # The legacy .json of the resumed session is older than its .jsonl copy: read once, from the copy.
    assert result.ignored["older copy of a session"] == 1
    assert result.ignored["subagent session"] == 1
    assert sum(m.conversation == LOG_SID for m in result.messages) == 4
    assert len({m.id for m in result.messages}) == len(result.messages)


def test_damaged_log_lines_are_reported_with_their_line(tmp_path: Path) -> None:
    lines = LOG.read_text(encoding="utf-8").splitlines()
    lines.insert(3, "{not json")
    lines.insert(5, json.dumps({"odd": True}))
    lines.insert(7, json.dumps({"id": "x", "type": "gemini", "content": 5, "timestamp": "yesterday"}))
    path = tmp_path / "session-2026-04-20T10-15-5c1d2e3f.jsonl"
    path.write_text("\n".join(lines), encoding="utf-8")
    result = gemini_cli.read(path)
    assert [m.text for m in result.messages][:2] == [
        "Which webcam is plugged in?",
        "It is the USB camera on bus 2, device 3.",
    ]
    assert sorted(skip.line for skip in result.skipped) == [4, 6, 8, 8]
