from __future__ import annotations

import itertools
from collections import Counter

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from threadkeep.chunks.windows import Block, split_into_windows, split_sentences, truncate_to_tokens


def chars(text: str) -> int:
    return len(text)


def test_chinese_sentences_split_at_full_width_punctuation() -> None:
    text = "点击托盘图标没有反应。请先结束进程！还是不行？再清理缓存；然后重新打开……最后联系客服。"
    assert split_sentences(text) == [
        "点击托盘图标没有反应。",
        "请先结束进程！",
        "还是不行？",
        "再清理缓存；",
        "然后重新打开……",
        "最后联系客服。",
    ]


def test_closing_quotes_stay_with_their_sentence() -> None:
    assert split_sentences("他说：“升级完成。”然后重启了。") == ["他说：“升级完成。”", "然后重启了。"]


def test_english_sentences_need_a_following_space() -> None:
    text = "Version 3.2.0 is out. Error 0x80070005 means access denied! Is it fixed?Yes."
    assert split_sentences(text) == [
        "Version 3.2.0 is out.",
        "Error 0x80070005 means access denied!",
        "Is it fixed?Yes.",
    ]


def test_common_abbreviations_do_not_end_a_sentence() -> None:
    assert split_sentences("Use a sync folder, e.g. D:\\Sync. Then restart.") == [
        "Use a sync folder, e.g. D:\\Sync.",
        "Then restart.",
    ]


def test_line_breaks_end_sentences_and_blank_lines_vanish() -> None:
    assert split_sentences("1. 下载安装包\n2. 双击运行\n\n  \n完成") == ["1. 下载安装包", "2. 双击运行", "完成"]


def test_empty_text_has_no_sentences_and_no_windows() -> None:
    assert split_sentences("  \n ") == []
    assert split_into_windows("", chars, 10, 2) == []
    assert split_into_windows(["", " "], chars, 10, 2) == []


def test_short_text_is_one_window() -> None:
    assert split_into_windows("短文本。", chars, 100, 10) == ["短文本。"]


def test_windows_fit_and_repeat_trailing_sentences() -> None:
    sentences = [f"这是第{i:02d}句话。" for i in range(30)]
    windows = split_into_windows("".join(sentences), chars, 40, 10)
    assert len(windows) > 3
    assert all(len(window) <= 40 for window in windows)
    for previous, current in itertools.pairwise(windows):
        first = split_sentences(current)[0]
        assert previous.endswith(first), "the next window starts with the previous one's last sentence"
    covered = "".join(windows)
    assert all(sentence in covered for sentence in sentences)


def test_zero_overlap_partitions_the_text() -> None:
    sentences = [f"Sentence number {i}." for i in range(20)]
    windows = split_into_windows(" ".join(sentences), chars, 60, 0)
    assert " ".join(windows) == " ".join(sentences)


def test_overlap_budget_ignores_the_fixed_cost_of_the_counter() -> None:
    def with_header(text: str) -> int:
        return len("标题 > 小节\n\n" + text)

    windows = split_into_windows("".join(f"第{i:02d}句。" for i in range(20)), with_header, 40, 6)
    assert all(with_header(window) <= 40 for window in windows)
    assert windows[1].startswith(split_sentences(windows[0])[-1])


def test_blocks_are_kept_whole_and_not_repeated_as_overlap() -> None:
    table = "| 代码 | 含义 |\n| --- | --- |\n| E1024 | 登录过期 |\n| E3003 | 磁盘不足 |"
    prose = ["第一段说明文字。" * 3, "第二段说明文字。" * 3]
    windows = split_into_windows([prose[0], Block(table), prose[1]], chars, 80, 20)
    holding = [window for window in windows if "E1024" in window or "E3003" in window]
    assert len(holding) == 1
    assert table in holding[0]


def test_an_over_long_block_is_split_at_line_boundaries() -> None:
    rows = [f"| E{i:04d} | 错误说明 {i} |" for i in range(20)]
    windows = split_into_windows([Block("\n".join(rows))], chars, 60, 10)
    assert len(windows) > 1
    assert all(len(window) <= 60 for window in windows)
    assert [row for window in windows for row in window.split("\n")] == rows


def test_an_over_long_sentence_is_cut_between_words() -> None:
    text = "synchronisation " * 10
    windows = split_into_windows(text, chars, 40, 0)
    assert all(len(window) <= 40 for window in windows)
    assert all(word == "synchronisation" for window in windows for word in window.split())


def test_an_over_long_chinese_sentence_is_cut_between_characters() -> None:
    text = "同" * 95
    windows = split_into_windows(text, chars, 40, 5)
    assert [len(window) for window in windows] == [40, 40, 15]


def test_a_single_giant_word_is_cut_at_characters_as_a_last_resort() -> None:
    windows = split_into_windows("x" * 25, chars, 10, 0)
    assert windows == ["x" * 10, "x" * 10, "x" * 5]


def test_truncate_to_tokens_keeps_whole_words() -> None:
    assert truncate_to_tokens("云枢同步 desktop client settings", chars, 18) == "云枢同步 desktop"
    assert truncate_to_tokens("short", chars, 20) == "short"


def test_bad_limits_are_rejected() -> None:
    with pytest.raises(ValueError):
        split_into_windows("text", chars, 10, 10)
    with pytest.raises(ValueError):
        split_into_windows("text", chars, 0, 0)
    with pytest.raises(ValueError, match="too small"):
        split_into_windows("text", lambda text: len(text) + 10, 10, 0)


_words = st.text(alphabet="abcdé云枢同步。！？；.!? \n", min_size=0, max_size=400)


@settings(max_examples=150, deadline=None)
@given(text=_words, max_tokens=st.integers(min_value=4, max_value=80), overlap=st.integers(min_value=0, max_value=30))
def test_windows_always_fit_and_cover_every_character(text: str, max_tokens: int, overlap: int) -> None:
    overlap = min(overlap, max_tokens - 1)
    windows = split_into_windows(text, chars, max_tokens, overlap)
    assert all(0 < len(window) <= max_tokens for window in windows)
    assert all(window in text for window in windows)
    # Nothing but whitespace is lost (windows overlap, so they may hold more).
    kept = Counter("".join(windows).replace(" ", "").replace("\n", ""))
    wanted = Counter(text.replace(" ", "").replace("\n", ""))
    assert not wanted - kept
