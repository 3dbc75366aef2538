import pytest

from threadkeep.text import content_tokens, is_me_too, is_noise, is_question, tokenize


@pytest.mark.parametrize(
    "text",
    [
        "+1",
        "同问",
        "我也是",
        "收到",
        "好的",
        "谢谢",
        "辛苦了",
        "？？",
        "!!!",
        "👍👍",
        "+1 我也是",
        "收到，谢谢！",
        "[图片]",
        "@客服-小云 +1",
        "thanks!",
    ],
)
def test_noise(text):
    assert is_noise(text)


@pytest.mark.parametrize("text", ["好了", "可以了，谢谢", "重启一下试试", "E1024", "我也是 3.1.4 版本点图标没反应"])
def test_not_noise(text):
    assert not is_noise(text)


def test_tokens_do_not_depend_on_spaces_and_keep_codes_whole():
    assert {"图标", "反应"} <= set(content_tokens("我这边点了图标一点反应都没有"))
    assert {"图标", "反应"} <= set(content_tokens("点图标没反应"))
    tokens = tokenize("错误 E1024 和 0x80070005，版本3.1.4")
    assert {"e1024", "0x80070005", "3.1.4"} <= set(tokens)
    assert tokenize("partitions") == tokenize("partition")


@pytest.mark.parametrize(
    "text,expected",
    [
        ("点图标没反应怎么办", True),
        ("有人知道吗", True),
        ("how do I mount ntfs", True),
        ("is it safe?", True),
        ("重启一下就好了", False),
        ("try sudo apt update", False),
    ],
)
def test_questions(text, expected):
    assert is_question(text) is expected


@pytest.mark.parametrize(
    "text, joins",
    [
        ("+1 我也是 升级完就这样", True),
        ("我也老报 E1024 但我文件名里没有特殊符号啊", True),
        ("我也一直出现这个提示", True),
        ("same here, getting E1024 too", True),
        ("我也好了", False),  # a confirmation, not a report
        ("我也想问一下发票的事", False),
    ],
)
def test_me_too_includes_a_report_verb_after_wo_ye(text, joins):
    assert is_me_too(text) is joins
