from __future__ import annotations

from datetime import UTC, datetime, timedelta, timezone
from pathlib import Path

import pytest

from threadkeep.readers import detect_format, read_path, wechat

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures" / "wechat"
GROUP = FIXTURES / "项目群.txt"  # GBK-encoded, as saved by Chinese Windows
DIRECT = FIXTURES / "direct_utf8_bom.txt"
CST = timezone(timedelta(hours=8))


@pytest.fixture(scope="module")
def result():
    return read_path(GROUP)


def test_detects_gbk_and_bom_files_but_not_other_text():
    assert GROUP.read_bytes().decode("gbk").startswith("张三 2024/01/15 9:05")
    assert detect_format(GROUP).NAME == "wechat"
    assert detect_format(DIRECT).NAME == "wechat"
    fixtures = FIXTURES.parent
    for path in (
        fixtures / "whatsapp" / "WhatsApp Chat with Project Team.txt",
        fixtures / "irc" / "#python.2004-11-15.log",
        fixtures / "irc" / "weechat.log",
    ):
        assert not wechat.detect(path), path


def test_counts_speakers_first_and_last(result):
    (conversation,) = result.conversations
    assert (conversation.ref, conversation.title, conversation.kind) == ("wechat:项目群", "项目群", "group")
    assert conversation.metadata["timezone"] == "Asia/Shanghai (+08:00) assumed"
    assert len(result.messages) == 8
    speakers = [message.sender for message in result.messages if not message.is_system]
    assert speakers == ["张三", "李四", "李四", "王五", "张三", "张三"]
    first, last = result.messages[0], result.messages[-1]
    assert first.text == "大家好，测试环境的部署又失败了\n日志里是锁等待超时"
    assert first.sent_at == datetime(2024, 1, 15, 9, 5, tzinfo=CST)
    assert first.sent_at.utcoffset() == timedelta(hours=8)
    assert last.text == "已经把超时改成十分钟，重新部署成功了"
    assert last.sent_at == datetime(2024, 1, 15, 2, 30, tzinfo=UTC)


def test_media_mentions_and_system_lines(result):
    messages = result.messages
    assert (messages[1].kind, messages[1].text) == ("image", "[image]")
    mention = messages[2]
    assert (mention.text, mention.mentions) == ("@张三 我看一下迁移脚本", ("张三",))
    recall = messages[3]
    assert (recall.kind, recall.role, recall.sender) == ("system", "system", "system")
    assert recall.text == "“李四”撤回了一条消息"
    assert recall.sent_at == mention.sent_at
    assert (messages[4].kind, messages[4].text) == ("voice", "[voice]")
    report = messages[5]
    assert (report.kind, report.text) == ("file", "[file] 迁移报告.pdf")
    assert report.sent_at == datetime(2024, 1, 15, 10, 0, 5, tzinfo=CST)  # YYYY-MM-DD HH:MM:SS header
    invite = messages[6]
    assert (invite.kind, invite.text) == ("system", "王五邀请赵六加入了群聊")


def test_bad_header_loses_only_its_own_lines(result):
    assert [(skip.line, skip.reason.split(" (")[0]) for skip in result.skipped] == [
        (15, "bad date/time in header"),
        (16, "line of a message whose header could not be read"),
    ]
    assert all(message.sender != "赵六" for message in result.messages)


def test_direct_chat_with_bom_mention_space_and_link():
    result = read_path(DIRECT)
    (conversation,) = result.conversations
    assert conversation.kind == "direct"
    assert [message.sender for message in result.messages] == ["Alice", "陈伟", "陈伟"]
    reply = result.messages[1]
    # WeChat ends a mention with U+2005; it becomes a plain space.
    assert reply.text == "发，@Alice 你来盯一下\n[动画表情]"
    assert reply.mentions == ("Alice",)
    link = result.messages[2]
    assert (link.kind, link.text) == ("link", "发版清单 https://wiki.example.com/release")
    assert link.sent_at == datetime(2024, 1, 16, 12, 2, tzinfo=UTC)


def test_system_line_does_not_end_the_message_above(tmp_path: Path):
    path = tmp_path / "chat.txt"
    path.write_text("甲 2024/02/01 10:00\n第一行\n乙撤回了一条消息\n第二行\n", encoding="utf-8")
    result = wechat.read(path)
    assert [(message.sender, message.text) for message in result.messages] == [
        ("甲", "第一行\n第二行"),
        ("system", "乙撤回了一条消息"),
    ]


def test_empty_and_headerless_files(tmp_path: Path):
    empty = tmp_path / "empty.txt"
    empty.write_bytes(b"")
    assert not wechat.detect(empty)
    assert wechat.read(empty).skipped[0].reason == "file is empty"
    headless = tmp_path / "notes.txt"
    headless.write_text("没有标题的文字\n", encoding="utf-8")
    result = wechat.read(headless)
    assert result.messages == []
    assert [skip.reason for skip in result.skipped] == [
        "text before the first speaker header",
        "no WeChat speaker headers found",
    ]


def test_twelve_hour_headers_with_spaces_in_names():
    path = FIXTURES / "twelve_hour.txt"
    assert detect_format(path).NAME == "wechat"
    result = read_path(path, format="wechat")
    assert result.skipped == []
    assert [(message.sender, message.sent_at, message.text) for message in result.messages] == [
        ("女朋友", datetime(2023, 9, 16, 0, 5, tzinfo=CST), "[image]"),  # 12:05 AM
        ("女朋友", datetime(2023, 9, 16, 14, 51, tzinfo=CST), "晚上吃什么？"),
        ("Li Wei", datetime(2023, 9, 16, 14, 53, tzinfo=CST), "火锅吧"),
        ("Li Wei", datetime(2023, 9, 17, 12, 30, tzinfo=CST), "到了"),  # 下午12:30 is half past noon
    ]


def test_impossible_twelve_hour_time_is_reported(tmp_path: Path):
    path = tmp_path / "chat.txt"
    path.write_text("甲 2023/09/16 2:51 PM\n好\n乙 2023/09/16 13:05 PM\n坏\n", encoding="utf-8")
    result = wechat.read(path)
    assert [message.text for message in result.messages] == ["好"]
    assert [(skip.line, skip.reason.split(";")[0]) for skip in result.skipped] == [
        (3, "bad date/time in header (hour 13 on a 12-hour clock)"),
        (4, "line of a message whose header could not be read"),
    ]
