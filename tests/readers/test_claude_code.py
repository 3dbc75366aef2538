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
        ("a-4", "assistant"),
        ("a-5", "assistant"),
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


def test_each_model_response_with_text_is_one_reply_with_its_tool_lines() -> None:
    messages = by_id(SESSION)
    reply = messages["a-1"]
    # The three records of msg_01 (thinking, text, tool call) are one reply; msg_02 and msg_03 are the next two.
    assert reply.metadata["merged_records"] == 3
    assert reply.text == "Let me look at the workflow file.\n[tool: Read — /home/ana/shop/.github/workflows/ci.yml]"
    assert messages["a-4"].text == (
        "The cache key ignores `package-lock.json`, so a stale cache is restored after dependency bumps.\n"
        "[tool: Bash — git log -1 --format=%H -- package-lock.json]"
    )
    assert messages["a-5"].text == "Fixed: the key now hashes the lock file."
    # Tool results are never shown; an excerpt is searchable with the reply that called the tool.
    assert reply.metadata["tool_text"] == "name: ci on: [push] jobs: ..."
    assert messages["a-4"].metadata["tool_text"] == "9f1c2ab"
    assert all(m.reply_to == "u-1" for m in (reply, messages["a-4"], messages["a-5"]))
    assert reply.sender == "assistant"
    assert reply.metadata["model"] == "claude-sonnet-4-5-20250929"
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
    # The response that only called Task is not a reply: the call and its result are searchable in the next one.
    assert [m.id for m in result.messages] == ["p-1", "p-4"]
    assert result.messages[1].text.startswith("Added `--dry-run`")
    assert result.messages[1].metadata["tool_text"] == "[tool: Task — Find deploy scripts]\ndeploy.sh"
    assert result.ignored["sidechain"] == 2


def test_rereading_a_growing_session_keeps_ids(tmp_path: Path) -> None:
    path = tmp_path / "s.jsonl"
    lines = SESSION.read_text(encoding="utf-8").splitlines(keepends=True)
    path.write_text("".join(lines[:6]), encoding="utf-8")
    early = claude_code.read(path).messages
    path.write_text("".join(lines), encoding="utf-8")
    later = {m.id: m for m in claude_code.read(path).messages}
    assert [m.id for m in early][:2] == ["u-1", "a-1"]
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


QUEUED = FIXTURES / "queued.jsonl"


def test_queued_messages_injected_blocks_and_tool_only_turns_read_as_claude_code_shows_them() -> None:
    result = claude_code.read(QUEUED)
    assert [(m.id, m.role, m.text) for m in result.messages] == [
        ("q-1", "user", "Which webcam is plugged in?"),
        # Typed while the assistant ran lsusb: stored only as a queued_command attachment.
        ("q-4", "user", "also check the microphone"),
        ("q-5", "assistant", "It is the USB camera on bus 2; its microphone is the only one connected."),
        ("q-8", "user", "Turn its autofocus off"),
        (
            "q-9",
            "assistant",
            "Run `v4l2-ctl -c focus_automatic_continuous=0`; doing it now.\n"
            "[tool: Bash — v4l2-ctl -c focus_automatic_continuous=0]",
        ),
        ("q-12", "assistant", "Autofocus is off."),
    ]
    assert result.messages[1].metadata["queued"] is True
    # The tool-only response is no reply: its call and output stay searchable with the question.
    assert "[tool: Bash — lsusb]" in result.messages[0].metadata["tool_text"]
    assert "Razer Kiyo Pro" in result.messages[0].metadata["tool_text"]
    assert all("Razer" not in m.text for m in result.messages)
    assert result.ignored["tool-only reply"] == 1
    assert result.ignored["injected context"] == 1  # the task notification
    assert result.ignored["command output"] == 1  # the caveat, without isMeta
    assert result.ignored["queue-operation"] == 2


def test_a_malformed_record_does_not_hide_a_later_copy_with_its_uuid() -> None:
    result = claude_code.read(QUEUED)
    assert [(skip.line, skip.reason) for skip in result.skipped] == [(10, "message is missing or not an object")]
    assert "q-8" in {m.id for m in result.messages}
    assert "duplicate record" not in result.ignored


def test_queued_commands_from_elsewhere_are_not_the_person(tmp_path: Path) -> None:
    base = {"sessionId": "s-3", "parentUuid": None, "timestamp": "2026-01-01T00:00:00Z"}
    records = [
        {**base, "type": "user", "uuid": "1", "message": {"role": "user", "content": "start"}},
        {
            **base,
            "type": "attachment",
            "uuid": "2",
            "attachment": {
                "type": "queued_command",
                "prompt": "<task-notification>x</task-notification>",
                "commandMode": "task-notification",
            },
        },
        {
            **base,
            "type": "attachment",
            "uuid": "3",
            "attachment": {"type": "queued_command", "prompt": "from a peer", "origin": {"kind": "peer"}},
        },
        {
            **base,
            "type": "attachment",
            "uuid": "4",
            "attachment": {"type": "queued_command", "prompt": [{"type": "text", "text": "typed later"}]},
        },
    ]
    path = tmp_path / "q.jsonl"
    path.write_text("\n".join(json.dumps(r) for r in records), encoding="utf-8")
    result = claude_code.read(path)
    assert [m.text for m in result.messages] == ["start", "typed later"]
    assert result.ignored["attachment"] == 2


def test_shell_commands_read_as_typed_and_their_output_is_searchable(tmp_path: Path) -> None:
    base = {"sessionId": "s-4", "parentUuid": None, "timestamp": "2026-01-01T00:00:00Z", "type": "user"}
    contents = [
        "<bash-input>lsusb</bash-input>",
        "<bash-stdout>Bus 002 Device 003: ID 1532:0e05 Razer USA, Ltd Razer Kiyo Pro</bash-stdout>"
        "<bash-stderr></bash-stderr>",
    ]
    path = tmp_path / "bash.jsonl"
    records = [{**base, "uuid": str(i), "message": {"role": "user", "content": c}} for i, c in enumerate(contents)]
    path.write_text("\n".join(json.dumps(r) for r in records), encoding="utf-8")
    (typed,) = claude_code.read(path).messages
    assert typed.text == "!lsusb"
    assert "Razer Kiyo Pro" in typed.metadata["tool_text"]


def test_a_rename_titles_the_conversation(tmp_path: Path) -> None:
    lines = SESSION.read_text(encoding="utf-8").splitlines()
    lines.append(json.dumps({"type": "ai-title", "aiTitle": "CI cache key fix", "sessionId": "x"}))
    lines.append(json.dumps({"type": "custom-title", "customTitle": "cache-bug", "sessionId": "x"}))
    path = tmp_path / "renamed.jsonl"
    path.write_text("\n".join(lines), encoding="utf-8")
    assert claude_code.read(path).conversations[0].title == "cache-bug"
    path.write_text("\n".join(lines[:-1]), encoding="utf-8")
    assert claude_code.read(path).conversations[0].title == "CI cache key fix"
