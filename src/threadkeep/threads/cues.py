"""Short-turn cues of small groups, Chinese and English: what a message does, not what it is about.

- `asks`: a question, including the bare Chinese clarifying ones 「你什么版本」, 「安卓还是苹果」
  that `text.is_question` (question words at the end, question marks) lets through;
- `is_wait`: the speaker goes away to find out (「我看看」, 「收到，我找研发看下，稍等」, "let me
  check"): the conclusion often comes long after, in the same thread;
- `is_confirmation`: it works now (「我也好了」, 「可以了」, "works now", "hot water is back 👍"):
  it closes the thread of the fix it confirms;
- `is_ack`: a short acknowledgement or thanks, naming whom it thanks or not (「收到」, 「好的谢谢」, 「谢谢陈师傅」,
  "ok thanks", "thanks Mick");
- `promises`: the speaker will do something later (「我晚点挪回去试试」, "I'll keep an eye on the
  app"): their next line, hours later, reports back (`threads/resume.py`).

The first four are features of the learned model (`threads/features.py`); none decides a link alone.
"""

from __future__ import annotations

import re

from threadkeep.text import is_question, remembered

_MAX_CUE_CHARS = 48
# The verdicts of the cues every stage asks again are remembered per text (`text.remembered`):
# `asks` alone is asked about each IRC line 11 times (by the assigner's rules, the features, the
# topic cues, the resolution of its thread), and each verdict costs a few regular expressions.


def _starting_with(first: str, pattern: str, flags: int = 0) -> re.Pattern[str]:
    """`pattern`, tried only where one of its matches can start: `first` is a character class holding
    the first character of each of its alternatives. The same matches, 2-3 times faster: left to
    itself the engine tries every alternative at every character (LoCoMo's long English lines:
    26 µs a line for the time cue, 12 µs with the class first)."""
    return re.compile(f"(?={first})(?:{pattern})", flags)


