from __future__ import annotations

import json
import shutil
from pathlib import Path

from threadkeep.readers import claude_code, detect_format, read_path

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures" / "claude_code"
SESSION = FIXTURES / "session.jsonl"


def by_id(path: Path) -> dict:
    return {message.id: message for message in claude_code.read(path).messages}


def test_detects_sessions_but_not_other_jsonl() -> None:
    assert claude_code.detect(SESSION)
    assert claude_code.detect(FIXTURES / "windows_utf16.jsonl")
    assert claude_code.detect(FIXTURES / "project")
    assert not claude_code.detect(FIXTURES / "empty.jsonl")
    assert not claude_code.detect(FIXTURES / "project" / "sessions-index.json")
    assert detect_format(SESSION).NAME == "claude_code"


def test_reads_the_human_and_one_reply_per_turn() -> None:
    result = claude_code.read(SESSION)
    assert [(m.id, m.role) for m in result.messages] == [
        ("u-1", "user"),
        ("a-1", "assistant"),
        ("u-4", "user"),
        ("a-6", "assistant"),
        ("u-5", "user"),
        ("a-8", "assistant"),
    ]
    assert not result.skipped
    (conversation,) = result.conversations
    assert conversation.ref == "5f0c2b1e-8a3d-4f6e-9b7a-1c2d3e4f5a6b"
    assert conversation.kind == "assistant"
    assert conversation.title == "Fix flaky CI cache"
    assert conversation.metadata["cwd"] == "/home/ana/shop"
    assert conversation.metadata["gitBranch"] == "main"
    assert all(m.conversation == conversation.ref for m in result.messages)
    assert all(m.sent_at.tzinfo is not None for m in result.messages)


def test_split_reply_is_one_message_with_tool_lines() -> None:
    reply = by_id(SESSION)["a-1"]
    # Three records of msg_01, the tool results between, then msg_02 and msg_03: one answer.
    assert reply.metadata["merged_records"] == 5
    assert reply.text == (
        "Let me look at the workflow file.\n"
        "[tool: Read — /home/ana/shop/.github/workflows/ci.yml]\n"
        "The cache key ignores `package-lock.json`, so a stale cache is restored after dependency bumps.\n"
        "[tool: Bash — git log -1 --format=%H -- package-lock.json]\n"
        "Fixed: the key now hashes the lock file."
    )
    assert reply.sender == "assistant"
    assert reply.metadata["model"] == "claude-sonnet-4-5-20250929"
    assert reply.reply_to == "u-1"
    assert reply.sent_at.isoformat() == "2025-11-30T11:09:35.400000+00:00"
    assert "The user asks" not in reply.text  # thinking is left out


def test_left_out_records_are_counted() -> None:
    ignored = claude_code.read(SESSION).ignored
    assert ignored == {
        "summary": 1,
        "file-history-snapshot": 1,
        "thinking": 1,
        "tool result": 2,
        "system": 1,
        "meta": 1,
        "command output": 1,
        "progress": 1,
        "sidechain": 2,
        "queue-operation": 1,
        "duplicate record": 1,
        "compact summary": 1,
        "synthetic reply": 1,
    }


def test_missing_time_comes_from_the_record_before() -> None:
    question = by_id(SESSION)["u-4"]
    assert question.text == "缓存现在命中了吗？顺便把 README 更新一下。\n\n[image]"
    assert question.metadata["media"] == ["image"]
    assert question.metadata["time_derived"] == "previous record"
    assert question.sent_at.isoformat() == "2025-11-30T11:11:06+00:00"


def test_broken_lines_are_reported_with_file_and_line() -> None:
    result = claude_code.read(FIXTURES / "broken.jsonl")
    assert [m.id for m in result.messages] == ["b-1", "b-2", "b-6"]
    assert result.messages[1].text == "Still here."
    assert result.messages[1].metadata["time_derived"] == "previous record"
    lines = sorted(skip.line for skip in result.skipped)
    assert lines == [2, 3, 4, 5, 5, 6, 7, 8]
    assert all(skip.file.endswith("broken.jsonl") for skip in result.skipped)


def test_utf16_session() -> None:
    result = claude_code.read(FIXTURES / "windows_utf16.jsonl")
    assert [m.text for m in result.messages] == ["把这个函数改成异步的", "好的，已改为 async def。"]
    assert result.conversations[0].metadata["cwd"] == "C:\\Users\\mei\\notes"


def test_empty_file_is_reported() -> None:
    result = claude_code.read(FIXTURES / "empty.jsonl")
    assert not result.messages and not result.conversations
    assert [skip.reason for skip in result.skipped] == ["file is empty"]


def test_project_folder_reads_sessions_and_ignores_subagents() -> None:
    result = read_path(FIXTURES / "project")
    assert result.format == "claude_code"
    assert [m.id for m in result.messages] == ["p-1", "p-2"]
    assert result.messages[1].text.startswith("[tool: Task — Find deploy scripts]\nAdded `--dry-run`")
    assert result.ignored["sidechain"] == 2


def test_rereading_a_growing_session_keeps_ids(tmp_path: Path) -> None:
    path = tmp_path / "s.jsonl"
    lines = SESSION.read_text(encoding="utf-8").splitlines(keepends=True)
    path.write_text("".join(lines[:6]), encoding="utf-8")
    early = claude_code.read(path).messages
    path.write_text("".join(lines), encoding="utf-8")
    later = {m.id: m for m in claude_code.read(path).messages}
    assert [m.id for m in early] == ["u-1", "a-1"]
    assert later["a-1"].text.startswith(early[1].text)


def test_wrong_types_in_known_fields(tmp_path: Path) -> None:
    base = {"sessionId": "s-1", "parentUuid": None, "timestamp": "2025-01-01T00:00:00Z"}
    records = [
        {**base, "type": "user", "uuid": "1", "message": {"role": "user", "content": [{"type": "text", "text": 5}]}},
        {**base, "type": "user", "uuid": ["not", "a", "string"], "message": {"role": "user", "content": "ok"}},
        {**base, "type": "assistant", "uuid": "3", "isSidechain": "yes", "message": {"content": {"a": 1}}},
        {**base, "type": "assistant", "uuid": "4", "timestamp": {"t": 1}, "message": {"content": [{"type": "x"}]}},
    ]
    path = tmp_path / "odd.jsonl"
    path.write_text("\n".join(json.dumps(r) for r in records), encoding="utf-8")
    result = claude_code.read(path)
    assert [m.text for m in result.messages] == ["ok"]
    assert result.messages[0].id == "s-1:0"
    assert {skip.line for skip in result.skipped} == {1, 3, 4}


def test_slash_commands_read_as_typed(tmp_path: Path) -> None:
    base = {"sessionId": "s-2", "parentUuid": None, "timestamp": "2025-01-01T00:00:00Z", "type": "user"}
    command = "\n".join(
        [
            "<command-message>model</command-message>",
            "<command-name>/model</command-name>",
            "<command-args>opus</command-args>",
        ]
    )
    path = tmp_path / "cmd.jsonl"
    path.write_text(
        json.dumps({**base, "uuid": "c-1", "message": {"role": "user", "content": command}}), encoding="utf-8"
    )
    assert [m.text for m in claude_code.read(path).messages] == ["/model opus"]


def test_copy_with_other_name_still_detected(tmp_path: Path) -> None:
    copy = tmp_path / "0001.jsonl"
    shutil.copy(SESSION, copy)
    assert claude_code.detect(copy)
