from __future__ import annotations

from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest

from threadkeep.readers import detect_format, irc, read_path

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures" / "irc"
IRSSI = FIXTURES / "#python.2004-11-15.log"
WEECHAT = FIXTURES / "weechat.log"
UNDATED = FIXTURES / "notes.log"


def test_detects_irc_logs_but_not_other_text():
    for path in (IRSSI, WEECHAT, UNDATED):
        assert detect_format(path).NAME == "irc", path
    fixtures = FIXTURES.parent
    for path in (
        fixtures / "whatsapp" / "WhatsApp Chat with Project Team.txt",
        fixtures / "whatsapp" / "WhatsApp Chat - Familie" / "_chat.txt",
        fixtures / "wechat" / "项目群.txt",
        fixtures / "wechat" / "direct_utf8_bom.txt",
    ):
        assert not irc.detect(path), path


def test_irssi_log_with_day_change():
    result = read_path(IRSSI)
    (conversation,) = result.conversations
    assert (conversation.ref, conversation.title, conversation.kind) == ("irc:#python", "#python", "group")
    assert conversation.metadata["date"] == "file name"
    assert len(result.messages) == 8
    speakers = [message.sender for message in result.messages if not message.is_system]
    assert speakers == ["alice", "bob", "alice", "chen", "alice"]
    first, last = result.messages[0], result.messages[-1]
    assert (first.kind, first.role) == ("system", "system")
    assert first.text == "alice [~alice@host.example.org] has joined #python"
    assert first.sent_at == datetime(2004, 11, 15, 23, 50, tzinfo=UTC)
    assert (last.text, last.is_system) == ("chen is now known as chenwei", True)
    assert last.sent_at == datetime(2004, 11, 16, 0, 7, tzinfo=UTC)
    assert result.ignored == {"irc log marker": 3}
    assert result.skipped == []


def test_addressing_actions_and_mode_prefixes():
    messages = read_path(IRSSI).messages
    bob = messages[2]
    assert (bob.sender, bob.text, bob.mentions) == ("bob", "alice: probably the lock, check the migration", ("alice",))
    action = messages[3]
    assert (action.sender, action.kind, action.text, action.metadata["action"]) == (
        "alice",
        "text",
        "* alice checks the migration",
        True,
    )
    chen = messages[4]
    assert (chen.sender, chen.text, chen.mentions) == ("chen", "bob, 我也遇到过", ("bob",))
    thanks = messages[5]
    assert thanks.mentions == ("bob",)
    assert thanks.sent_at == datetime(2004, 11, 16, 0, 5, tzinfo=UTC)


def test_weechat_lines_carry_their_dates():
    result = read_path(WEECHAT)
    (conversation,) = result.conversations
    assert (conversation.ref, conversation.metadata["date"]) == ("irc:#ops", "dates on the lines")
    assert [message.sender for message in result.messages] == ["system", "alice", "bob", "alice", "system", "system"]
    assert result.messages[1].text == "is prod down?"
    assert result.messages[2].mentions == ("alice",)
    assert result.messages[2].sent_at == datetime(2023, 5, 1, 9, 2, 30, tzinfo=UTC)
    assert result.messages[3].metadata["action"] is True
    assert result.messages[-1].text == "bob (~bob@host.example.org) has quit (Ping timeout)"


def test_undated_log_says_so_and_rolls_over_midnight():
    result = read_path(UNDATED)
    (conversation,) = result.conversations
    assert conversation.metadata["date"].startswith("unknown")
    assert conversation.metadata["midnights_inferred"] == 1
    assert conversation.kind == "group"  # joins happen in channels
    assert len(result.messages) == 5
    assert result.messages[0].sent_at == datetime(1970, 1, 1, 9, 0, tzinfo=UTC)
    assert result.messages[1].mentions == ("dave",)
    assert result.messages[2].is_system and result.messages[2].text.startswith("Joins: frank")
    assert result.messages[-1].sent_at == datetime(1970, 1, 2, 0, 1, tzinfo=UTC)
    assert [(skip.line, skip.reason) for skip in result.skipped] == [
        (6, "not an IRC log line"),
        (7, "bad time '25:99' (hour must be in 0..23)"),
    ]


def test_address_to_unknown_nick_is_not_a_mention(tmp_path: Path):
    path = tmp_path / "2024-03-01.log"
    path.write_text("[10:00] <ann> note: deploys are frozen\n[10:01] <bob> ann: ok\n", encoding="utf-8")
    result = read_path(path)
    assert [message.mentions for message in result.messages] == [(), ("ann",)]
    assert result.messages[0].sent_at == datetime(2024, 3, 1, 10, 0, tzinfo=UTC)
    assert result.conversations[0].kind == "direct"


@pytest.mark.parametrize("content", [b"", b"\xef\xbb\xbf\n\n"])
def test_empty_files(tmp_path: Path, content: bytes):
    path = tmp_path / "empty.log"
    path.write_bytes(content)
    assert not irc.detect(path)
    assert irc.read(path).skipped[0].reason == "file is empty"