_ASKS_ZH = re.compile(r"什么|哪个|哪款|哪一|哪些|多久|多大|是否|还是.{0,8}$|几点|几号|呢[？?]?$")
# Each cue's Chinese words apart from its English ones: Chinese has no case, and a pattern compiled
# with IGNORECASE as a whole is tried alternative by alternative at every character (LoCoMo's
# English lines: 15.6 µs for the report cue as one pattern, 8.6 µs for the two, the same matches).
_WAIT_ZH = re.compile(
    r"我(?:先)?(?:看看|看下|看一下|瞅瞅|查查|查下|查一下|试试|试下|试一下|问问|问下|问一下|确认下|确认一下|去问|去查|去看|这边看)"
    r"|稍等|等我|等一下|马上看|找(?:研发|技术|开发|同事)|反馈给|帮您?(?:查|看|问)"
)
_WAIT_EN = re.compile(
    r"\blet me (?:check|look|see|ask|try|find)|\bone (?:sec|moment|min)\b|\bgive me (?:a|one|two|five|\d+)"
    r"|\bchecking\b|\blooking into\b|\bi'?ll (?:check|ask|look|find)|\bwill (?:check|ask|look)\b|\bhang on\b"
    r"|\bbrb\b|\bon it\b|\bbe right back\b",
    re.IGNORECASE,
)
_CONFIRM_ZH = re.compile(
    r"好了|可以了|行了|解决了|搞定|正常了|成功了|没问题了|能用了|恢复了|有了|出来了|好使了|生效了|好多了"
    r"|全绿|绿了|全过了?|干净了|不报了|没再(?:报|出现|复现)|不再(?:报|出现)|找到了"
)
_CONFIRM_EN = re.compile(
    r"ok了"  # any case: 「Ok了」
    r"|\bworks?\b|\bworking\b|\bfixed\b|\bsolved\b|\bresolved\b|\bthat (?:did|was) it\b|\ball good\b|\bsorted\b"
    r"|\bis back\b|\bit'?s back\b|\bback (?:now|on)\b|\bit worked\b|\bno longer\b"
    r"|(?<!not )(?<!n't )\b(?:fine|good|ok|okay) now\b|\bmuch better\b|\bback to normal\b"
    r"|\bthat worked\b|\bfound it\b|\bwe'?re in\b"
    r"|\b(?:loads|launches|opens|connects|starts|boots|prints|syncs|charges|runs|green) now\b",
    re.IGNORECASE,
)
_REPORT_ZH = re.compile(
    r"不了|不行|没反应|没有反应|反应都没有|打不开|进不去|登不上|连不上|用不了|失败|报错|出错|错误|闪退|崩溃|卡住|卡死|一直卡|很卡|没到账|没收到|不显示|显示不|"
    r"不见了|丢了|没了|异常|乱码|空白|黑屏|白屏|收不到|发不出|"
    # Devices and services that stopped doing their job, alarms and codes on a screen.
    r"坏了|坏掉|故障|不工作|不亮|不转|不动|不响|不通|不出水|不制冷|不制热|不加热|没声音|没信号|"
    r"没网|断网|掉线|没电|没热水|漏水|漏电|跳闸|堵了|死机|失灵|超时|过期|无法|一直报|误报|报警|告警|显示E\d|报E\d"
)
_REPORT_EN = _starting_with(
    "[ecbfshlkniwgtd]",
    r"\b(?:error|crash(?:es|ed)?|broken|fails?|failed|failing|stuck|freez(?:es|ing)|hangs?|leak(?:s|ing)?)\b"
    r"|\bkeeps? (?:dropping|crashing|failing|freezing|restarting|disconnecting|beeping|flashing|tripping|going off)\b"
    r"|\bstops? (?:halfway|working|responding|charging|mid)|\bno (?:hot water|heating|power|internet|wifi|signal)\b"
    r"|\b(?:is|went|goes) down\b|\bkeeps? (?:showing|saying|giving)\b|\b(?:error|status) ?(?:code )?\d{3}\b"
    r"|\b(?:times?|timed) out\b|\bexpired\b|\bdenied\b|\bbroke\b|\bnot (?:working|loading|showing|syncing|charging)\b",
    re.IGNORECASE,
)
# "doesn't work" also matches the confirmation cue ("works"): negated, it is a report all the same.
_NOT_WORKING = _starting_with(
    "[dwcins]",
    r"\b(?:doesn'?t|does not|don'?t|won'?t|can'?t|cannot|isn'?t|not|stopped)"
    r" (?:work|load|open|start|connect|show|sync|boot|drain|heat|charge|turn on|flush)",
    re.IGNORECASE,
)
_ACK_WORDS = (
    r"[\s\W_]|\[(?!图片|照片|语音|视频|文件|链接|转账|红包|位置|小程序)[^\]\s]{1,4}\]"
    r"|原来如此|有道理|学到了|麻烦了|那行|(?:收到|明白|了解|辛苦)[了啦]?|好[吧啊呀哈啦]|行吧"
    r"|好的|好滴|好哒|好嘞|好|嗯|哦|谢谢|多谢|感谢|谢啦|知道了|懂了|行|可以"
    r"|ok(?:ay)?|k|thanks?|thank you|thx|ty|got it|noted|cool|great|sure|will do|np|perfect|nice|yes|yep|alright"
    r"|(?:cheers|ta|legend|lifesaver|amazing|awesome|brilliant|lovely)\b"
    r"|👍|🙏|👌"
)
# A thanks may name whom it thanks: one word after it ("thanks Mick", "ty both"), up to three Chinese
# characters (「谢谢邓师傅」, 「谢谢大家」, 「辛苦孟师傅」); a WeChat sticker code (「[抱拳]」, not a media placeholder
# such as 「[图片]」) is part of an acknowledgement.
_ACK = re.compile(
    rf"^(?:{_ACK_WORDS})*"
    r"(?:(?:thanks?|thank you|thx|ty|cheers)[\s,]+[^\W\d_]{1,15}|(?:谢谢|多谢|感谢|谢啦|辛苦)[\u4e00-\u9fff]{1,3})?"
    rf"(?:{_ACK_WORDS})*$",
    re.IGNORECASE,
)


