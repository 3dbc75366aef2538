"""Did a thread reach a conclusion? resolved / workaround / open.

- resolved: someone suggested something (a fix, an answer, a screenshot of the setting, an offer)
  and someone other than the suggester then said it worked (「好了」, 「找到了 谢谢」, "that fixed
  it", "me too, works now"); or one who was there before the suggestion (the asker, a "+1")
  reported doing it ("Held it, light went green", 「重启了，可以了」); or the asker, or one who
  joined the report, said it works with nobody's help ("found them, they were in my coat");
- a question of fact rather than of how to fix or do something ("who's picking up grandma?" /
  "I can"; 「周末有客服吗」 / 「有的」) is resolved once anyone but the answerer takes the answer
  ("thanks bro", 「好的」, "perfect"): for a fix or a how-to an "ok" only says the advice was read
  (the sample's 「好的」 after a how-to is a workaround), so there only a confirmation counts. Two
  answers need no more than an "ok" either: one saying it is already done (「已原路退回」, "fix
  is out, they can re-run it"), taken by whoever had the problem, and a thread that opens by
  telling a thing done ("booked the court for 7"), taken by anyone else. An announcement (a
  statement asking nothing and reporting nothing broken: 「观察记录周四前发我邮箱」, "standup
  moves to 10") is settled once two others take it: one 「收到」 may be staff acknowledging a
  report the cues miss. Giving in (「好吧 那我一个个对比」, "ok fine") takes nothing;
- workaround: a suggestion nobody confirmed, or one that a later "still not working" took back;
- open: nobody suggested anything: only the report, me-too replies, requests for logs, promises
  to look into it or to answer in private, "no news yet", a feature put on the roadmap.

The confirmation words are those of `cues.confirms_fix` (the thread assigner's), with the few
this decision needs besides ("found it", 「装上了」, 「明白了」) and without results foretold
(「重启就好了」, "should be back now").

Measured per corpus against hand labels by benchmarks/resolution.py
(`benchmarks/data/resolution_labels.json` holds the hand chats' labels and their conventions).
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass, field

from threadkeep.model import Message
from threadkeep.text import is_me_too, is_noise, is_question
from threadkeep.threads.cues import (
    asks,
    asks_who,
    calls_for_answer,
    confirms_fix,
    is_ack,
    is_report,
    is_wait,
    volunteers,
)

# Chinese and English apart: case-blind matching of the Chinese alternatives would only cost time.
# What `cues.confirms_fix` does not say: found, installed, understood, seen to work.
_WORKED_ZH = re.compile(
    r"有效(?!期)|管用|好使|没问题|"
    r"找到了|看到了|找回来了|回来了|装上了|装好了|登上了|连上了|能连上|变绿了|没再报|不报了|能打开了|能编辑了|"
    r"明白了|懂了|了解了|够了|就有了|加上了|推下去了|效果不错"
)
_WORKED_EN = re.compile(
    r"\b(?:that|it|this)\s+(?:worked|fixed it|did it|did the trick)\b|\bgot it working\b|\bfound (?:it|them)\b", re.I
)
# A result foretold is no confirmation: 「重启就好了」, "should be back now".
_FORETOLD = re.compile(r"[就再](?:好了|可以了|行了|能用了|正常了|有了)|应该|\bshould\b|\bmight\b|\bhopefully\b", re.I)
_THANKS = re.compile(r"谢谢|感谢|多谢|谢了|thanks|thank you|\bty\b|👍|✌️|👌|🙏", re.IGNORECASE)
_DENIED = re.compile(
    r"还是|不行|没用|无效|没效果|不好使|依旧|仍然|"
    r"doesn'?t work|didn'?t work|\bstill\b|not working|\bsame (?:error|problem|thing)\b",
    re.IGNORECASE,
)
# Not an answer: asking for logs or screenshots, or promising to look into it.
_NOT_AN_ANSWER = re.compile(
    r"稍后回复|稍后|记录给|已记录|记下了|转给|反馈给|跟进|问一下|问问|查一下|看一下|发一下|发我|发给我|截图给|私聊|私信|"
    r"提供一下|打包|没人管|有结论|说一下|说一声|排期|暂时没有|没有消息|"
    r"let me check|will look|send (?:me|us) the log|\broadmap\b|\bno (?:news|word|reply) yet\b",
    re.IGNORECASE,
)
# Words ending in -ed that report no action: "need", "red", "confused, nothing changed".
_NOT_DONE = (
    "need|feed|speed|indeed|seed|bleed|shed|red|bed|wed"
    "|confused|tired|bored|scared|worried|excited|interested|supposed|used|based|annoyed|surprised|relieved"
)
# Reporting a thing done, at the start of a clause: "Held it", "Done, it's heating now", "pinned
# 0.13.3, builds again"; 「升级了 好了」, 「拔了电池重新装」, 「勾掉了几个大的」.
_DID_EN = re.compile(
    r"(?:^|[.,;!]\s*|\band\s+)(?:(?:i|we|i'?ve|just|ok|yep|yes|so)[,\s]+)*"
    r"(?:done|did (?:it|that)|(?!(?:" + _NOT_DONE + r")\b)[a-z]{2,}ed"
    r"|held|went|got|found|put|set|ran|rang|took|made|sent|paid|bought|brought|told|gave|left|reset|rebooted)\b",
    re.IGNORECASE,
)
_DID_ZH = re.compile(
    r"(?:^|[\s，,。！!])(?:我|也|都|已经|刚|刚刚)*(?:(?![要会快又不没忘])[\u4e00-\u9fff]){1,4}了(?![吗没呢么])"
)
# Asking how to do or fix something, where an "ok" is no answer to whether it worked.
# Why something goes wrong is a report too: 「为啥我的图标都变成问号了」, "why does it crash".
_HOW_ZH = re.compile(r"怎么|怎样|如何|咋|为什么|为啥|有没有办法|能不能|能否")
# 「能…吗」 asks how to, unless it asks where, who or when: 「哪里能打印A3的吗」 is a question of fact.
_CAN_ZH = re.compile(r"(?:能|支持).{0,16}吗")
_WH_ZH = re.compile(r"哪|谁|几|多少|什么时候")
# "also has anyone got…", "btw does the…": the question after the word that joins it on.
_LEAD_EN = re.compile(r"^(?:also|and|btw|so|ok|oh|random q|quick q)\b[\s,:]*", re.IGNORECASE)
_HOW_EN = re.compile(
    r"\bhow (?:do|can|could|should|would|to)\b|\bis there (?:a|any) way\b|\bany way to\b|\bwhat'?s the (?:best )?way\b"
    r"|\bwhy\b",
    re.IGNORECASE,
)
# Taking an answer, besides an acknowledgement (`cues.is_ack`) as the whole message or its first word
# ("perfect, passing that on", 「好 那放心推了」): 「那7点半见」, "sounds good", "deal".
_ACCEPTS = re.compile(r"^(?:那|啊|噢)|^(?:sounds good|deal|yay|fine|ah)\b", re.IGNORECASE)
_FIRST_WORD = re.compile(r"[\s,，.。!！;；:：~～]+")
# Giving in is not taking an answer: 「好吧 那我一个个对比」, "ok fine, I'll do them by hand" (a workaround at best).
_RESIGNED = re.compile(r"^(?:那?好吧|行吧|ok(?:ay)? fine\b|fine then\b|oh well\b)", re.IGNORECASE)
_TRIES = re.compile(r"试|看看|\btry\b|\bwill do\b|\blet me\b|\bi'?ll\b", re.IGNORECASE)
_PUT_OFF = re.compile(r"回头|再看|再说|\blater\b", re.IGNORECASE)  # 「好 明天再看 先下班了」
# An answer that tells it is already done: 「已原路退回」, 「财务说已经处理了」, "fix is out", "done now".
_DONE = re.compile(r"已经?(?!记录|反馈|转)|\bdone\b|\bfixed\b|\bis out\b|\bdeployed\b|\bsorted\b", re.IGNORECASE)


def _asks(text: str) -> bool:
    """A question rather than an answer that happens to quote one (「点「收不到验证码？」选语音」)."""
    return text.endswith(("?", "？", "吗")) or (len(text) <= 20 and is_question(text))


def _denies(text: str) -> bool:
    """It still does not work: 「还是不行」, "tried that, still failing", "same error"."""
    return bool(_DENIED.search(text)) or is_report(text)


def _says_nothing_settled(text: str) -> bool:
    """Neither a confirmation, nor a thing done, nor an answer taken: empty, a question, a denial."""
    return not text or _asks(text) or _denies(text)


def _worked(text: str) -> bool:
    if asks(text) or _FORETOLD.search(text):  # any question word: 「好了吗」, 「课程有效期到什么时候」
        return False
    if confirms_fix(text) or _WORKED_ZH.search(text) or _WORKED_EN.search(text):
        return True
    # 「清了 剩 1 个多 G 了 哈哈 谢谢」: a report of something done, with thanks.
    return "了" in text and bool(_THANKS.search(text))


def _holds_back(text: str) -> bool:
    """Going to try, to look, or later: 「好的 我试试」, "ok I'll try", 「好 明天再看」."""
    return is_wait(text) or bool(_TRIES.search(text) or _PUT_OFF.search(text))


def _did(text: str) -> bool:
    return not _holds_back(text) and bool(_DID_ZH.search(text) or _DID_EN.search(_LEAD_EN.sub("", text)))


def _takes(text: str) -> bool:
    if _holds_back(text) or _RESIGNED.match(text):
        return False
    return is_ack(text) or is_ack(_FIRST_WORD.split(text, 1)[0]) or bool(_THANKS.search(text) or _ACCEPTS.match(text))


def confirms(text: str) -> bool:
    """Someone saying a suggestion worked: 「好了」, 「找到了 谢谢」, "that fixed it", "works now"."""
    text = text.strip()
    return not _says_nothing_settled(text) and _worked(text)


def reports_done(text: str) -> bool:
    """Telling what one did, after a suggestion: "Held it, light went green", 「擦了 清楚了」."""
    text = text.strip()
    return not _says_nothing_settled(text) and _did(text)


def accepts(text: str) -> bool:
    """Taking an answer to a question of fact: 「好的」, "thanks bro 🙏", "great thanks", 「那7点半见」."""
    text = text.strip()
    return not _says_nothing_settled(text) and _takes(text)


def _asks_how(text: str) -> bool:
    """A question of how to do or fix something, or a report of something broken."""
    if is_report(text) or _HOW_ZH.search(text) or _HOW_EN.search(text):
        return True
    return bool(_CAN_ZH.search(text)) and not _WH_ZH.search(text)


def _suggests(message: Message, reporters: set[str]) -> bool:
    """An answer or a fix from someone without the problem; "found it: the date filter…" tells one too."""
    if message.sender in reporters:
        return False
    if message.is_media:
        return True  # a screenshot of the settings page answers as well as words do
    text = message.text.strip()
    if volunteers(text):
        return True  # 「我」, "I can": the answer to a "who"
    return not (is_noise(text) or is_ack(text) or is_me_too(text) or _asks(text) or _NOT_AN_ANSWER.search(text))


def _of_fact(first: str) -> bool:
    """The thread opens with a question of fact ("who's picking up…", 「几点开」), not a report or a how-to."""
    question = asks(first) or asks_who(first) or asks(_LEAD_EN.sub("", first))
    return question and not calls_for_answer(first) and not _asks_how(first)


@dataclass
class _Reading:
    """What is known so far while reading a thread in order."""

    of_fact: bool  # it opens with a question of fact
    reporters: set[str]  # the asker and who joined the report (me too) before anyone suggested anything
    seen: set[str] = field(default_factory=set)  # who has spoken
    earlier: set[str] = field(default_factory=set)  # who had spoken before the suggestion
    suggested_by: str | None = None
    suggested: Message | None = None  # the suggester's fullest line before the confirmation
    done: bool = False  # the suggestion says it is already done (「已原路退回」, "fix is out")
    told: bool = False  # the thread opens telling a thing done ("morning, booked it"): taking it concludes
    # It opens with a statement asking nothing and reporting nothing broken (「观察记录周四前发我邮箱」, "standup
    # moves to 10"): two others taking it conclude it. One is not enough: a report the cues miss (「打印机又卡纸了」)
    # taken by staff's 「收到」 is still open.
    announces: bool = False
    takers: set[str] = field(default_factory=set)
    problem: bool = True  # it opens with a report or a how-to: an answer taken may still be a workaround

    def closes(self, message: Message) -> bool:
        """Does `message` (not the suggester's) conclude the thread?"""
        text = message.text.strip()
        if _says_nothing_settled(text):
            return False
        if _worked(text):
            return self.suggested_by is not None or message.sender in self.reporters  # "found it, in my coat"
        if self.told and message.sender not in self.reporters and _takes(text):
            return True
        if self.announces and message.sender not in self.reporters and _takes(text):
            self.takers.add(message.sender)
            if len(self.takers) >= 2:
                return True
        if self.suggested_by is None:
            return False
        if message.sender in self.earlier and _did(text):
            return True  # "Held it, light went green": one who was there before the suggestion did it
        # A fact needs only to be taken; so does an answer that says it is already done.
        return (self.of_fact or not self.problem or (self.done and message.sender in self.earlier)) and _takes(text)

    def suggestion(self, message: Message) -> None:
        self.suggested, self.suggested_by = message, message.sender
        self.done, self.earlier = bool(_DONE.search(message.text)), set(self.seen)


# A code on a screen (E1107, E-21, F28, 0x80070005): what something broken shows.
def opens_with_a_problem(spoken: Sequence[Message]) -> bool:
    """The thread opens with something broken or a how-to: the opener's lines before anyone else
    speaks report it (`cues.is_report`, an error code) or ask how to do something."""
    opener = spoken[0].sender
    for message in spoken:
        if message.sender != opener:
            return False
        text = message.text.strip()
        if is_report(text) or _asks_how(text):
            return True
    return False


def resolution_state(messages: Sequence[Message]) -> str:
    return _read(messages)[0]


def conclusion(messages: Sequence[Message]) -> tuple[Message, ...]:
    """The lines that settle the thread, in order: the answer taken and the line confirming it
    ("resolved"), or the answer alone ("workaround"); none while it is open."""
    _, suggested, closer = _read(messages)
    return tuple(message for message in (suggested, closer) if message is not None)


def _read(messages: Sequence[Message]) -> tuple[str, Message | None, Message | None]:
    """The thread's state, the answer it ends on (if any) and the line that confirmed it (if resolved)."""
    spoken = [message for message in messages if not message.is_system and not message.recalled]
    if not spoken:
        return "open", None, None
    first = spoken[0].text.strip()
    problem = opens_with_a_problem(spoken)
    told = reports_done(first)
    announces = not (told or problem or asks(first) or is_noise(first))
    reading = _Reading(_of_fact(first), {spoken[0].sender}, told=told, problem=problem, announces=announces)
    state, closer = "open", None
    for message in spoken:
        text = message.text.strip()
        if message.sender == reading.suggested_by:
            if state != "resolved" and not _asks(text) and len(text) > len(reading.suggested.text.strip()):
                reading.suggested = message  # the answer is the suggester's fullest line ("① … ② …"), not "稍等"
        elif state == "resolved":
            if _DENIED.search(text) and not _asks(text):
                state, closer = "workaround", None  # "still not working": the confirmation before does not hold
        elif reading.closes(message):
            state, closer = "resolved", message
        elif _suggests(message, reading.reporters):
            reading.suggestion(message)
            state = "workaround"
        elif reading.suggested_by is None and (is_me_too(text) or is_report(text)):
            reading.reporters.add(message.sender)
        reading.seen.add(message.sender)
    return state, reading.suggested if state != "open" else None, closer
