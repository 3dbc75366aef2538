from pathlib import Path

from conftest import message
from threadkeep.readers import read_path


def test_malformed_lines_are_reported_with_line_numbers_and_the_rest_is_read(tmp_path: Path):
    folder = tmp_path / "bundle"
    folder.mkdir()
    good = '{"messageId": "m1", "conversationRef": "g", "senderRef": "a", "sentAt": "2026-05-14T10:00:00+08:00"}'
    lines = [
        good,
        '{"messageId": "m2", "conversationRef": "g", "senderRef": "a"',  # truncated
        '{"messageId": "m3", "conversationRef": "g", "senderRef": "a", "sentAt": "yesterday"}',
        '{"messageId": "m4", "conversationRef": "g", "senderRef": "a", "sentAt": "2026-05-14T10:00:00"}',
        '["not", "an", "object"]',
        '{"messageId": "m1", "conversationRef": "g", "senderRef": "b", "sentAt": "2026-05-14T10:01:00+08:00"}',
        '{"messageId": "m5", "conversationRef": "g", "senderRef": "a", "sentAt": "2026-05-14T10:02:00+08:00", '
        '"type": "sticker"}',
        '{"messageId": "m6", "conversationRef": "g", "senderRef": "b", "sentAt": "2026-05-14T10:03:00+08:00", '
        '"text": "ok", "reactions": 3}',
    ]
    (folder / "messages.jsonl").write_text("\n".join(lines) + "\n", encoding="utf-8")

    result = read_path(folder)

    assert [m.id for m in result.messages] == ["m1", "m6"]
    assert [skip.line for skip in result.skipped] == [2, 3, 4, 5, 6, 7]
    assert all(skip.file.endswith("messages.jsonl") for skip in result.skipped)
    reasons = [skip.reason for skip in result.skipped]
    assert "not valid JSON" in reasons[0]
    assert "no UTC offset" in reasons[2]
    assert "duplicate messageId" in reasons[4]
    assert "unknown type" in reasons[5]
    assert result.messages[1].metadata == {"reactions": 3}


def test_bundle_reads_members_conversations_and_sorts_by_time(bundle_factory):
    folder = bundle_factory(
        [
            message("m2", "u2", 5, "later"),
            message("m1", "u1", 1, "earlier", quotedMessageId=None),
            message("s1", "system", 2, "u3 加入了群聊", type="system"),
        ],
        members=[{"senderRef": "u1", "displayName": "小明"}],
        conversations=[{"conversationRef": "g-1", "title": "支持群", "kind": "group"}],
    )
    result = read_path(folder / "messages.jsonl")
    assert [m.id for m in result.messages] == ["m1", "s1", "m2"]
    assert result.messages[0].display_name == "小明"
    assert result.messages[1].is_system
    assert result.conversations[0].title == "支持群"
    assert result.messages[0].sent_at.utcoffset().total_seconds() == 8 * 3600


def test_a_repeated_bad_line_is_reported_at_every_line_and_good_lines_between_are_read(tmp_path: Path):
    folder = tmp_path / "bundle"
    folder.mkdir()
    good = '{{"messageId": "m{n}", "conversationRef": "g", "senderRef": "a", "sentAt": "2026-05-14T10:00:00+08:00"}}'
    lines = []
    for n in range(3_000):
        lines += ["{", good.format(n=n), "[1,", '{"messageId": 5}']
    (folder / "messages.jsonl").write_text("\n".join(lines) + "\n", encoding="utf-8")

    result = read_path(folder)

    assert len(result.messages) == 3_000
    assert [skip.line for skip in result.skipped[:6]] == [1, 3, 4, 5, 7, 8]
    assert len(result.skipped) == 9_000
    reasons = {skip.line % 4: skip.reason for skip in result.skipped}
    assert reasons[1].startswith("not valid JSON") and reasons[1].endswith("the line ends there: cut short?")
    assert reasons[3].startswith("not valid JSON") and reasons[0].startswith("messageId")
    assert {skip.reason for skip in result.skipped if skip.line % 4 == 1} == {reasons[1]}
