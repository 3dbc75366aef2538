from __future__ import annotations

import json
from pathlib import Path

from threadkeep.readers import codex_cli, detect_format, read_path

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures" / "codex_cli"
SESSIONS = FIXTURES / "sessions"
SID = "019a2d7a-41c4-78b1-b7cc-a45d62a89cd5"
ROLLOUT = SESSIONS / "2025" / "10" / "29" / f"rollout-2025-10-29T00-59-38-{SID}.jsonl"


def test_detects_rollouts_of_every_era() -> None:
    assert codex_cli.detect(ROLLOUT)
    assert codex_cli.detect(SESSIONS)
    assert codex_cli.detect(FIXTURES / "legacy")
    assert codex_cli.detect(FIXTURES / "rollout-2025-04-18-legacy-json-0418.json")
    assert not codex_cli.detect(FIXTURES.parent / "claude_code" / "session.jsonl")
    assert detect_format(ROLLOUT).NAME == "codex_cli"
    assert detect_format(FIXTURES.parent / "claude_code" / "session.jsonl").NAME == "claude_code"


def test_the_event_stream_is_the_conversation_and_context_is_not_the_human() -> None:
    result = read_path(SESSIONS)
    # The AGENTS.md and <user_instructions> messages the model was sent are not turns; the IDE
    # extension's context around the request is not what the person typed.
    assert [(m.role, m.text) for m in result.messages] == [
        ("user", "What is 2+2? Just the answer."),
        ("assistant", "4"),
        ("user", "列出 src 目录，然后把 app.py 里的 print 改成 logging。"),
        ("assistant", "已把 src/app.py 中的 print 改为 logging.info。"),
        ("user", "Thanks!"),
        ("assistant", "You're welcome."),
    ]
    assert result.conversations[0].metadata["read_from"] == "event_msg"
    assert result.ignored["context message"] == 2
    assert result.ignored["developer message"] == 1
    assert result.ignored["model-facing copy of a message"] == 6


def test_tool_calls_before_the_reply_are_searchable_not_shown() -> None:
    reply = read_path(SESSIONS).messages[3]
    assert reply.metadata["tool_text"] == (
        "[tool: shell — ls -la src]\napp.py util.py\n"
        "[tool: apply_patch — src/app.py]\nSuccess. Updated the following files: M src/app.py"
    )
    assert reply.metadata["model"] == "gpt-5-codex"
    assert reply.id == f"{SID}:5"


def test_ids_times_and_metadata() -> None:
    result = read_path(SESSIONS)
    (conversation,) = result.conversations
    assert conversation.ref == SID
    assert conversation.metadata["cwd"] == "/home/ana/shop"
    assert conversation.metadata["gitBranch"] == "main"
    assert result.messages[1].id == "msg_0a1"
    assert result.messages[0].sent_at.isoformat() == "2025-10-29T00:59:39+00:00"
    assert result.messages[5].metadata["time_derived"] == "previous message"


def test_broken_lines_are_reported() -> None:
    result = codex_cli.read(ROLLOUT)
    assert sorted(skip.line for skip in result.skipped) == [18, 24, 25, 29, 30]
    assert all(skip.file == str(ROLLOUT) for skip in result.skipped)


def test_legacy_jsonl_has_times_from_the_session() -> None:
    result = codex_cli.read(FIXTURES / "legacy")
    assert [m.text for m in result.messages] == [
        "Why is the test suite slow?",
        "`test_db` recreates the database for every test; use a session-scoped fixture.",
    ]
    assert result.messages[1].metadata["tool_text"] == "[tool: shell — pytest --durations=5]\nslowest: test_db 12s"
    assert result.conversations[0].metadata["read_from"] == "response_item"
    assert all(m.metadata["time_derived"] == "conversation time" for m in result.messages)
    assert result.conversations[0].metadata["cwd"] == "/Users/x/dev/legacy-thing"
    assert result.ignored["state record"] == 2


def test_legacy_json_file() -> None:
    result = codex_cli.read(FIXTURES / "rollout-2025-04-18-legacy-json-0418.json")
    assert [m.text for m in result.messages] == [
        "Rename the CLI flag --out to --output.",
        "Renamed in cli.py.",
    ]
    assert len(result.skipped) == 1


def test_event_only_file_falls_back_to_events() -> None:
    result = codex_cli.read(FIXTURES / "rollout-2025-09-10T08-00-00-evt-only-0910.jsonl")
    assert [m.text for m in result.messages] == ["Restart the worker.", "Restarted with `systemctl restart worker`."]
    assert result.conversations[0].metadata["read_from"] == "event_msg"


def test_each_agent_message_is_one_reply(tmp_path: Path) -> None:
    def line(kind: str, payload: dict) -> str:
        return json.dumps({"timestamp": "2026-02-01T10:00:00Z", "type": kind, "payload": payload})

    records = [
        line("session_meta", {"id": "s-9", "timestamp": "2026-02-01T10:00:00Z", "cwd": "/w"}),
        line("response_item", {"type": "message", "role": "user", "content": [{"type": "input_text", "text": "go"}]}),
        line("event_msg", {"type": "user_message", "message": "go", "images": ["data:image/png;base64,AA"]}),
        line("event_msg", {"type": "agent_message", "message": "Checking the logs first."}),
        line(
            "response_item",
            {"type": "function_call", "name": "shell", "arguments": '{"command":["dmesg"]}', "call_id": "c1"},
        ),
        line("response_item", {"type": "function_call_output", "call_id": "c1", "output": "usb 2-1: Razer Kiyo Pro"}),
        line("event_msg", {"type": "agent_message", "message": "The camera re-enumerated."}),
        line(
            "event_msg",
            {
                "type": "user_message",
                "message": "<environment_context>x</environment_context>",
                "kind": "environment_context",
            },
        ),
    ]
    path = tmp_path / "rollout-2026-02-01T10-00-00-s-9.jsonl"
    path.write_text("\n".join(records), encoding="utf-8")
    result = codex_cli.read(path)
    assert [(m.role, m.text) for m in result.messages] == [
        ("user", "go\n\n[image]"),
        ("assistant", "Checking the logs first.\n[tool: shell — dmesg]"),
        ("assistant", "The camera re-enumerated."),
    ]
    assert result.messages[1].metadata["tool_text"] == "usb 2-1: Razer Kiyo Pro"
    assert result.messages[0].metadata["media"] == ["image"]
