from __future__ import annotations

from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest

from threadkeep.readers import detect_format, read_path, telegram

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures" / "telegram"
CHAT = FIXTURES / "ChatExport_2024-02-01"


@pytest.fixture(scope="module")
def result():
    return read_path(CHAT)


def by_id(result):
    return {message.id: message for message in result.messages}


def test_detects_single_chat_account_and_folder():
    assert detect_format(CHAT).NAME == "telegram"
    assert detect_format(CHAT / "result.json").NAME == "telegram"
    assert detect_format(FIXTURES / "account" / "result.json").NAME == "telegram"
    assert not telegram.detect(FIXTURES.parent / "discord" / "dm.json")
    assert not telegram.detect(FIXTURES.parent / "slack" / "workspace" / "channels.json")


def test_counts_speakers_first_and_last(result):
    assert len(result.messages) == 12
    (conversation,) = result.conversations
    assert (conversation.ref, conversation.title, conversation.kind) == ("1712345678", "Backend Team", "group")
    speakers = {(message.sender, message.sender_name) for message in result.messages if not message.is_system}
    assert speakers == {
        ("user1001", "Alice Archer"),
        ("user1002", "Bob Builder"),
        ("user1003", "陈伟"),
        ("Deleted Account", "Deleted Account"),  # `from` without `from_id`: read under the name, flagged
    }
    first = result.messages[0]
    assert (first.kind, first.role, first.sender) == ("system", "system", "user1001")
    assert first.text == "Alice Archer invite members Bob Builder, 陈伟"
    assert first.sent_at == datetime(2024, 2, 1, 8, 55, tzinfo=UTC)
    # The one message with only the offset-less local `date` is read as UTC and flagged, so it sorts last.
    last = result.messages[-1]
    assert last.text == "Old export without unixtime"
    assert last.sent_at == datetime(2024, 2, 1, 12, 40, tzinfo=UTC)
    assert last.metadata["time_zone_unknown"] is True


def test_unixtime_wins_over_local_date(result):
    message = by_id(result)["1712345678:2"]
    # `date` says 12:00 (Moscow wall clock); date_unixtime says 09:00 UTC.
    assert message.sent_at == datetime(2024, 2, 1, 9, 0, tzinfo=UTC)
    # ... and is kept at the exporting machine's offset, so it reads 12:00 as Telegram showed it.
    assert (message.sent_at.hour, message.sent_at.utcoffset()) == (12, timedelta(hours=3))


def test_entities_mentions_and_links(result):
    message = by_id(result)["1712345678:2"]
    assert message.text == (
        "The staging deploy fails on migrations, @Bob Builder and @chenwei see the build log "
        "(https://ci.example.com/build/88)"
    )
    assert message.mentions == ("user1002",)
    assert message.metadata["mentioned_usernames"] == ["chenwei"]


def test_replies_and_edits(result):
    messages = by_id(result)
    reply = messages["1712345678:3"]
    assert reply.reply_to == "1712345678:2"
    assert reply.edited_at == datetime(2024, 2, 1, 9, 3, tzinfo=UTC)
    assert "reply_to_missing" not in reply.metadata
    orphan = messages["1712345678:6"]
    assert (orphan.reply_to, orphan.metadata["reply_to_missing"]) == ("1712345678:999", True)
    cjk = messages["1712345678:13"]
    assert (cjk.text, cjk.reply_to) == ("好的，我把超时调到十分钟", "1712345678:3")


def test_media_placeholders(result):
    messages = by_id(result)
    assert (messages["1712345678:4"].kind, messages["1712345678:4"].text) == (
        "image",
        "[image] photo_1@01-02-2024_12-05-00.jpg\n截图：迁移卡在第三步",
    )
    assert (messages["1712345678:5"].kind, messages["1712345678:5"].text) == (
        "voice",
        "[voice] audio_1@01-02-2024_12-10-00.ogg",
    )
    assert (messages["1712345678:7"].kind, messages["1712345678:7"].text) == ("image", "[image] sticker 👍")


def test_forum_topic_becomes_platform_thread(result):
    messages = by_id(result)
    assert messages["1712345678:8"].is_system
    in_topic = messages["1712345678:9"]
    assert (in_topic.platform_thread, in_topic.reply_to) == ("8", None)


