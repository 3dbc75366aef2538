from __future__ import annotations

from datetime import UTC, datetime
from pathlib import Path

from threadkeep.readers import detect_format, read_path, signal_export

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures" / "signal"
EXPORT = FIXTURES / "export"
AYA = EXPORT / "Aya"
PHOTO = "2024-05-29T15-11-00.000_00_bike.jpg"


def test_detects_the_destination_a_chat_folder_and_its_files():
    for path in (EXPORT, AYA, AYA / "data.json", AYA / "chat.md", EXPORT / "Hiking Group"):
        assert detect_format(path).NAME == "signal", path
    assert not signal_export.detect(FIXTURES.parent / "transcript" / "notes.md")
    assert not signal_export.detect(FIXTURES.parent / "claude_code" / "session.jsonl")


def test_data_json_and_chat_md_read_the_same_messages():
    from_json = read_path(AYA / "data.json")
    from_markdown = read_path(AYA / "chat.md")
    assert from_json.skipped == [] and from_markdown.skipped == []
    shown = [(m.sent_at, m.sender, m.kind, m.text, m.recalled) for m in from_json.messages]
    assert shown == [(m.sent_at, m.sender, m.kind, m.text, m.recalled) for m in from_markdown.messages]
    assert shown == [
        (datetime(2024, 5, 29, 15, 4, tzinfo=UTC), "Me", "text", "Is the bike still for sale?", False),
        (datetime(2024, 5, 29, 15, 10, 12, tzinfo=UTC), "Aya", "text", "Yes! 120 and it's yours", False),
        (datetime(2024, 5, 29, 15, 11, tzinfo=UTC), "Aya", "image", f"[image] {PHOTO}", False),
        (datetime(2024, 5, 29, 15, 20, tzinfo=UTC), "Me", "text", "", True),
        (datetime(2024, 5, 29, 18, 0, tzinfo=UTC), "Me", "system", "Outgoing voice call (accepted, 2m 3s)", False),
        (datetime(2024, 5, 29, 18, 5, tzinfo=UTC), "Aya", "image", "[image] sticker 🚲", False),
    ]
    reply = from_json.messages[1]
    assert reply.metadata["quote"] == "Is the bike still for sale?"
    assert reply.metadata["reactions"] == [["Me", "👍"]] == from_markdown.messages[1].metadata["reactions"]


def test_destination_folder_reads_each_chat_once():
    result = read_path(EXPORT)
    assert result.skipped == []
    assert result.ignored == {"signal chat.md rendering of data.json": 1}
    kinds = {chat.ref: (chat.kind, chat.metadata["file"]) for chat in result.conversations}
    assert kinds == {"signal:Aya": ("direct", "data.json"), "signal:Hiking Group": ("group", "chat.md")}
    hiking = [message for message in result.messages if message.conversation == "signal:Hiking Group"]
    assert [(message.sender, message.text) for message in hiking] == [
        ("Me", "How is everyone?"),
        ("Aya", "We're great!\nSecond line from Aya"),
        ("Jim", "I'm not."),
        ("Jim", "[file] route.gpx"),
    ]
    assert hiking[0].sent_at == datetime(2019, 5, 29, 15, 4, tzinfo=UTC)


def test_bad_records_are_reported_with_their_lines(tmp_path: Path):
    chat = tmp_path / "Bo"
    chat.mkdir()
    (chat / "data.json").write_text(
        '{"date": "2024-01-01T10:00:00", "sender": "Bo", "body": "ok  "}\n'
        '{"date": "yesterday", "sender": "Bo", "body": "x"}\n'
        '{"date": "2024-01-01T10:01:00", "sender": "", "body": "x"}\n'
        '{"date": "2024-01-01T10:02:00", "sender": "Bo", "body"\n',
        encoding="utf-8",
    )
    result = signal_export.read(chat)
    assert [message.text for message in result.messages] == ["ok"]
    assert [skip.line for skip in result.skipped] == [2, 3, 4]


def test_signalbackup_tools_txt_export():
    folder = FIXTURES / "backup_txt"
    path = folder / "Climbing (_id7).txt"
    assert detect_format(path).NAME == "signal"
    assert detect_format(folder).NAME == "signal"
    result = read_path(folder)
    (conversation,) = result.conversations
    assert (conversation.ref, conversation.kind) == ("signal:Climbing", "group")
    assert [(message.sender, message.kind, message.text) for message in result.messages] == [
        ("system", "system", "Aya created the group."),
        ("Aya", "text", "Who is in for Sunday?"),
        ("Jim", "text", "me, but only after 10\nand I need a rope"),
        ("Me", "image", "[image] crag-map.jpg"),
        ("Me", "text", "the crag (south side)"),  # parentheses that are not a reaction list stay
        ("Jim", "voice", "[voice]"),
    ]
    assert result.messages[1].metadata["reactions"] == [["Jim", "👍"], ["Me", "❤️"]]
    assert result.messages[0].sent_at == datetime(2024, 3, 2, 9, 0, 5, tzinfo=UTC)
    assert [(skip.line, skip.reason) for skip in result.skipped] == [
        (8, "bad date/time (day is out of range for month)")
    ]
