"""Did a thread reach a conclusion? resolved / workaround / open."""

from __future__ import annotations

import re
from collections.abc import Sequence

from threadkeep.model import Message
from threadkeep.text import is_noise, is_question

_CONFIRMED = re.compile(
    r"^(?:[@\S]*\s)?\s*(?:好了|可以了|行了|解决了|搞定|成功了|有效|管用|好使|ok了|正常了|恢复了|没问题了|能用了|能打开了|出来了)"
    r"|(?:好了|可以了|行了|解决了|搞定了?|成功了|有效果?|管用|好使了?|正常了|恢复了|没问题了|能用了)[!！。~～,，\s]*(?:谢谢|感谢|多谢|👍)?"
    r"|\b(?:that|it|this)\s+(?:worked|works|fixed it|did it|did the trick)\b"
    r"|\bworks now\b|\bfixed\b|\bsolved\b|\bresolved\b",
    re.IGNORECASE,
)
_DENIED = re.compile(
    r"还是不行|不行|没用|无效|没效果|不好使|还是一样|依旧|仍然|doesn'?t work|didn'?t work|still|not working", re.I
)


def _is_confirmation(text: str) -> bool:
    return bool(_CONFIRMED.search(text)) and not _DENIED.search(text)


def _is_suggestion(message: Message, asker: str) -> bool:
    text = message.text.strip()
    if message.sender == asker or message.is_system or message.recalled:
        return False
    if message.is_media:
        return True  # a screenshot of the settings page answers as well as words do
    return not is_noise(text) and not is_question(text) and not _is_confirmation(text)


def resolution_state(messages: Sequence[Message]) -> str:
    """`resolved` when a suggestion is later confirmed, `workaround` when one is only
    suggested, `open` when nobody suggested anything."""
    spoken = [message for message in messages if not message.is_system and not message.recalled]
    if not spoken:
        return "open"
    asker = spoken[0].sender
    suggested_by: str | None = None
    for message in spoken[1:]:
        if suggested_by is None:
            if _is_suggestion(message, asker):
                suggested_by = message.sender
        elif message.sender != suggested_by and _is_confirmation(message.text):
            return "resolved"
    return "workaround" if suggested_by else "open"
