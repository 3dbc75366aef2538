from __future__ import annotations

from pathlib import Path

from threadkeep.readers import detect_format, read_path, specstory, transcript

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures" / "specstory"
HISTORY = FIXTURES / "project" / ".specstory" / "history"
OLD = HISTORY / "2025-03-14_09-12-webcam-autofocus.md"
CURSOR = HISTORY / "2025-12-02_12-49Z-remove-the-unused-dependency.md"
CLI = FIXTURES / "cli" / "2026-01-07_10-00-00Z-why-is-ci-slow.md"


def test_detected_before_the_transcript_and_document_readers() -> None:
    # The older file quotes three `>` lines: it must still be read as SpecStory, not as a transcript.
    assert transcript.detect(OLD)
    for path in (OLD, CURSOR, CLI, FIXTURES / "project"):
        assert detect_format(path).NAME == "specstory"
    assert not specstory.detect(FIXTURES / "project" / ".specstory" / ".what-is-this.md")
    assert not specstory.detect(FIXTURES.parent / "transcript" / "notes.md")


def test_older_extension_file_user_and_assistant_sections() -> None:
    result = specstory.read(OLD)
    assert [(m.role, m.text.split("\n")[0]) for m in result.messages] == [
        ("user", "The webcam keeps refocusing during calls. The log says:"),
        ("assistant", "Let me read your udev rule first."),
        ("user", "thanks, that fixed it"),
        ("assistant", "Glad it works."),
    ]
    question, reply = result.messages[:2]
    assert "> uvcvideo: Found UVC 1.00 device Razer Kiyo Pro" in question.text
    # `---` between bubbles is no text, one inside a code block is.
    assert reply.text == (
        "Let me read your udev rule first.\n"
        "[tool: Read file: /etc/udev/rules.d/99-webcam.rules]\n"
        "The rule turns continuous autofocus back on each time the camera resets. Change it to:\n\n"
        "```\n---\nfocus_automatic_continuous=0\n```"
    )
    assert "focus_auto=1" in reply.metadata["tool_text"]
    (conversation,) = result.conversations
    assert conversation.title == "Webcam autofocus keeps hunting" and conversation.kind == "assistant"
    assert [m.sent_at.isoformat() for m in result.messages[:2]] == [
        "2025-03-14T09:12:40+00:00",
        "2025-03-14T09:12:41+00:00",
    ]
    assert not result.skipped


def test_markdown_v2_cursor_file_thinking_and_tools() -> None:
    result = specstory.read(CURSOR)
    assert [(m.role, m.text) for m in result.messages] == [
        ("user", "remove left-pad from the project"),
        (
            "assistant",
            "Only `package.json` mentions it; nothing imports it. Removing the entry.\n"
            "[tool: edit_file — Edit file: package.json]",
        ),
        ("user", "and the lock file?"),
        ("assistant", "Run `npm install` once; it rewrites `package-lock.json` without it."),
    ]
    reply = result.messages[1]
    assert reply.metadata["model"] == "claude-4.5-sonnet"
    assert reply.metadata["tool_text"].startswith('[tool: grep — Grep for "left-pad" in "."]')
    assert result.ignored == {"thinking": 1}
    assert "Find where it is used" not in reply.text
    (conversation,) = result.conversations
    assert conversation.ref == "4e1f7a2b-9c3d-4e5f-8a6b-7c8d9e0f1a2b"
    assert conversation.title == "Remove the unused dependency"
    assert result.messages[2].sent_at.isoformat() == "2025-12-02T12:51:00+00:00"


def test_cli_file_one_reply_per_agent_message() -> None:
    result = specstory.read(CLI)
    assert [(m.role, m.text, m.sent_at.isoformat()) for m in result.messages] == [
        ("user", "why is CI slow?", "2026-01-07T10:00:00+00:00"),
        (
            "assistant",
            "The test job takes 14 minutes because it runs without a dependency cache.",
            "2026-01-07T10:00:20+00:00",
        ),
        ("assistant", "Add `actions/cache` keyed on the lock file.", "2026-01-07T10:00:21+00:00"),
        ("user", "do it", "2026-01-07T10:01:00+00:00"),
    ]
    # The tool-only agent message before the reply is searchable with it; the sidechain is counted.
    assert "[tool: Bash — gh run view --log | grep -i duration]" in result.messages[1].metadata["tool_text"]
    assert "duration 14m02s" in result.messages[1].metadata["tool_text"]
    assert result.ignored == {"sidechain": 1}
    assert result.conversations[0].title == "why is CI slow?"
    assert result.messages[1].metadata["model"] == "claude-sonnet-4-5-20250929"


def test_a_project_folder_reads_its_specstory_history() -> None:
    # `.specstory` is a dot folder the walk still enters; its read-me is a document, not a chat.
    result = read_path(FIXTURES / "project")
    assert result.format == "specstory"
    assert len(result.conversations) == 2
    assert not result.skipped
    assert [Path(skip.file).name for skip in result.not_read] == [".what-is-this.md"]
    direct = specstory.read(FIXTURES / "project" / ".specstory")
    assert len(direct.conversations) == 2
    assert [skip.reason for skip in direct.skipped] == ["not a SpecStory history file; left out"]


def test_a_file_without_sections(tmp_path: Path) -> None:
    path = tmp_path / "empty.md"
    path.write_text("<!-- Generated by SpecStory -->\n\n# Nothing yet\n", encoding="utf-8")
    result = specstory.read(path)
    assert not result.messages and [s.reason for s in result.skipped] == ["no _**User**_ / _**Assistant**_ sections"]


def test_heading_title_and_time_split_like_the_markdown_shape() -> None:
    assert specstory._heading("# Fix the build (2025-01-02 10:00Z)") == ("Fix the build", "2025-01-02 10:00Z")
    assert specstory._heading("## Fix (a) build (2025-01-02 10:00)  ") == ("Fix (a) build", "2025-01-02 10:00")
    assert specstory._heading("# Title (a (b)") == ("Title", "a (b")
    assert specstory._heading("# Plain title  ") == ("Plain title", None)
    assert specstory._heading("### Too deep") is None
    assert specstory._heading("#no space") is None


def test_a_heading_of_200k_open_brackets_is_read_as_a_title(tmp_path: Path) -> None:
    # A lazy title before an optional "(time)" group backtracked quadratically here (fuzzing found it).
    path = tmp_path / "2025-01-02_10-00Z-long.md"
    chat = "\n\n_**User**_\n\nhello\n\n---\n\n_**Assistant**_\n\nhi\n"
    path.write_text("# " + " (" * 100_000 + chat, encoding="utf-8")
    result = specstory.read(path)
    assert [m.text for m in result.messages] == ["hello", "hi"]
    assert result.conversations[0].title.startswith("( (")
