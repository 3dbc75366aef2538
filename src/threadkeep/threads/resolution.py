"""Did a thread reach a conclusion? resolved / workaround / open.

- resolved: someone suggested something (a fix, an answer, a screenshot of the setting) and
  someone other than the suggester then said it worked (「好了」, 「找到了 谢谢」, "that fixed it");
- workaround: a suggestion nobody confirmed;
- open: nobody suggested anything: only the report, me-too replies, requests for logs or
  promises to look into it.

Measured against the sample corpus' hand labels by benchmarks/thread_boundaries.py.
"""

from __future__ import annotations

import re
from collections.abc import Sequence

from threadkeep.model import Message
from threadkeep.text import is_me_too, is_noise, is_question

# Chinese and English apart: case-blind matching of the Chinese alternatives would only cost time.
_WORKED_ZH = re.compile(
    r"(?<![就再])(?:好了|可以了|行了)|解决了?|搞定|成功了|有效|管用|好使|正常了|恢复了|没问题|能用了|"
    r"找到了|看到了|找回来了|回来了|装上了|装好了|登上了|连上了|能连上|变绿了|没再报|不报了|能打开了|能编辑了|"
    r"明白了|懂了|了解了|够了|就有了|加上了|推下去了|效果不错"
)
_WORKED_EN = re.compile(
    r"\b(?:that|it|this)\s+(?:worked|works|fixed it|did it|did the trick)\b|\bworks now\b|\bfixed\b|\bsolved\b|"
    r"\bresolved\b|\bgot it working\b",
    re.IGNORECASE,
)
_THANKS = re.compile(r"谢谢|感谢|多谢|thanks|thank you|👍|✌️|👌|🙏", re.IGNORECASE)
_DENIED = re.compile(
    r"还是不行|不行|没用|无效|没效果|不好使|还是一样|依旧|仍然|还是报|还是断|"
    r"doesn'?t work|didn'?t work|still|not working",
    re.IGNORECASE,
)
# Not an answer: asking for logs or screenshots, or promising to look into it.
_NOT_AN_ANSWER = re.compile(
    r"稍后回复|稍后|记录给|已记录|记下了|转给|反馈给|跟进|问一下|问问|查一下|看一下|发一下|发我|发给我|截图给|"
    r"提供一下|打包|没人管|有结论|let me check|will look|send (?:me|us) the log",
    re.IGNORECASE,
)


def _asks(text: str) -> bool:
    """A question rather than an answer that happens to quote one (「点「收不到验证码？」选语音」)."""
    return text.endswith(("?", "？", "吗")) or (len(text) <= 20 and is_question(text))


def _worked(message: Message) -> bool:
    return confirms(message.text)


def confirms(text: str) -> bool:
    """Someone saying a suggestion worked: 「好了」, 「找到了 谢谢」, "that fixed it"."""
    text = text.strip()
    if not text or _asks(text) or _DENIED.search(text):
        return False
    if _WORKED_ZH.search(text) or _WORKED_EN.search(text):
        return True
    # 「清了 剩 1 个多 G 了 哈哈 谢谢」: a report of something done, with thanks.
    return "了" in text and bool(_THANKS.search(text))


def _suggests(message: Message, asker: str) -> bool:
    if message.sender == asker:
        return False
    if message.is_media:
        return True  # a screenshot of the settings page answers as well as words do
    text = message.text.strip()
    return not (is_noise(text) or is_me_too(text) or _asks(text) or _NOT_AN_ANSWER.search(text) or _worked(message))


def resolution_state(messages: Sequence[Message]) -> str:
    spoken = [message for message in messages if not message.is_system and not message.recalled]
    if not spoken:
        return "open"
    asker = spoken[0].sender
    suggested_by: str | None = None
    for message in spoken[1:]:
        if suggested_by is not None and message.sender != suggested_by and _worked(message):
            return "resolved"
        if _suggests(message, asker):
            suggested_by = message.sender
    return "workaround" if suggested_by else "open"