@remembered
def asks(text: str) -> bool:
    return is_question(text) or bool(_ASKS_ZH.search(text.strip()))


@remembered
def is_wait(text: str) -> bool:
    return len(text) <= _MAX_CUE_CHARS and bool(_WAIT_ZH.search(text) or _WAIT_EN.search(text))


@remembered
def is_confirmation(text: str) -> bool:
    return len(text) <= _MAX_CUE_CHARS and not asks(text) and bool(_CONFIRM_ZH.search(text) or _CONFIRM_EN.search(text))


# A confirmation that says how it was fixed runs longer than the cues' 48 characters ("0.14.1 is
# out, unpinned and it works now with my undated drafts 👍"): only the unambiguous cues count there
# (the general ones at that length also catch "archives … no longer work", Gitter dev).
_MAX_TOLD_FIX_CHARS = 96
_CONFIRMS_FIX = _starting_with(
    "[wat好可解搞fgb]",
    r"\bworks? now\b|\bworking now\b|\ball works\b|\bthat (?:did|was) it\b"
    r"|(?<!not )(?<!n't )\b(?:fine|good) now\b|\bback to normal\b|好了|可以了|解决了|搞定",
    re.IGNORECASE,
)


@remembered
def confirms_fix(text: str) -> bool:
    """A confirmation (`is_confirmation`), or a longer one telling the fix: "that was it, synced everything…"."""
    if is_confirmation(text):
        return True
    return (
        len(text) <= _MAX_TOLD_FIX_CHARS
        and not asks(text)
        and not _NOT_WORKING.search(text)
        and bool(_CONFIRMS_FIX.search(text))
    )


# A promise of a later step by the speaker: the report back (「挪回去了 地图回来了」, "paid, check
# splitwise") comes after a pause, as the conclusion after a wait does.
_PROMISE_ZH = re.compile(
    r"晚点|晚些|回头|待会|等会|稍后|我.{0,4}(?:一会|明天|今晚|下午|晚上|到时)|我(?:去|跟|和|找|给).{0,6}(?:说|讲|问|拿|转|发|送)|点过去"
)
_PROMISE_EN = re.compile(
    r"\bi'?ll\b|\bi will\b|\bi'?m going to\b|\bwill (?:do|let you know|send|bring|pay|grab|pick)\b",
    re.IGNORECASE,
)


def promises(text: str) -> bool:
    """The speaker will do something later: 「行 我晚点挪回去试试」, 「好 我跟他们说」, "I'll do it tonight"."""
    return (
        len(text) <= _MAX_TOLD_FIX_CHARS
        and not asks(text)
        and bool(_PROMISE_ZH.search(text) or _PROMISE_EN.search(text))
    )


# An error code on a screen: E1024, ERR-502, 0x80070005.
_ERROR_CODE = re.compile(r"(?<![A-Za-z0-9])(?:[A-Z]{1,3}-?\d{2,5}|0x[0-9a-fA-F]{4,})(?![A-Za-z0-9])")


@remembered
def is_report(text: str) -> bool:
    """Something is broken: 「充值没到账」, 「邮件里补偿领不了」, "the app crashes on start", 「安装报 0x80070005」."""
    if _NOT_WORKING.search(text):
        return True
    found = _REPORT_ZH.search(text) or _REPORT_EN.search(text) or _ERROR_CODE.search(text)
    return bool(found) and not is_confirmation(text)


@remembered
def is_ack(text: str) -> bool:
    stripped = text.strip()
    return bool(stripped) and len(stripped) <= _MAX_CUE_CHARS and bool(_ACK.match(stripped))


