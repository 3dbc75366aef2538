import pytest

from conftest import message
from threadkeep.readers.bundle import parse_message
from threadkeep.threads.resolution import resolution_state


def thread(*texts):
    """Alternating asker (u1) and helper (u2) lines; a tuple (sender, text) overrides the speaker."""
    raw = []
    for index, item in enumerate(texts):
        sender, text = item if isinstance(item, tuple) else (("u1", "u2")[index % 2], item)
        raw.append(parse_message(message(f"m{index}", sender, index, text), {}))
    return raw


@pytest.mark.parametrize(
    "texts,state",
    [
        (("点图标没反应", "结束托盘进程再打开试试", "好了，谢谢"), "resolved"),
        (("网页版在哪", "同步文件夹里右键选历史版本", "啊啊找到了！！"), "resolved"),
        (("手机占了8个G", "App里清除缓存", "清了 剩1个多G了 谢谢"), "resolved"),
        (("mount fails", "try installing ntfs-3g", "that worked, thanks"), "resolved"),
        (("点图标没反应", "结束托盘进程再打开试试", "还是不行"), "workaround"),
        (("点图标没反应", "结束托盘进程再打开试试"), "workaround"),
        (("点图标没反应", ("u3", "+1 我也是")), "open"),
        (("点图标没反应", "麻烦把日志打包发一下", "好的"), "open"),
        (("点图标没反应", "我问一下产品同学，稍后回复"), "open"),
        (("点图标没反应",), "open"),
        # Nothing was broken: an answer the asker takes settles it.
        (
            (
                "landlord says the plumber comes thursday between 9 and 12",
                "can someone be in? I have lectures",
                ("u3", "I'm home thursday morning"),
                ("u2", "👍"),
            ),
            "resolved",
        ),
        (("Acme asked if last week's exports were affected too", "only yesterday's, before 10", "perfect"), "resolved"),
        # Something broken (a report, a code on the screen): the same exchange may be a workaround.
        (("账号被锁了 E1107", "30 分钟后自动解锁，急用的话点忘记密码重置", "收到"), "workaround"),
    ],
)
def test_resolution_states(texts, state):
    assert resolution_state(thread(*texts)) == state


def test_the_suggester_cannot_confirm_their_own_fix():
    assert resolution_state(thread("上传很慢", "关掉限速就好了", ("u2", "好了"))) == "workaround"