def test_bad_records_are_skipped(result):
    reasons = [skip.reason for skip in result.skipped]
    assert reasons == [
        "chat 1712345678 message 11: expected an object, got str",
        "chat 1712345678 message 12: text is int, expected a string or a list",
    ]


def test_account_export_reads_chats_and_left_chats():
    result = read_path(FIXTURES / "account")
    kinds = {conversation.ref: (conversation.title, conversation.kind) for conversation in result.conversations}
    assert kinds == {
        "1002": ("Bob Builder", "direct"),
        "1001": ("Saved Messages", "direct"),
        "1500000000": ("Old Ops Channel", "group"),
    }
    left = next(conversation for conversation in result.conversations if conversation.ref == "1500000000")
    assert left.metadata["left"] is True
    assert len(result.messages) == 5
    messages = by_id(result)
    assert messages["1002:502"].reply_to == "1002:501"
    assert messages["1002:503"].text == "Bob Builder phone call"
    assert messages["1001:10"].text == "[file] runbook.pdf\nrunbook for migrations"
    assert result.messages[0].sender == "channel1500000000"
    assert [skip.reason for skip in result.skipped] == ["chats.list[2]: not a chat with a messages list"]


def test_truncated_export_keeps_messages_before_the_break():
    result = read_path(FIXTURES / "truncated" / "result.json")
    (message,) = result.messages
    assert message.text == "the only message that survived"
    (skip,) = result.skipped
    assert skip.line == 21
    assert "rest of the array lost" in skip.reason


@pytest.mark.parametrize(
    ("content", "reason"),
    [
        (b"", "file is empty"),
        (b"\xef\xbb\xbf   ", "file is empty"),
        (b'{"name": "x", "type": "private_group", "id": 1, "messages": 5}', "messages is int, expected a list"),
        (b'{"about": "x", "chats": {"list": "nope"}}', "chats.list is missing or not a list"),
        (b'{"about": "x", "chats": {"list": [', "not valid JSON"),
    ],
)
def test_broken_files_never_crash(tmp_path: Path, content: bytes, reason: str):
    path = tmp_path / "result.json"
    path.write_bytes(content)
    result = telegram.read(path)
    assert result.messages == []
    assert any(reason in skip.reason for skip in result.skipped)


def test_old_account_export_without_string_sender_ids():
    """Exports before Telegram Desktop 2.x: numeric `from_id`, `from` alone, channel posts with no sender."""
    result = read_path(FIXTURES / "old_account")
    assert [conversation.ref for conversation in result.conversations] == ["2002", "3001", "4001"]
    assert [(m.id, m.sender, m.sender_name) for m in result.messages] == [
        ("2002:11", "user2001", "Dana"),
        ("2002:12", "user2002", "Erik"),
        ("2002:13", "user2002", "Erik"),
        ("3001:21", "Femi", "Femi"),
        ("3001:22", "Dana", "Dana"),
        ("4001:31", "channel4001", "Trail News"),
    ]
    first, reply = result.messages[0], result.messages[1]
    assert first.text == "Is the printer on the 3rd floor fixed?"
    assert first.edited_at is None  # the epoch these exports wrote on unedited messages
    assert first.metadata["time_zone_unknown"] is True
    assert reply.mentions == ("user2001",) and reply.reply_to == "2002:11"
    assert result.messages[3].metadata["sender_id_missing"] is True
    assert result.messages[-1].metadata["author"] == "Gus"
    assert [str(skip) for skip in result.skipped] == [
        f"{FIXTURES / 'old_account' / 'result.json'}: chat 3001 message 2: no sender (from_id and from are missing)"
    ]


def test_deep_nesting_is_a_skip_with_its_line(tmp_path: Path):
    # Cut short after the deep value, so the salvage parse (a few frames deeper than the first) meets it too.
    path = tmp_path / "result.json"
    reasons = set()
    for depth in range(700, 1001):
        nested = "[" * depth + "]" * depth
        path.write_text(
            '{"name": "x", "type": "private_group", "id": 1,\n"x": ' + nested + ',\n"messages": [{"id": 1, "type": '
            '"message", "date": "2024-01-01T00:00:00", "from": "a", "from_id": "user1", "text": "a"},'
        )
        result = telegram.read(path)
        assert result.skipped and all(skip.line is not None for skip in result.skipped), depth
        reasons.update(skip.reason for skip in result.skipped)
    assert "JSON nested too deeply to read" in reasons
