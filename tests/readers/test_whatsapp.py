from __future__ import annotations

import zipfile
from datetime import UTC, datetime
from pathlib import Path

import pytest

from threadkeep.readers import detect_format, read_path, whatsapp

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures" / "whatsapp"
ANDROID_US = FIXTURES / "WhatsApp Chat with Project Team.txt"
IOS = FIXTURES / "WhatsApp Chat - Familie"
GERMAN = FIXTURES / "WhatsApp-Chat mit Stammtisch.txt"


def spoken(result):
    return [message for message in result.messages if not message.is_system]


def test_detects_android_ios_and_folders_but_not_other_text():
    for path in (ANDROID_US, IOS, IOS / "_chat.txt", GERMAN, FIXTURES / "ambiguous.txt"):
        assert detect_format(path).NAME == "whatsapp", path
    fixtures = FIXTURES.parent
    for path in (
        fixtures / "wechat" / "项目群.txt",
        fixtures / "wechat" / "direct_utf8_bom.txt",
        fixtures / "irc" / "weechat.log",
        fixtures / "irc" / "notes.log",
        FIXTURES / "empty.txt",
    ):
        assert not whatsapp.detect(path), path


def test_android_us_twelve_hour_clock():
    result = read_path(ANDROID_US)
    (conversation,) = result.conversations
    assert conversation.ref == "whatsapp:Project Team"
    assert (conversation.title, conversation.kind) == ("Project Team", "group")
    assert conversation.metadata["timezone"] == "unknown (local time read as UTC)"
    assert (conversation.metadata["date_order"], conversation.metadata["date_order_basis"]) == (
        "MDY",
        "a second field above 12",
    )
    assert len(result.messages) == 13
    assert len(spoken(result)) == 8
    assert {message.sender for message in spoken(result)} == {"Alice", "Bob", "陈伟"}
    first, last = result.messages[0], result.messages[-1]
    assert first.is_system and first.text.startswith("Messages and calls are end-to-end encrypted.")
    assert first.sent_at == datetime(2023, 12, 30, 20, 58, tzinfo=UTC)
    assert (last.kind, last.text) == ("system", "Dana joined using this group's invite link")
    assert last.sent_at == datetime(2023, 12, 31, 13, 0, tzinfo=UTC)


def test_multi_line_media_deleted_and_edited():
    messages = read_path(ANDROID_US).messages
    alice = messages[3]
    assert (alice.sender, alice.sender_name) == ("Alice", "Alice")
    assert alice.text == "The staging deploy failed again.\nLog says: lock wait timeout\non the users table"
    assert messages[4].mentions == ("Alice",)
    assert messages[5].text == "我也看看，可能是锁的问题"
    assert (messages[6].kind, messages[6].text) == ("file", "[file] (media omitted)")
    assert messages[7].recalled and messages[8].recalled
    subject = messages[9]
    # "Name: " inside quotes must not turn the subject change into a message from `Alice changed the subject...`.
    assert subject.is_system and subject.sender == "system"
    midnight = messages[10]
    assert midnight.sent_at == datetime(2023, 12, 31, 0, 5, tzinfo=UTC)  # 12:05 AM
    assert (midnight.text, midnight.metadata["edited"]) == ("raised the timeout to 10 min, redeploying", True)
    photo = messages[11]
    assert (photo.kind, photo.text) == ("image", "[image] IMG-20231231-WA0001.jpg\ngreen build")
    assert photo.sent_at == datetime(2023, 12, 31, 12, 30, tzinfo=UTC)  # 12:30 PM


