"""The benchmark and training data tools for threads: hand-written chats, request cuts, thread labels."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "benchmarks"))

import hand_chats  # noqa: E402

CHAT = """# title: 测试群
# split: dev
# mentions: refs
# member: s = 客服-小云
# member: u = 张
# member: v = 李四
# date: 2026-05-19
09:05 | u | A | 点图标没反应
09:06:30 | s | A | 你什么版本
09:07 | u | A | 3.1.4
09:08 | v | B | [图片] | type=image
09:09 | system | - | 李四 撤回了一条消息
09:31 | s | A | @张 找到了，升级就好 | q=1
09:32 | v | B | 我发错了 | recalled to=4
"""


def write_chat(folder: Path, text: str = CHAT, name: str = "zh-test") -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / f"{name}.chat"
    path.write_text(text, encoding="utf-8")
    return path


def test_a_chat_file_becomes_messages_with_mentions_quotes_and_types(tmp_path: Path) -> None:
    chat = hand_chats.parse(write_chat(tmp_path))
    assert chat.split == "dev" and len(chat.messages) == 7
    first, image, system, answer, recalled = (chat.messages[i] for i in (0, 3, 4, 5, 6))
    assert first["messageId"] == "zh-test:1" and first["sentAt"] == "2026-05-19T09:05:00+08:00"
    assert image["type"] == "image" and system["type"] == "system"
    assert answer["mentionedRefs"] == ["u"] and answer["quotedMessageId"] == "zh-test:1"
    assert recalled["recalled"] is True


def test_gold_groups_by_label_with_singletons_and_explicit_parents(tmp_path: Path) -> None:
    gold = hand_chats.gold(hand_chats.parse(write_chat(tmp_path)))
    assert gold["threads"] == [
        ["zh-test:1", "zh-test:2", "zh-test:3", "zh-test:6"],
        ["zh-test:4", "zh-test:7"],
        ["zh-test:5"],
    ]
    links = dict(gold["links"])
    assert links["zh-test:1"] == "zh-test:1" and links["zh-test:6"] == "zh-test:3"
    assert links["zh-test:7"] == "zh-test:4"


@pytest.mark.parametrize(
    ("line", "error"),
    [
        ("09:40 | nobody | A | hi", "unknown sender"),
        ("08:00 | u | A | early", "backwards"),
        ("9 | u | A | x", "bad time"),
    ],
)
def test_malformed_lines_are_refused(tmp_path: Path, line: str, error: str) -> None:
    with pytest.raises(ValueError, match=error):
        hand_chats.parse(write_chat(tmp_path, CHAT + line + "\n"))


def test_a_chat_without_a_part_is_refused(tmp_path: Path) -> None:
    with pytest.raises(ValueError, match="split"):
        hand_chats.parse(write_chat(tmp_path, CHAT.replace("# split: dev\n", "")))


def test_parts_are_written_to_separate_bundles(tmp_path: Path) -> None:
    write_chat(tmp_path / "in")
    write_chat(tmp_path / "in", CHAT.replace("split: dev", "split: heldout"), "zh-other")
    counts = hand_chats.write(tmp_path / "out", tmp_path / "in")
    assert counts == {"dev": 7, "heldout": 7}
    dev = [json.loads(line) for line in (tmp_path / "out" / "dev" / "bundle" / "messages.jsonl").open()]
    assert {m["conversationRef"] for m in dev} == {"zh-test"}
    assert [p.name for p in (tmp_path / "out" / "heldout" / "gold").iterdir()] == ["zh-other.gold.json"]


def test_the_shipped_hand_chats_parse_and_every_chat_has_a_part() -> None:
    chats = hand_chats.chats()
    assert {chat.split for chat in chats} == {"dev", "heldout"}
    assert all(len(set(chat.labels)) > 1 for chat in chats)


@pytest.mark.parametrize("folder,most", [("hand_chats_dev2", 45), ("hand_chats_dev3", 50)])
def test_the_later_dev_sets_are_all_dev_and_keep_the_seven_hour_rule(folder: str, most: int) -> None:
    from datetime import datetime

    chats = hand_chats.chats(ROOT / "benchmarks" / "data" / folder)
    assert sorted(chat.name[:3] for chat in chats) == ["en-"] * 4 + ["zh-"] * 4
    assert {chat.split for chat in chats} == {"dev"}
    assert all(25 <= len(chat.messages) <= most for chat in chats)
    # the labelling convention: a topic silent for more than 7 hours continues as a new thread
    for chat in chats:
        last: dict[str, datetime] = {}
        for message, label in zip(chat.messages, chat.labels, strict=True):
            sent = datetime.fromisoformat(message["sentAt"])
            if label in last:
                assert (sent - last[label]).total_seconds() <= 7 * 3600, (chat.name, message["messageId"])
            last[label] = sent


# ----------------------------------------------------------------------------- request cuts

small_groups = pytest.importorskip("small_groups", reason="benchmarks/ is not importable")


def test_a_second_request_in_another_domain_starts_a_thread() -> None:
    turns = [
        (0, "你好，帮我推荐一个评分4分以上的酒店"),
        (1, "推荐北京饭店"),
        (0, "这个酒店周边有什么景点呢？"),
        (1, "周边有故宫"),
        (0, "好的，我还想找一家人均100元左右的餐馆，有推荐吗"),
        (1, "推荐全聚德"),
        (0, "谢谢"),
    ]
    assert small_groups.request_cuts(turns) == (4,)


def test_follow_up_questions_about_the_same_request_do_not_cut() -> None:
    turns = [(0, "帮我找个免费的景点"), (1, "故宫"), (0, "门票多少钱？"), (1, "免费"), (0, "景点周边都有哪些餐馆呢？")]
    assert small_groups.request_cuts(turns) == ()
