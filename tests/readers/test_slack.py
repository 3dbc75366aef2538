from __future__ import annotations

import json
import shutil
from datetime import UTC, datetime
from pathlib import Path

import pytest

from threadkeep.readers import detect_format, read_path, slack

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures" / "slack"
WORKSPACE = FIXTURES / "workspace"


@pytest.fixture(scope="module")
def result():
    return read_path(WORKSPACE)


def by_id(result):
    return {message.id: message for message in result.messages}


def test_detects_workspace_channel_folder_and_day_file():
    assert detect_format(WORKSPACE).NAME == "slack"
    assert detect_format(WORKSPACE / "general").NAME == "slack"
    assert detect_format(WORKSPACE / "general" / "2024-01-15.json").NAME == "slack"
    # Another channel's first day file is empty; the folder is still Slack.
    assert slack.detect(WORKSPACE / "dev")
    assert not slack.detect(WORKSPACE / "users.json")
    assert not slack.detect(FIXTURES.parent / "discord" / "dm.json")
    assert not slack.detect(FIXTURES.parent / "telegram" / "account")


def test_counts_conversations_and_order(result):
    assert len(result.messages) == 13
    refs = {conversation.ref: conversation for conversation in result.conversations}
    assert set(refs) == {"C01GENERAL", "C02DEV", "D01ALICEBOB"}
    assert refs["C01GENERAL"].kind == "group"
    assert refs["C01GENERAL"].title == "#general"
    assert refs["C01GENERAL"].metadata["topic"] == "Deploys and incidents"
    assert refs["D01ALICEBOB"].kind == "direct"
    assert refs["D01ALICEBOB"].title == "DM: alice, Bob Builder"
    times = [message.sent_at for message in result.messages]
    assert times == sorted(times)
    first, last = result.messages[0], result.messages[-1]
    assert first.text == "@陈伟 has joined the channel"
    assert first.sent_at == datetime(2024, 1, 15, 8, 0, 0, 100, tzinfo=UTC)
    assert last.text == "last good message before the export was cut"
    assert last.sent_at.utcoffset().total_seconds() == 0


def test_speakers_use_users_json_names(result):
    general = [message for message in result.messages if message.conversation == "C01GENERAL" and not message.is_system]
    assert {(message.sender, message.sender_name) for message in general} == {
        ("U01ALICE", "alice"),
        ("U02BOB", "Bob Builder"),
        ("U03CHEN", "陈伟"),
    }


def test_join_and_bot_lines_are_system(result):
    messages = by_id(result)
    join = messages["C01GENERAL:1705305600.000100"]
    assert (join.kind, join.role, join.mentions) == ("system", "system", ())
    bot = messages["C01GENERAL:1705309800.000400"]
    assert (bot.kind, bot.role, bot.sender, bot.sender_name) == ("system", "system", "B01DEPLOY", "deploybot")
    assert bot.text == "Deploy #42 failed: migration timeout"


def test_threads_span_day_files(result):
    messages = by_id(result)
    parent = messages["C01GENERAL:1705309200.000200"]
    assert parent.platform_thread == "1705309200.000200"
    assert parent.reply_to is None
    assert parent.text == "Deploy failed on build 42 (https://ci.example.com/build/42), @Bob Builder can you look?"
    assert parent.mentions == ("U02BOB",)
    same_day = messages["C01GENERAL:1705309500.000300"]
    next_day = messages["C01GENERAL:1705424400.000500"]
    for reply in (same_day, next_day):
        assert reply.platform_thread == "1705309200.000200"
        assert reply.reply_to == parent.id
        assert "reply_to_missing" not in reply.metadata
    assert next_day.sender_name == "陈伟"
    assert next_day.edited_at == datetime(2024, 1, 16, 17, 1, tzinfo=UTC)


