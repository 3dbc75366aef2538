from __future__ import annotations

from datetime import UTC, datetime
from itertools import pairwise
from pathlib import Path

from hypothesis import given, settings
from hypothesis import strategies as st

from threadkeep.model import Message
from threadkeep.readers import detect_format, transcript
from threadkeep.readers._assistant import fill_times, tool_line
from threadkeep.transcript import parse_transcript, to_transcript

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures" / "transcript"
T0 = datetime(2025, 1, 1, tzinfo=UTC)


def message(index: int, role: str, text: str) -> Message:
    return Message(id=f"c:{index}", conversation="c", sender=role, sent_at=T0, text=text, role=role)


def test_detects_three_turn_lines_only() -> None:
    assert transcript.detect(FIXTURES / "chat.txt")
    assert transcript.detect(FIXTURES / "gbk.txt")
    assert transcript.detect(FIXTURES / "windows_bom.md")
    assert not transcript.detect(FIXTURES / "notes.md")  # a document with a quote
    assert not transcript.detect(FIXTURES)
    assert detect_format(FIXTURES / "chat.txt").NAME == "transcript"


def test_reads_multi_line_turns_and_replies() -> None:
    result = transcript.read(FIXTURES / "chat.txt")
    assert [(m.role, m.text) for m in result.messages] == [
        ("user", 'Our nightly backup job fails with "disk full".\nThe disk has 40 GB free though.'),
        ("assistant", 'Check the inode count with `df -i`: running out of inodes also reports "disk full".'),
        ("user", "df -i shows 100% IUse on /var."),
        (
            "assistant",
            "That's it. Something is creating millions of tiny files; "
            "`find /var -xdev -type f | cut -d/ -f2-3 | sort | uniq -c | sort -n` shows where.\n\n"
            "A common culprit is an unrotated session directory.",
        ),
        ("user", "找到了，是 /var/lib/php/sessions。\n\n怎么定期清理？"),
        ("assistant", "加一个 systemd timer，每天删除超过 24 小时的会话文件：\n> 注意：先确认没有正在使用的会话。"),
    ]
    (conversation,) = result.conversations
    assert conversation.kind == "assistant" and conversation.ref == "chat"
    assert [m.id for m in result.messages][:2] == ["chat:0", "chat:1"]
    assert result.messages[1].reply_to == "chat:0"


def test_synthetic_times_one_second_apart() -> None:
    result = transcript.read(FIXTURES / "gbk.txt")
    times = [m.sent_at for m in result.messages]
    assert all((later - earlier).total_seconds() == 1 for earlier, later in pairwise(times))
    assert result.messages[0].text == "服务器时间不对，差了八个小时。"
    assert result.conversations[0].metadata["synthetic_times"] is True
    assert "file modification time" in result.messages[0].metadata["time_derived"]


def test_crlf_and_bom() -> None:
    result = transcript.read(FIXTURES / "windows_bom.md")
    assert [m.text for m in result.messages][:2] == ["Is rust faster than go?", "Usually, for CPU-bound work."]


def test_empty_file(tmp_path: Path) -> None:
    empty = tmp_path / "empty.txt"
    empty.write_text("", encoding="utf-8")
    result = transcript.read(empty)
    assert not result.messages and result.skipped[0].reason == "file is empty"


def test_to_transcript_format() -> None:
    messages = [
        message(0, "user", "why?\nreally"),
        message(1, "assistant", "because\n> quoted line"),
        message(2, "user", "ok"),
        message(3, "user", "and?"),
        message(4, "assistant", "done"),
    ]
    assert to_transcript(messages) == "> why?\n> really\nbecause\n\\> quoted line\n\n> ok\n\n> and?\ndone\n"


line_text = st.text(st.characters(blacklist_characters="\r\n", blacklist_categories=("Cs",)), max_size=20)
body = st.lists(line_text, min_size=1, max_size=4).map("\n".join).filter(lambda t: t.strip() and t == t.strip("\n"))


@settings(max_examples=150, deadline=None)
@given(st.lists(st.tuples(st.sampled_from(["user", "assistant"]), body), max_size=8))
def test_round_trip(turns: list[tuple[str, str]]) -> None:
    messages = [message(i, role, text) for i, (role, text) in enumerate(turns)]
    text = to_transcript(messages)
    back = [message(i, turn.role, turn.text) for i, turn in enumerate(parse_transcript(text))]
    assert to_transcript(back) == text
    # Consecutive replies merge into one; everything else comes back as written.
    merged: list[tuple[str, str]] = []
    for role, content in turns:
        if merged and role == "assistant" and merged[-1][0] == "assistant":
            merged[-1] = (role, merged[-1][1] + "\n\n" + content)
        else:
            merged.append((role, content))
    assert [(m.role, m.text) for m in back] == merged


def test_tool_line_picks_the_key_argument_and_truncates() -> None:
    assert tool_line("Bash", {"command": "ls -la src", "description": "List"}) == "[tool: Bash — ls -la src]"
    assert tool_line("shell", '{"command": ["bash", "-lc", "pytest -q"]}') == "[tool: shell — pytest -q]"
    assert tool_line("Read", {"file_path": "/a/b.py"}) == "[tool: Read — /a/b.py]"
    assert tool_line(None, None) == "[tool: tool]"
    long = tool_line("Bash", {"command": "echo " + "x" * 500})
    assert len(long) < 140 and long.endswith("…]")
    assert "\n" not in tool_line("Write", {"content": "line1\nline2"})


def test_fill_times_prefers_previous_then_next() -> None:
    t1, t2 = T0, T0.replace(hour=1)
    assert fill_times([None, t1, None, t2], T0.replace(year=2000)) == [
        (t1, "next message"),
        (t1, None),
        (t1, "previous message"),
        (t2, None),
    ]
    assert fill_times([None], t2) == [(t2, "conversation time")]
