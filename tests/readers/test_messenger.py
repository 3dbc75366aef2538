from __future__ import annotations

import json
from datetime import UTC, datetime
from pathlib import Path

from threadkeep.readers import detect_format, messenger, read_path

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures" / "messenger"
INBOX = FIXTURES / "messages" / "inbox"
DIRECT = INBOX / "zofiakowalska_1234567890"
GROUP = INBOX / "climbinggroup_987654321"


def test_detects_files_threads_and_the_export_folder():
    for path in (FIXTURES, INBOX, DIRECT, DIRECT / "message_1.json"):
        assert detect_format(path).NAME == "messenger", path
    for path in (FIXTURES.parent / "telegram" / "account", FIXTURES.parent / "discord" / "dm.json"):
        assert not messenger.detect(path), path


def test_thread_files_are_read_together_in_time_order_with_text_repaired():
    result = read_path(DIRECT)
    assert result.skipped == []
    (conversation,) = result.conversations
    assert (conversation.ref, conversation.title, conversation.kind) == (
        "messenger:inbox/zofiakowalska_1234567890",
        "Zofia Kowalska",
        "direct",
    )
    assert conversation.metadata["platform"] == "facebook"
    assert [(message.sender, message.kind, message.text) for message in result.messages] == [
        ("Tom Baker", "system", "Tom Baker call, 65 s"),
        ("Zofia Kowalska", "text", "Cześć Tom, kiedy płynie prom?"),
        ("Tom Baker", "link", "Tom sent an attachment.\nhttps://ferries.example.com/timetable"),
        ("Tom Baker", "image", "[image] 386_1.jpg\nthe ferry timetable"),
        ("Tom Baker", "text", ""),
        ("Zofia Kowalska", "text", "Dzięki! 😍"),
    ]
    assert result.messages[0].sent_at == datetime(2023, 11, 14, 16, 40, tzinfo=UTC)
    assert result.messages[4].recalled
    assert result.messages[-1].metadata["reactions"] == [{"reaction": "❤", "actor": "Tom Baker"}]
    assert len({message.id for message in result.messages}) == 6


def test_group_events_and_bad_records_from_the_whole_export():
    result = read_path(FIXTURES)
    assert {conversation.ref: conversation.kind for conversation in result.conversations} == {
        "messenger:inbox/zofiakowalska_1234567890": "direct",
        "messenger:inbox/climbinggroup_987654321": "group",
    }
    group = [message for message in result.messages if message.conversation.endswith("987654321")]
    assert [(message.sender, message.is_system, message.text) for message in group] == [
        ("Tom Baker", True, "Tom Baker added Jörg Müller"),
        ("Ana Lima", False, "Saturday 9:00 at the gym?"),
    ]
    assert [str(skip) for skip in result.skipped] == [
        f"{GROUP / 'message_1.json'}: message 2: timestamp_ms is str, expected epoch milliseconds"
    ]


def test_a_file_alone_and_broken_files(tmp_path: Path):
    alone = read_path(DIRECT / "message_2.json")
    assert [message.text for message in alone.messages] == ["Tom Baker call, 65 s", "Cześć Tom, kiedy płynie prom?"]
    broken = tmp_path / "message_1.json"
    broken.write_text('{"participants": [{"name": "A"}], "messages": [{"sender_name": "A", ', encoding="utf-8")
    result = messenger.read(broken)
    assert result.messages == []
    assert result.skipped[0].line == 1 and "not valid JSON" in result.skipped[0].reason
    instagram = tmp_path / "your_instagram_activity" / "messages" / "inbox" / "kai_42"
    instagram.mkdir(parents=True)
    (instagram / "message_1.json").write_text(
        json.dumps(
            {
                "participants": [{"name": "kai"}, {"name": "me"}],
                "messages": [{"sender_name": "kai", "timestamp_ms": 1700000000000, "content": "Liked a message"}],
                "title": "kai",
                "thread_path": "inbox/kai_42",
            }
        ),
        encoding="utf-8",
    )
    result = read_path(tmp_path / "your_instagram_activity")
    assert result.conversations[0].metadata["platform"] == "instagram"
    assert result.conversations[0].kind == "direct"


def test_fix_mojibake_leaves_correct_text_alone():
    assert messenger.fix_mojibake("Cze\u00c5\u009b\u00c4\u0087") == "Cześć"
    assert messenger.fix_mojibake("Cześć") == "Cześć"
    assert messenger.fix_mojibake("plain") == "plain"