def test_reply_to_message_outside_export_is_flagged(result):
    orphan = by_id(result)["C01GENERAL:1705424700.001000"]
    assert orphan.reply_to == "C01GENERAL:1600000000.000000"
    assert orphan.platform_thread == "1600000000.000000"
    assert orphan.metadata["reply_to_missing"] is True


def test_day_file_name_is_not_the_date(result):
    # Written to 2024-01-15.json by a US-Pacific workspace, sent 02:30 UTC on the 16th.
    late = by_id(result)["C01GENERAL:1705372200.000900"]
    assert late.sent_at == datetime(2024, 1, 16, 2, 30, 0, 900, tzinfo=UTC)
    assert late.edited_at == datetime(2024, 1, 16, 2, 31, tzinfo=UTC)


def test_text_rendering_files_and_unresolved_mentions(result):
    messages = by_id(result)
    cjk = messages["C01GENERAL:1705310400.000600"]
    assert cjk.text == "我来看看日志 <error> & stack, see #dev"
    shot = messages["C01GENERAL:1705311000.000700"]
    assert shot.kind == "image"
    assert shot.text == "[image] screenshot.png\nhere's the error"
    unknown = messages["C01GENERAL:1705312800.000800"]
    assert unknown.text == "@here ask @U999 about the old runner"
    assert unknown.mentions == ("U999",)
    dm = messages["D01ALICEBOB:1705316400.000100"]
    assert dm.text == "can you review my PR? https://github.com/acme/app/pull/7"
    bom = messages["C02DEV:1705395600.000100"]
    assert bom.text == "BOM-prefixed day file still reads"


def test_bad_input_is_reported_not_fatal(result):
    reasons = [str(skip) for skip in result.skipped]
    assert any("users.json" in reason and "entry 3" in reason for reason in reasons)
    assert any(reason.endswith("dev/2024-01-15.json: file is empty") for reason in reasons)
    assert any("2024-01-16.json:21: message 2: expected an object, got str" in reason for reason in reasons)
    assert any("ts is missing" in reason for reason in reasons)
    assert any("text is int" in reason for reason in reasons)
    assert any("2024-01-17.json:10" in reason and "rest of the array lost" in reason for reason in reasons)
    assert len(result.skipped) == 6


def test_single_day_file_and_zip(tmp_path: Path):
    day = read_path(WORKSPACE / "general" / "2024-01-16.json")
    # Alone, a day file is read without the root's channels.json: the folder name stands in for the channel id.
    assert [message.id for message in day.messages] == ["general:1705424400.000500", "general:1705424700.001000"]
    # The parent lives in another day's file: the link is kept and flagged.
    assert all(message.metadata.get("reply_to_missing") for message in day.messages)
    archive = shutil.make_archive(str(tmp_path / "export"), "zip", WORKSPACE)
    zipped = read_path(archive)
    assert len(zipped.messages) == 13


def test_channel_without_root_files(tmp_path: Path):
    folder = tmp_path / "ops"
    folder.mkdir()
    (folder / "2024-02-01.json").write_text(
        '[{"type": "message", "user": "U1", "text": "hi <@U2|bob>", "ts": "1706745600.000100"}]', encoding="utf-8"
    )
    result = read_path(folder)
    assert result.conversations[0].ref == "ops"
    (message,) = result.messages
    assert (message.id, message.text, message.mentions) == ("ops:1706745600.000100", "hi @bob", ("U2",))


def _write_day(folder: Path, messages: list[dict]) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / "2013-01-23.json"
    path.write_text(json.dumps(messages), encoding="utf-8")
    return path