# A question that calls on the whole group or changes the subject opens a topic of its own; a
# clarifying question ("which leg", 「哪个卫生间的」) names no one and marks no change.
_OPENS_ZH = re.compile(r"有人|有没有人|谁|大家|请问|另外|顺便问|对了问|问一下|问下")
_OPENS_EN = re.compile(
    r"\b(?:anyone|anybody|everyone|everybody|any of you|y'?all)\b"
    r"|^(?:also|btw|by the way|oh and|and also|quick q(?:uestion)?|random q(?:uestion)?|unrelated)\b"
    # "And for Grandad's 80th, what about Sunday lunch…?": a question that names its own subject (a bare
    # "what about the 30th?" is more often a counter-proposal in the same thread).
    r"|^(?:and|also|ok|so)\s+(?:for|re|about|what about|how about)\b",
    re.IGNORECASE,
)
_WHO_ZH = re.compile(r"谁|哪位|有没有人")
_WHO_EN = re.compile(r"^(?:also|and|btw|so)?,?\s*(?:who|what|when|where|which|how)\b", re.IGNORECASE)


def opens_topic(text: str) -> bool:
    """A question to the group or after a change of subject: 「有人知道哪里穿线便宜吗」, "also who's collecting…"."""
    stripped = text.strip()
    question = asks(stripped) or bool(_WHO_ZH.search(stripped) or _WHO_EN.match(stripped))
    return question and bool(_OPENS_ZH.search(stripped) or _OPENS_EN.search(stripped))


# A greeting to the whole group (「大家早」, "morning all") is a thread of its own, that the replies
# to it join, not an answer to whatever was said just before.
_GREETING = re.compile(
    r"^(?:(?:大家|各位)(?:早|早上好|上午好|下午好|晚上好|好)|早上好|早安|晚上好"
    r"|(?:hi|hello|hey|morning|good (?:morning|afternoon|evening))(?:,? (?:all|everyone|everybody|guys|folks|team))?)"
    r"[\s!！~～。.啊呀哈]*$",
    re.IGNORECASE,
)


def greets(text: str) -> bool:
    """A greeting and nothing else: 「大家早」, 「早上好~」, "morning all", "Hello everyone!"."""
    return bool(_GREETING.match(text.strip()))


_BACK_ZH = re.compile(r"这个|那个|这种|那种|这样|同样|一样")
_BACK_EN = _starting_with("[ts]", r"\b(?:that|this|these|those|same|such)\b", re.IGNORECASE)


def points_back(text: str) -> bool:
    """Refers to something said before: "how can i install that darn thing?", 「这个怎么弄」."""
    return bool(_BACK_ZH.search(text) or _BACK_EN.search(text))


_CALL = (
    r"(?:有人吗|有人知道吗|有人在吗|在吗|有没有人|还有人吗"
    r"|anyone|anybody|any(?:one|body) (?:here|around|know)|bump|any ideas?)"
)
_MAX_CALL_CHARS = 32  # a call and a few words naming what it is about: longer, it says something new
_CALLS = re.compile(rf"^{_CALL}[\s?？!！.。~～]*$|^{_CALL}[?？]|{_CALL}[?？]?$", re.IGNORECASE)


def calls_for_answer(text: str) -> bool:
    """A call for an answer to what one asked before: 「有人吗」, 「crontab的事 有人知道吗」, "anyone? the…"."""
    stripped = text.strip()
    return len(stripped) <= _MAX_CALL_CHARS and bool(_CALLS.search(stripped))


