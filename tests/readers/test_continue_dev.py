from __future__ import annotations

import json
from pathlib import Path

from threadkeep.readers import continue_dev, detect_format, read_path

SESSIONS = Path(__file__).resolve().parents[1] / "fixtures" / "continue_dev" / "sessions"
AGENT = SESSIONS / "6f0e1d2c-3b4a-4958-8776-a5b4c3d2e1f0.json"
OLDER = SESSIONS / "0a1b2c3d-4e5f-4a6b-8c7d-9e0f1a2b3c4d.json"


def test_detects_session_files_and_the_sessions_folder() -> None:
    assert continue_dev.detect(SESSIONS) and continue_dev.detect(AGENT) and continue_dev.detect(OLDER)
    assert not continue_dev.detect(SESSIONS / "sessions.json")
    assert detect_format(AGENT).NAME == "continue_dev"
    assert detect_format(SESSIONS).NAME == "continue_dev"


def test_agent_session_turns_tools_and_thinking() -> None:
    result = continue_dev.read(AGENT)
    assert [(m.id, m.role, m.text) for m in result.messages] == [
        ("e1c0a7b2-0001-4c00-8000-000000000001", "user", "Which webcam is plugged in?"),
        ("e1c0a7b2-0001-4c00-8000-000000000005", "assistant", "It is the USB camera on bus 2, device 3."),
        ("e1c0a7b2-0001-4c00-8000-000000000006", "user", "thanks"),
        ("e1c0a7b2-0001-4c00-8000-000000000007", "assistant", "You're welcome."),
    ]
    # The tool-only assistant message is no reply; its call and output (once) are searchable.
    assert result.messages[1].metadata["tool_text"] == (
        "[tool: builtin_run_terminal_command — lsusb]\nBus 002 Device 003: ID 1532:0e05 Razer USA, Ltd Razer Kiyo Pro"
    )
    assert result.ignored == {"thinking message": 1, "tool result": 1}
    # Times: the index's dateCreated (epoch ms) plus one second per message.
    assert result.messages[0].sent_at.isoformat() == "2026-04-20T10:15:00+00:00"
    (conversation,) = result.conversations
    assert conversation.title == "Find the webcam's USB id"
    assert conversation.metadata["workspaceDirectory"] == "file:///home/ana/cam"


def test_sessions_folder_and_an_untitled_older_session() -> None:
    result = read_path(SESSIONS)
    assert len(result.conversations) == 2 and not result.skipped
    older = next(c for c in result.conversations if c.ref.startswith("0a1b"))
    assert older.title == "what does `make lint` run?"  # "New Session" is no title


def test_damaged_session_is_reported(tmp_path: Path) -> None:
    path = tmp_path / "s.json"
    history = [{"message": {"role": "critic", "content": "x"}}, {"message": "oops"}, {"message": {"role": "user"}}]
    path.write_text(json.dumps({"sessionId": "s", "workspaceDirectory": "/", "history": history}), encoding="utf-8")
    result = continue_dev.read(path)
    assert not result.messages
    assert [s.reason for s in result.skipped] == [
        "history item 0: unknown role 'critic'; left out",
        "history item 1 has no message role; left out",
    ]
    assert result.ignored == {"empty message": 1, "empty conversation": 1}