def test_ios_folder_with_bom_crlf_and_marks():
    result = read_path(IOS)
    (conversation,) = result.conversations
    assert (conversation.ref, conversation.kind) == ("whatsapp:Familie", "group")
    assert conversation.metadata["date_order"] == "DMY"
    assert len(result.messages) == 9
    first, second = result.messages[:2]
    assert (first.sender, first.role) == ("system", "system")
    assert first.text.startswith("Messages and calls are end-to-end encrypted.")
    assert (second.text, second.is_system) == ("Mama added Papa", True)
    texts = [(message.sender, message.kind, message.text) for message in spoken(result)]
    assert texts[0] == ("Mama", "text", "Who is bringing the raclette?")
    assert texts[1] == ("Papa", "image", "[image] 00000012-PHOTO-2023-12-28-19-03-44.jpg")
    assert texts[2] == ("Papa", "image", "[image] (image omitted)")
    assert texts[-1] == ("Papa", "voice", "[voice] (audio omitted)")
    lena = spoken(result)[3]
    assert (lena.text, lena.mentions) == ("@Mama I will, and the cheese", ("Mama",))
    assert lena.sent_at == datetime(2023, 12, 28, 19, 5, tzinfo=UTC)
    assert spoken(result)[4].recalled
    assert result.messages[-1].sent_at == datetime(2024, 1, 1, 0, 0, 10, tzinfo=UTC)
    (skip,) = result.skipped
    assert skip.line == 8
    assert "31/02/2023" in skip.reason and "1 continuation lines" in skip.reason


def test_german_locale():
    result = read_path(GERMAN)
    (conversation,) = result.conversations
    assert conversation.title == "Stammtisch"
    assert [message.sender for message in result.messages] == ["system", "Jonas", "Mia", "Mia", "Jonas"]
    assert result.messages[2].kind == "file"
    assert result.messages[3].recalled
    assert result.messages[-1].sent_at == datetime(2024, 1, 1, 0, 1, tzinfo=UTC)
    assert result.messages[-1].text == "Frohes neues Jahr!"


def test_ambiguous_dates_are_assumed_and_said_so():
    result = read_path(FIXTURES / "ambiguous.txt")
    conversation = result.conversations[0]
    assert conversation.metadata["date_order"] == "DMY"
    assert conversation.metadata["date_order_basis"].startswith("assumed")
    assert conversation.kind == "direct"
    assert [message.sent_at.date().isoformat() for message in result.messages] == [
        "2024-04-03",
        "2024-04-03",
        "2024-04-05",
    ]


def test_day_first_from_sequence():
    result = read_path(FIXTURES / "sequence.txt")
    assert result.conversations[0].metadata["date_order_basis"] == "the first field went down within a year"
    assert [message.sent_at for message in result.messages] == [
        datetime(2024, 1, 11, 10, 0, tzinfo=UTC),
        datetime(2024, 2, 2, 9, 0, tzinfo=UTC),
    ]


def test_ids_are_stable_and_unique(tmp_path: Path):
    again = read_path(ANDROID_US)
    assert [message.id for message in again.messages] == [message.id for message in read_path(ANDROID_US).messages]
    assert len({message.id for message in again.messages}) == len(again.messages)
    twice = tmp_path / "WhatsApp Chat with Twins.txt"
    twice.write_text("1/2/24, 10:00 - Ann: ok\n1/2/24, 10:00 - Ann: ok\n1/2/24, 10:00 - Ben: ok\n", encoding="utf-8")
    ids = [message.id for message in read_path(twice).messages]
    assert len(set(ids)) == 3
    assert ids[1] == ids[0] + "-2"


@pytest.mark.parametrize(
    "line",
    [
        "[12/31/23, 9:05:33 PM] Ann: hi",
        "12/31/23, 9:05\u202fp.\u202fm. - Ann: hi",
        "31.12.23, 21:05 - Ann: hi",
        "2023-12-31, 21:05 - Ann: hi",
        "[31.12.23 klo 21.05.33] Ann: hi",
        "\u200e[31/12/2023, 21:05:33] Ann: hi",
        "2023/12/31 下午9:05 - Ann: hi",
    ],
)
def test_line_variants(tmp_path: Path, line: str):
    path = tmp_path / "chat.txt"
    path.write_text(line + "\n", encoding="utf-8")
    assert whatsapp.detect(path)
    (message,) = read_path(path).messages
    assert (message.sender, message.text) == ("Ann", "hi")
    assert (message.sent_at.year, message.sent_at.month, message.sent_at.day) == (2023, 12, 31)
    assert (message.sent_at.hour, message.sent_at.minute) == (21, 5)


