"""Blank lines inside a message (a million of them, even) belong to it and break nothing."""

from __future__ import annotations

from pathlib import Path

import pytest

from threadkeep.readers import kakaotalk, line, wechat

KAKAO = "A 님과 카카오톡 대화\n\n--------------- 2024년 3월 9일 토요일 ---------------\n"
# reader, file name, text before the blank lines, text after them (still the first message), next message
CASES = {
    "line": (line, "chat.txt", "2023/09/15(Fri)\n09:15\tA\tfirst", "still first", "09:16\tB\tsecond\n"),
    "kakaotalk": (kakaotalk, "chat.txt", KAKAO + "[A] [오전 8:05] first", "still first", "[B] [오전 8:06] second\n"),
    "wechat": (wechat, "chat.txt", "甲 2023/09/16 14:51\nfirst", "still first", "乙 2023/09/16 14:52\nsecond\n"),
}


@pytest.mark.parametrize("name", sorted(CASES))
@pytest.mark.parametrize("blank", ["\n \n\t\n", "\r" * 200_000])
def test_blank_lines_stay_in_their_message(tmp_path: Path, name: str, blank: str) -> None:
    module, file_name, before, after, following = CASES[name]
    path = tmp_path / file_name
    path.write_text(before + "\n" + blank + after + "\n" + following, encoding="utf-8")

    result = module.read(path)

    assert [message.text.split()[0] for message in result.messages] == ["first", "second"], result.skipped[:3]
    assert "still first" in result.messages[0].text
    assert not result.skipped