_ASKS_WHO_EN = _starting_with(
    "[wc]",
    r"\bwho(?:'s| is| will| can| wants| could)?\b|\b(?:can|could|will) (?:anyone|anybody|someone)\b",
    re.IGNORECASE,
)
_ASKS_WHEN_ZH = re.compile(r"几点|什么时候|啥时候|多久到|哪天|几号")
_ASKS_WHEN_EN = re.compile(r"\bwhat time\b|\bwhat day\b|^(?:\S+[:,]\s*)?when\b", re.IGNORECASE)
_VOLUNTEERS_ZH = re.compile(r"^我(?:也?(?:在|来|去|可以|能|行))?[\s!！。.~～]*$|^我(?:来|去|可以|能)")
_VOLUNTEERS_EN = re.compile(r"^(?:me|i can(?!'?t)|i could|i'?ll|i will|i'?m in|i'?m free)\b", re.IGNORECASE)
_LOOKS = re.compile(r"\b(?:have|take) a (?:quick )?look\b|\blook into\b", re.IGNORECASE)
_MAX_OFFER_WORDS = 8  # "I can if I get the car"; longer, it is telling something else
_TIME = _starting_with(
    r"[\d一二三四五六七八九十两上下中晚]",
    r"\b\d{1,2}:\d{2}\b|\b\d{1,2} ?(?:am|pm)\b|[0-9一二三四五六七八九十两]{1,3}点|上午|下午|中午|晚上",
    re.IGNORECASE,
)


_YOU_ZH = re.compile(r"[你您](?!们)")
_YOU_EN = _starting_with(
    "[yu]", r"(?<!any of )(?<!all of )\b(?:you|your|u)\b(?! guys| all| folks| both)", re.IGNORECASE
)
_ASKS_HOW_LONG_ZH = re.compile(r"多久|多长时间|能用几[天年个]|要几天")
_ASKS_HOW_LONG_EN = re.compile(r"\bhow long\b", re.IGNORECASE)
_DURATION_ZH = re.compile(r"[0-9一二三四五六七八九十两半]+ ?个?(?:秒|分钟|小时|天|周|星期|礼拜|月|年)")
_DURATION_EN = _starting_with(
    r"[\daotfs]",
    r"\b\d+(?:\.\d+)? ?(?:secs?|seconds?|mins?|minutes?|hours?|hrs?|days?|weeks?|months?|years?)\b"
    r"|\b(?:a|one|two|three|four|five|six|a few|a couple of) (?:minutes?|hours?|days?|weeks?|months?|years?)\b",
    re.IGNORECASE,
)


def asks_you(text: str) -> bool:
    """A question to someone there, not to the group: "did you try the reset button?", 「你什么版本」,
    「您重启过吗」 ("any of you", "you guys", 你们 call on the group)."""
    return asks(text) and bool(_YOU_ZH.search(text) or _YOU_EN.search(text))


def asks_how_long(text: str) -> bool:
    """Asks for a duration: 「电池一般能用多久」, "how long does the charge last"."""
    return asks(text) and bool(_ASKS_HOW_LONG_ZH.search(text) or _ASKS_HOW_LONG_EN.search(text))


def tells_duration(text: str) -> bool:
    """Names a duration: 「大概8个月」, "about two weeks", "45 min"."""
    return bool(_DURATION_ZH.search(text) or _DURATION_EN.search(text))


@remembered
def asks_who(text: str) -> bool:
    """Asks who will do something: 「周五谁值班」, "who's collecting Nana tomorrow"."""
    return bool(_WHO_ZH.search(text) or _ASKS_WHO_EN.search(text))


def asks_when(text: str) -> bool:
    """Asks for a time or a day: 「几点到」, "what time is everyone landing"."""
    return asks(text) and bool(_ASKS_WHEN_ZH.search(text) or _ASKS_WHEN_EN.search(text))


def volunteers(text: str) -> bool:
    """A first-person offer, the answer to a "who": 「我」, 「我也在」, "I can if I get the car"."""
    stripped = text.strip()
    if asks(stripped) or len(stripped.split()) > _MAX_OFFER_WORDS or is_wait(stripped) or _LOOKS.search(stripped):
        return False  # "I'll have a look" offers to look into the thread one is in, not to collect Nana
    return bool(_VOLUNTEERS_ZH.match(stripped) or _VOLUNTEERS_EN.match(stripped))


def tells_time(text: str) -> bool:
    """Names a time of day: 「下午两点半」, "10:40 from gatwick"."""
    return bool(_TIME.search(text))