def test_file_comment_and_app_bot_posts(tmp_path: Path):
    """Shapes from Slack's message event docs: `file_comment` (pre-2019) and an app's post with `bot_id` and `user`."""
    _write_day(
        tmp_path / "design",
        [
            {
                "type": "message",
                "subtype": "file_share",
                "ts": "1358877400.000005",
                "user": "U2BOB",
                "text": "<@U2BOB|bob> uploaded a file: <https://files.example.com/mock.png|mock.png>",
                "file": {"id": "F1", "name": "mock.png", "title": "mock.png", "mimetype": "image/png"},
            },
            {
                "type": "message",
                "subtype": "file_comment",
                "ts": "1358877455.000010",
                "text": "<@U1CAL|cal> commented on <@U2BOB|bob>'s file <https://files.example.com/mock.png|mock.png>: "
                "I love it! <@U2BOB>",
                "file": {"id": "F1", "name": "mock.png", "title": "mock.png"},
                "comment": {
                    "id": "Fc1",
                    "created": 1358877455,
                    "timestamp": 1358877455,
                    "user": "U1CAL",
                    "is_intro": False,
                    "comment": "I love it! <@U2BOB>",
                },
            },
            {
                "type": "message",
                "ts": "1358877500.000020",
                "user": "U9DEPLOY",
                "bot_id": "B9DEPLOY",
                "app_id": "A9DEPLOY",
                "text": "Deploy 1.4.2 finished",
                "bot_profile": {"id": "B9DEPLOY", "name": "deploybot"},
            },
        ],
    )
    result = slack.read(tmp_path / "design")
    assert result.skipped == []
    share, comment, bot = result.messages
    assert (share.sender, share.kind, share.text.splitlines()[0]) == ("U2BOB", "image", "[image] mock.png")
    assert (comment.sender, comment.role, comment.text) == ("U1CAL", "member", "I love it! @U2BOB")
    assert comment.mentions == ("U2BOB",)
    assert comment.metadata["commented_file"] == "mock.png"
    assert (bot.sender, bot.sender_name, bot.is_system, bot.metadata["bot"]) == ("U9DEPLOY", "deploybot", True, True)


def _export_with_planted_parent(tmp_path: Path) -> Path:
    """A channel folder whose parent holds lists naming people: given the folder alone, the parent is not ours."""
    parent = tmp_path / "someone-elses"
    _write_day(parent / "general", [{"type": "message", "user": "U1", "text": "hello", "ts": "1358877400.000005"}])
    (parent / "users.json").write_text(json.dumps([{"id": "U1", "name": "Planted Name"}]), encoding="utf-8")
    (parent / "channels.json").write_text(json.dumps([{"id": "CPLANTED", "name": "general"}]), encoding="utf-8")
    return parent


def test_channel_folder_never_reads_its_parent(tmp_path: Path):
    parent = _export_with_planted_parent(tmp_path)
    for given in (parent / "general", parent / "general" / "2013-01-23.json"):
        result = slack.read(given)
        (message,) = result.messages
        assert (message.conversation, message.sender_name) == ("general", "")
        assert all(str(parent / "users.json") not in str(skip) for skip in result.skipped)
    (parent / "users.json").write_text("{ broken", encoding="utf-8")
    assert slack.read(parent / "general").skipped == []


def test_symlinks_out_of_the_export_are_not_followed(tmp_path: Path):
    outside = _export_with_planted_parent(tmp_path)
    root = tmp_path / "export"
    _write_day(root / "ops", [{"type": "message", "user": "U2", "text": "ours", "ts": "1358877401.000005"}])
    (root / "channels.json").write_text(json.dumps([{"id": "C2", "name": "ops"}]), encoding="utf-8")
    (root / "users.json").symlink_to(outside / "users.json")
    (root / "general").symlink_to(outside / "general")
    (root / "ops" / "2013-01-24.json").symlink_to(outside / "general" / "2013-01-23.json")
    result = slack.read(root)
    assert [message.text for message in result.messages] == ["ours"]
    assert sorted(skip.file for skip in result.skipped) == [
        str(root / "general"),
        str(root / "ops" / "2013-01-24.json"),
        str(root / "users.json"),
    ]
    assert all(skip.reason == "symlink to outside the export; not followed" for skip in result.skipped)
