from __future__ import annotations

from datetime import UTC, datetime, timedelta, timezone
from pathlib import Path

import pytest

from threadkeep.readers import detect_format, discord, read_path

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures" / "discord"
EXPORT = FIXTURES / "export"
GENERAL = EXPORT / "Acme - dev - general [1100000000000000001].json"
THREAD = EXPORT / "Acme - dev - general - staging migration [1200000000000000012].json"


@pytest.fixture(scope="module")
def result():
    return read_path(EXPORT)


def by_id(result):
    return {message.id: message for message in result.messages}


def test_detects_channel_files_and_folders_only():
    assert detect_format(EXPORT).NAME == "discord"
    assert detect_format(GENERAL).NAME == "discord"
    assert detect_format(FIXTURES / "dm.json").NAME == "discord"
    assert not discord.detect(FIXTURES.parent / "telegram" / "account" / "result.json")
    assert not discord.detect(FIXTURES.parent / "slack" / "workspace" / "general" / "2024-01-15.json")
    assert not discord.detect(FIXTURES.parent / "slack" / "workspace")


def test_counts_speakers_first_and_last(result):
    assert len(result.messages) == 11
    assert [conversation.ref for conversation in result.conversations] == ["1100000000000000001", "1100000000000000002"]
    general = result.conversations[0]
    assert (general.title, general.kind) == ("#general", "group")
    assert general.metadata["guild_name"] == "Acme"
    speakers = {(message.sender, message.sender_name) for message in result.messages if not message.is_system}
    assert speakers == {
        ("100000000000000001", "Alice"),
        ("200000000000000002", "Bob"),
        ("300000000000000003", "陈伟"),
    }
    first, last = result.messages[0], result.messages[-1]
    assert (first.kind, first.role, first.text) == ("system", "system", "Joined the server.")
    assert first.sent_at == datetime(2024, 3, 1, 8, 55, tzinfo=UTC)
    assert last.text == "kept from a file the exporter never finished"
    assert last.conversation == "1100000000000000002"


def test_offsets_are_kept_and_ordering_uses_the_instant(result):
    alice = by_id(result)["1200000000000000011"]
    assert alice.sent_at.utcoffset() == timedelta(hours=2)
    assert alice.sent_at == datetime(2024, 3, 1, 9, 0, tzinfo=UTC)
    assert alice.edited_at == datetime(2024, 3, 1, 11, 2, 30, tzinfo=timezone(timedelta(hours=2)))
    assert result.messages[1].id == "1200000000000000011"  # 09:00Z sorts before Bob's 09:05Z reply


def test_replies_mentions_and_attachments(result):
    messages = by_id(result)
    alice = messages["1200000000000000011"]
    assert alice.mentions == ("200000000000000002",)
    assert alice.text.endswith("@Bob can you take a look?")
    bob = messages["1200000000000000012"]
    assert bob.reply_to == "1200000000000000011"
    assert (bob.kind, bob.text) == ("file", "[file] migrate.log\nLooking now, here is the log")
    chen = messages["1200000000000000015"]
    # Raw <@id> markup (export made with markdown formatting off) is resolved from the mentions list.
    assert chen.text == "[image] screenshot.png\n我看了日志，@Alice 是超时的问题"
    assert chen.mentions == ("100000000000000001",)
    assert chen.reply_to == "1199999999999999999"
    assert chen.metadata["reply_to_missing"] is True


def test_system_and_bot_messages(result):
    messages = by_id(result)
    assert messages["1200000000000000013"].is_system
    assert messages["1200000000000000013"].metadata["thread_id"] == "1200000000000000012"
    pin = messages["1200000000000000016"]
    assert (pin.kind, pin.reply_to, pin.metadata["reference"]) == ("system", None, "1200000000000000015")
    bot = messages["1200000000000000014"]
    assert (bot.role, bot.sender_name, bot.metadata["bot"]) == ("system", "DeployBot", True)


def test_thread_file_joins_parent_channel(result):
    messages = by_id(result)
    in_thread = [message for message in result.messages if message.platform_thread == "1200000000000000012"]
    assert [message.id for message in in_thread] == [
        "1200000000000000012",  # the message the thread was started from
        "1200000000000000020",
        "1200000000000000021",
    ]
    assert {message.conversation for message in in_thread} == {"1100000000000000001"}
    assert messages["1200000000000000021"].reply_to == "1200000000000000020"
    assert "reply_to_missing" not in messages["1200000000000000021"].metadata


def test_thread_file_alone_names_its_parent():
    alone = read_path(THREAD)
    (conversation,) = alone.conversations
    assert (conversation.ref, conversation.title) == ("1100000000000000001", "#general")
    assert len(alone.messages) == 2
    assert all(message.platform_thread == "1200000000000000012" for message in alone.messages)


def test_bad_records_are_skipped_with_reasons(result):
    reasons = [str(skip) for skip in result.skipped]
    assert any("message 7: author.id is missing" in reason for reason in reasons)
    assert any("message 8: attachments is dict" in reason for reason in reasons)
    assert any("message 8: timestampEdited" in reason for reason in reasons)
    assert any("random [1100000000000000002].json:37" in reason for reason in reasons)
    kept = by_id(result)["1200000000000000018"]
    assert (kept.text, kept.edited_at) == ("Thanks all, closing this out", None)


def test_direct_messages_and_voice():
    dm = read_path(FIXTURES / "dm.json")
    (conversation,) = dm.conversations
    assert (conversation.kind, conversation.title) == ("direct", "bob")
    (message,) = dm.messages
    assert (message.kind, message.text) == ("voice", "[voice] voice-message.ogg\nHello")
    assert message.sent_at == datetime(2021, 10, 12, 22, 47, 14, 472000, tzinfo=UTC)


@pytest.mark.parametrize(
    ("content", "reason"),
    [
        (b"", "file is empty"),
        (b'{"guild": {"id": "1"}, "channel": {"name": "x"}, "messages": []}', "channel.id is missing"),
        (b'{"guild": {"id": "1"}, "channel": {"id": "5"}, "messages": {"oops": 1}}', "messages is dict"),
        (b"[1, 2]", "expected a JSON object"),
        (b'{"guild": nope', "not valid JSON"),
    ],
)
def test_broken_files_never_crash(tmp_path: Path, content: bytes, reason: str):
    path = tmp_path / "channel.json"
    path.write_bytes(content)
    result = discord.read(path)
    assert result.messages == []
    assert any(reason in skip.reason for skip in result.skipped)


def test_deep_nesting_is_a_skip_with_its_line(tmp_path: Path):
    # Cut short after the deep value, so the salvage parse (a few frames deeper than the first) meets it too.
    path = tmp_path / "channel.json"
    reasons = set()
    for depth in range(700, 1001):
        nested = "[" * depth + "]" * depth
        path.write_text(
            '{"guild": {"id": "1", "name": "g"}, "channel": {"id": "2", "type": "GuildTextChat", "name": "c"},\n'
            '"x": ' + nested + ',\n"messages": [{"id": "3", "type": "Default", "timestamp": '
            '"2024-01-01T00:00:00+00:00", "content": "hi", "author": {"id": "4", "name": "a"}},'
        )
        result = discord.read(path)
        assert result.skipped and all(skip.line is not None for skip in result.skipped), depth
        reasons.update(skip.reason for skip in result.skipped)
    assert "JSON nested too deeply to read" in reasons
