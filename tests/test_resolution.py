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
    ],
)
def test_resolution_states(texts, state):
    assert resolution_state(thread(*texts)) == state


def test_the_suggester_cannot_confirm_their_own_fix():
    assert resolution_state(thread("上传很慢", "关掉限速就好了", ("u2", "好了"))) == "workaround"
