from __future__ import annotations

from datetime import UTC, datetime
from pathlib import Path

import pytest

from threadkeep.readers import detect_format, line, read_path

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures" / "line"
ENGLISH = FIXTURES / "[LINE] Chat with Bob.txt"
JAPANESE = FIXTURES / "ハイキング.txt"
OLD = FIXTURES / "old_export.txt"


def test_detects_line_exports_but_not_other_chat_text():
    for path in (ENGLISH, JAPANESE, OLD):
        assert detect_format(path).NAME == "line", path
    fixtures = FIXTURES.parent
    for path in (
        fixtures / "whatsapp" / "WhatsApp Chat with Project Team.txt",
        fixtures / "wechat" / "twelve_hour.txt",
        fixtures / "irc" / "notes.log",
        fixtures / "transcript" / "chat.txt",
    ):
        assert not line.detect(path), path


def test_english_direct_chat_with_bom_crlf_quotes_and_media():
    result = read_path(ENGLISH)
    assert result.skipped == []
    (conversation,) = result.conversations
    assert (conversation.ref, conversation.title, conversation.kind) == ("line:Bob", "Bob", "direct")
    assert conversation.metadata["timezone"] == "unknown (local time read as UTC)"
    assert [(message.sender, message.kind, message.text) for message in result.messages] == [
        ("Alice", "text", "Morning! Is the studio booked for Saturday?"),
        ("Bob", "text", "Yes, 10 to 12"),
        ("Bob", "image", "[image]"),
        ("Alice", "text", "Bring the cables:\n- XLR x2\n- the long jack"),
        ("Bob", "text", "ok"),
        ("Bob", "text", "Bob unsent a message."),
        ("Alice", "image", "[image]"),
        ("Bob", "voice", "[voice]"),
    ]
    assert result.messages[0].sent_at == datetime(2023, 9, 15, 9, 15, tzinfo=UTC)
    unsent = result.messages[5]
    assert unsent.recalled
    assert unsent.sent_at == datetime(2023, 9, 16, 0, 5, tzinfo=UTC)  # written 24:05 under the 15th


def test_japanese_group_with_events_twelve_hour_times_and_a_bad_date():
    result = read_path(JAPANESE)
    (conversation,) = result.conversations
    assert (conversation.title, conversation.kind) == ("ハイキング", "group")
    assert [(message.sent_at.strftime("%H:%M"), message.sender) for message in result.messages] == [
        ("09:05", "佐藤"),
        ("09:06", "system"),
        ("12:10", "鈴木"),  # 午後12:10 is ten past noon
        ("13:30", "田中"),
    ]
    assert result.messages[1].is_system
    assert [(skip.line, skip.reason) for skip in result.skipped] == [
        (9, "bad date line (month must be in 1..12); its messages are left out"),
        (10, "message under a date line that could not be read"),
    ]


def test_old_space_separated_export_without_header():
    result = read_path(OLD)
    assert [(message.sender, message.text) for message in result.messages] == [
        ("foo", "hello world\ntest"),
        ("bar", "second message"),
    ]
    assert result.messages[0].sent_at == datetime(2017, 9, 2, 12, 0, tzinfo=UTC)


@pytest.mark.parametrize(
    ("date_line", "time", "expected"),
    [
        ("2023/9/15周五", "下午9:05", datetime(2023, 9, 15, 21, 5, tzinfo=UTC)),
        ("Fri, 09/15/2023", "9:05PM", datetime(2023, 9, 15, 21, 5, tzinfo=UTC)),
        ("2023.09.15 Friday", "21:05", datetime(2023, 9, 15, 21, 5, tzinfo=UTC)),
        ("2023/09/15（金）", "12:05AM", datetime(2023, 9, 15, 0, 5, tzinfo=UTC)),
    ],
)
def test_date_and_time_variants(tmp_path: Path, date_line: str, time: str, expected: datetime):
    path = tmp_path / "chat.txt"
    path.write_text(f"[LINE] Chat history with Kim\n\n{date_line}\n{time}\tKim\thi\n", encoding="utf-8")
    (message,) = line.read(path).messages
    assert (message.sender, message.text, message.sent_at) == ("Kim", "hi", expected)


def test_empty_and_headerless_garbage(tmp_path: Path):
    empty = tmp_path / "empty.txt"
    empty.write_text("", encoding="utf-8")
    assert line.read(empty).skipped[0].reason == "file is empty"
    garbage = tmp_path / "notes.txt"
    garbage.write_text("[LINE] Chat history with Kim\nnothing dated here\n", encoding="utf-8")
    result = line.read(garbage)
    assert result.messages == []
    assert [skip.reason for skip in result.skipped] == [
        "text before the first dated LINE message",
        "no dated LINE messages found",
    ]