def test_nicks_that_only_joined_can_be_addressed(tmp_path: Path):
    path = tmp_path / "2024-03-02.log"
    path.write_text(
        "[10:00] -!- zed [~z@host] has joined #x\n[10:01] <ann> zed: welcome\n"
        "[10:02] *** Joins: yan (~y@host)\n[10:03] <ann> yan, hi\n",
        encoding="utf-8",
    )
    result = read_path(path)
    assert [message.mentions for message in result.messages if not message.is_system] == [("zed",), ("yan",)]
    assert result.conversations[0].ref == "irc:#x"


def test_twelve_hour_log_dated_by_its_folders_with_untimed_lines():
    """Early irclogs.ubuntu.com: `YYYY/MM/DD/#chan.txt`, 12-hour times without AM/PM, untimed `===` lines."""
    result = read_path(FIXTURES / "ubuntu" / "2005" / "06" / "27" / "#ubuntu.txt")
    assert result.skipped == []
    (conversation,) = result.conversations
    assert (conversation.ref, conversation.metadata["date"]) == ("irc:#ubuntu", "folder names")
    assert conversation.metadata["clock"].startswith("12-hour")
    assert conversation.metadata["midnights_inferred"] == 1
    day = datetime(2005, 6, 27, tzinfo=UTC)
    assert [(message.sent_at - day, message.sender) for message in result.messages] == [
        (timedelta(minutes=18), "usual"),  # [12:18] just after midnight, not noon
        (timedelta(minutes=18), "|trey|"),
        (timedelta(minutes=18), "system"),  # untimed: the time of the line before
        (timedelta(minutes=19), "Matt|"),
        (timedelta(minutes=19), "|trey|"),
        (timedelta(minutes=59), "kim"),
        (timedelta(hours=1), "Matt|"),  # one minute later, the same day
        (timedelta(hours=1), "system"),
        (timedelta(hours=11, minutes=58), "usual"),
        (timedelta(hours=12, minutes=2), "Matt|"),  # past noon
        (timedelta(hours=23, minutes=59), "kim_"),
        (timedelta(days=1, minutes=1), "usual"),  # past midnight
    ]
    messages = result.messages
    assert messages[2].is_system and messages[2].text.startswith("kim [~kim@host.example.net]  has joined")
    assert (messages[4].text, messages[4].metadata["action"]) == ("* |trey| scrolls up", True)
    assert messages[7].is_system and messages[7].text == "kim is now known as kim_"
    # usual spoke on the line before: present, so the comma form addresses them.
    assert messages[1].mentions == ("usual",)
    assert messages[3].mentions == ("|trey|",)
    assert messages[6].mentions == ("kim",)


def test_comma_address_needs_the_nick_present_before(tmp_path: Path):
    path = tmp_path / "#ubuntu.2005-06-27.log"
    path.write_text(
        "[12:17] <|trey|> usual, quite stable though  :)\n[12:18] <usual> a few libs and media\n"
        "[12:19] <bob> usual: which libs?\n[12:20] <bob> usual, thanks\n",
        encoding="utf-8",
    )
    result = read_path(path)
    assert [message.mentions for message in result.messages] == [(), (), ("usual",), ("usual",)]


def test_colon_address_reaches_a_nick_who_speaks_later(tmp_path: Path):
    path = tmp_path / "#ops.2024-03-03.log"
    path.write_text("[10:00] <ann> zed: are you there?\n[10:05] <zed> yes\n", encoding="utf-8")
    assert [message.mentions for message in read_path(path).messages] == [("zed",), ()]


@pytest.mark.parametrize(
    ("name", "expected"),
    [
        ("#chan_20240115.log", (2024, 1, 15)),
        ("chan.2024.01.15.txt", (2024, 1, 15)),
        ("2024-01-15.train-c.ascii.txt", (2024, 1, 15)),
    ],
)
def test_date_from_file_name_shapes(tmp_path: Path, name: str, expected: tuple[int, int, int]):
    path = tmp_path / name
    path.write_text("[10:00] <ann> hi\n[10:01] <bob> ann: hello\n", encoding="utf-8")
    result = read_path(path, format="irc")
    assert {message.sent_at.date().timetuple()[:3] for message in result.messages} == {expected}


def test_times_with_am_pm_are_read_as_written(tmp_path: Path):
    path = tmp_path / "#x.2024-03-04.log"
    path.write_text("[11:59 AM] <ann> lunch?\n[12:01 PM] <bob> ann: yes\n[01:30 PM] <ann> back\n", encoding="utf-8")
    result = read_path(path)
    assert [message.sent_at.strftime("%H:%M") for message in result.messages] == ["11:59", "12:01", "13:30"]
    assert "clock" not in result.conversations[0].metadata


def test_noon_to_one_across_a_day_change_is_no_twelve_hour_evidence(tmp_path: Path):
    path = tmp_path / "#x.log"
    path.write_text(
        "--- Log opened Mon Nov 15 09:00:00 2004\n09:10 <ann> morning\n12:50 <bob> lunch\n"
        "--- Day changed Tue Nov 16 2004\n01:00 <ann> still up\n",
        encoding="utf-8",
    )
    result = read_path(path)
    assert "clock" not in result.conversations[0].metadata
    assert [message.sent_at for message in result.messages] == [
        datetime(2004, 11, 15, 9, 10, tzinfo=UTC),
        datetime(2004, 11, 15, 12, 50, tzinfo=UTC),
        datetime(2004, 11, 16, 1, 0, tzinfo=UTC),
    ]