def test_empty_and_garbage_files(tmp_path: Path):
    assert whatsapp.read(FIXTURES / "empty.txt").skipped[0].reason == "file is empty"
    garbage = tmp_path / "garbage.txt"
    garbage.write_text("just some notes\nwith no dates\n", encoding="utf-8")
    result = whatsapp.read(garbage)
    assert result.messages == []
    assert [skip.reason for skip in result.skipped][-1] == "no dated WhatsApp lines found"


def test_ios_zip_takes_its_title_from_the_first_event(tmp_path: Path):
    archive = tmp_path / "WhatsApp Chat - Familie.zip"
    with zipfile.ZipFile(archive, "w") as handle:
        handle.write(IOS / "_chat.txt", "_chat.txt")
    result = read_path(archive)
    assert result.conversations[0].ref == "whatsapp:Familie"
    assert len(result.messages) == 9


def test_mixed_header_styles_each_settle_their_own_date_order():
    """Exports from different phones pasted into one file: brackets and dashes, 12/24 hours, DMY and MDY."""
    result = read_path(FIXTURES / "WhatsApp Chat with Boat Club.txt")
    assert result.skipped == []
    assert len(result.messages) == 10
    (conversation,) = result.conversations
    assert conversation.metadata["date_order"] == "per header style"
    assert conversation.metadata["date_orders"] == {
        "[d/d/yyyy, d:d:d]": "DMY (a first field above 12)",
        "d/d/yy, d:d AM/PM -": "MDY (a second field above 12)",
        "d.d.yy, d:d -": "DMY (a first field above 12)",
        "[d/d/yy, d:d:d AM/PM]": "MDY (a second field above 12)",
        "d/d/yyyy, d:d -": "DMY (assumed: day first, as in most locales)",
    }
    assert [(message.sent_at, message.sender) for message in result.messages] == [
        (datetime(2024, 1, 16, 9, 15, 2, tzinfo=UTC), "system"),
        (datetime(2024, 1, 16, 9, 15, 40, tzinfo=UTC), "Ana"),
        (datetime(2024, 1, 16, 9, 16, 5, tzinfo=UTC), "Ben"),
        (datetime(2024, 1, 17, 20, 5, tzinfo=UTC), "Ben"),
        (datetime(2024, 1, 17, 20, 7, tzinfo=UTC), "Ana"),
        (datetime(2024, 1, 18, 21, 10, tzinfo=UTC), "Carla"),
        (datetime(2024, 1, 18, 21, 12, tzinfo=UTC), "Ben"),
        (datetime(2024, 1, 19, 9, 1, 33, tzinfo=UTC), "Carla"),
        (datetime(2024, 2, 5, 10, 0, tzinfo=UTC), "Ana"),
        (datetime(2024, 2, 5, 10, 2, tzinfo=UTC), "Ben"),
    ]
    notice = result.messages[0]
    # Without its U+200E mark the notice is still the platform speaking, not a member named "Ana".
    assert (notice.kind, notice.role) == ("system", "system")
    assert result.messages[1].text == "Bom dia! Is the boat still free on Saturday?"
    assert [message.recalled for message in result.messages] == [False] * 4 + [True, False, True, False, False, True]
    edited = result.messages[8]
    assert (edited.text, edited.metadata["edited"]) == ("I do", True)
    assert conversation.kind == "group"


def test_encryption_notice_without_mark_names_the_ios_chat(tmp_path: Path):
    path = tmp_path / "_chat.txt"
    path.write_text(
        "[02/03/2024, 10:00:00] Lake House: Messages and calls are end-to-end encrypted. No one outside of this chat, "
        "not even WhatsApp, can read or listen to them.\n[02/03/2024, 10:01:00] Ann: hi\n",
        encoding="utf-8",
    )
    result = whatsapp.read(path)
    assert result.conversations[0].ref == "whatsapp:Lake House"
    assert [message.sender for message in result.messages] == ["system", "Ann"]
