"""What a question asks for: the kinds of value (a price, a duration, a time, a version, a plan, a phone
number, an email address, a code or password, a measurement, a number of things) a passage about its subject
must state to answer it, and the question with colloquial asking words in their standard form.

A section naming the product but no price does not answer "how much is it"; a section naming the firmware
but no version string does not answer "which version". `threadkeep.answerability` reads the evidence for
them; this module only reads the question and says how each value looks.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from threadkeep.text import content_tokens

MIN_SUBJECT = 0.5  # share of the rarity weight of what a value question is about, in the passage stating one
# Error codes, versions and identifiers (E1024, V2.7.3, redirect_uri, WebDAV): also how a code looks.
CODE = re.compile(
    r"(?<![A-Za-z0-9_.])(?:"
    r"0x[0-9a-fA-F]{4,}"  # 0x80070005
    r"|[vV]?\d+(?:\.\d+){1,3}(?:[-+.]?[A-Za-z]\w*)?"  # 3.2.0, V2.7.3, 1.4.2-beta
    r"|(?=[\w-]*\d)(?=[\w-]*[A-Za-z])[A-Za-z0-9]+(?:[_-][A-Za-z0-9]+)*"  # E1024, E-21, win7, ERR_SYNC-409
    r"|[A-Za-z]+(?:_[A-Za-z0-9]+)+"  # redirect_uri
    r"|[A-Z]{4,}"  # ETIMEDOUT
    r"|[A-Za-z]*[a-z][A-Z][A-Za-z]*"  # WebDAV, HarmonyOS, macOS
    r")(?![A-Za-z0-9_])"
)

# Questions asking for a value of a kind the evidence must then hold. A section naming the product but no
# price does not answer "how much is it"; a section naming the firmware but no version string does not
# answer "which version". Only kinds of value recognisable with high precision are here: a place ("where",
# 在哪: "首页-学习-错题本", "the drawer under the coffee machine") or a person ("who") is not.
_DURATION_ASKING = re.compile(
    r"几天|几年|几个月|几周|几个小时|几小时|几分钟|多少(?:天|年|个月|小时|分钟)|多久|多长时间|要等"
    r"|\bhow long\b|\bhow many\b",
    re.I,
)
# "How many" of things (not of days or hours: a duration): a passage must state a number of them, in
# Chinese with the measure word asked for (多少张 is answered by "20 张", not by "100 个指纹").
_COUNT_ASKING = re.compile(
    r"(?:多少|几)(?P<counter>个(?!小时|月|星期|工作日)|张|份|次|节|条|位|台|把|种|页|行|块|名)"
    r"|\bhow many\b(?! (?:days|hours|weeks|months|years|minutes)\b)(?: (?P<counted>[a-z]+))?",
    re.I,
)
_NUMBER = r"(?:\d+(?:[.,]\d+)*|[一二两三四五六七八九十百千万]+)"
# Numbers written as words, for counts ("two phone booths") and durations ("two weeks", "a day").
_EN_NUMBERS = r"one|two|three|four|five|six|seven|eight|nine|ten|eleven|twelve|fifteen|twenty|thirty|a few|several"
_NUMBER_WORD = re.compile(rf"{_NUMBER}|\b(?:once|twice|{_EN_NUMBERS}|dozens?|couple)\b", re.I)
_WEEKDAY = r"(?:周|星期|礼拜)[一二三四五六日天末]"
_MONTHS = "january|february|march|april|may|june|july|august|september|october|november|december"
_DAYS = "monday|tuesday|wednesday|thursday|friday|saturday|sunday"
# A question in the past tense ("when did she go", 什么时候买的): a chat message's time dates what it reports.
_PAST = re.compile(r"\b(?:did|was|were|had|happened)\b|(?:了|过|的)[吗呢]?[?？]?\s*$", re.I)
# How long something took: a past question, or 了 before the asking words (等了多久, 修了几个小时).
_TOOK = re.compile(rf"{_PAST.pattern}|[了过](?:多久|多长|几|多少)", re.I)


# Colloquial ways of asking, as the standard words the rules read: 咋 is 怎么, 啥 is 什么 (咋整 / 咋办 / 咋弄 ask
# what to do, as 怎么办 does).
_COLLOQUIAL = (("咋整", "怎么办"), ("咋办", "怎么办"), ("咋弄", "怎么办"), ("咋", "怎么"), ("啥", "什么"))


# English contractions, typed with or without the apostrophe ("isnt", "wont", "theres"), as the function words
# they stand for: "won't" is no topic, though full text would index it as the word "won".
_CONTRACTIONS = {
    "isn": "is not",
    "aren": "are not",
    "wasn": "was not",
    "weren": "were not",
    "won": "will not",
    "can": "can not",
    "don": "do not",
    "doesn": "does not",
    "didn": "did not",
    "haven": "have not",
    "hasn": "has not",
    "hadn": "had not",
    "shouldn": "should not",
    "couldn": "could not",
    "wouldn": "would not",
}
_NEGATIVE = re.compile(rf"\b({'|'.join(_CONTRACTIONS)})'?t\b", re.I)
_IS = re.compile(r"\b(there|what|how|where|that|who)'?s\b", re.I)


def standard_question(question: str) -> str:
    """The question with colloquial asking words in their standard form (啥版本 asks for a version as 什么版本
    does; 咋回事 is 怎么回事; "wont" and "won't" are "will not")."""
    for colloquial, standard in _COLLOQUIAL:
        question = question.replace(colloquial, standard)
    question = _NEGATIVE.sub(lambda match: _CONTRACTIONS[match[1].lower()], question)
    return _IS.sub(lambda match: f"{match[1]} is", question)


@dataclass(frozen=True, slots=True)
class AnswerType:
    asked: str  # what is asked, in words a user reads
    asks: re.Pattern[str]  # how a question asks for it
    asking: re.Pattern[str]  # the asking words, which are not the question's subject
    value: re.Pattern[str]  # how such a value looks in a passage
    # Questions whose value a chat thread's message times state: how long something took, when it happened.
    dated: re.Pattern[str] | None = None
    # The share of the subject's rarity weight a thread must hold for its times to count. A message's time
    # dates whatever it reports, so for "when did" the decision's own coverage test is enough; how long
    # something took needs the thread to be about that thing.
    dated_subject: float = MIN_SUBJECT
    # The same share for a thread stating the value: a version is often given in a reply a day later that
    # names the thing another way ("Win7" for "Windows 7"), so a thread stating one counts.
    chat_subject: float = MIN_SUBJECT


_PRICE_FOLLOWERS = "(?:is|are|was|were|does|do|did|will|would|should|can|could|for|to|it|they|per|money|extra|more)"
_PLAN_ASKING = re.compile(
    r"(?:哪个|什么|哪种|哪一个|哪款)(?:套餐|会员|方案)"
    r"|\bwhich (?:plan|tier|membership|edition|subscription)s?\b",  # "what plans does Jon have" asks his intentions
    re.I,
)
_EDITION = (
    r"[\u4e00-\u9fff]版(?!本)|\b[A-Z]\w* (?:edition|plan|tier|version|membership|pass)\b|[\u4e00-\u9fff]{1,4}套餐"
)
_VERSION_ASKING = re.compile(r"(?:哪个|什么|哪一个)版本|版本号|\b(?:which|what) version\b", re.I)
# A duration however its number and unit are written: "3 天", 三个工作日, 十五天, 两周, 10秒, "48 hours",
# "1-2 business days", "a week", "15 seconds".
_DURATION = re.compile(
    r"(?:\d|[一两二三四五六七八九十百半])\s*个?\s*(?:天|日|小时|分钟|秒|周|星期|礼拜|月|年|工作日|自然日)"
    r"|当天|当日|终身|永久"
    rf"|(?:\b(?:a|an|{_EN_NUMBERS})\s+|\d\s*(?:-\s*\d+\s*)?)(?:(?:business|working|calendar|full)\s+)?"
    r"(?:days?|hours?|hrs?|minutes?|mins?|seconds?|secs?|weeks?|months?|years?)\b"
    r"|same day|overnight|\bforever\b|\blifetime\b",
    re.I,
)

ANSWER_TYPES = (
    AnswerType(
        "a price",
        # "How much notice / time / space" asks for a quantity of that thing; "how much is / does / for" for a price.
        re.compile(
            rf"多少钱|价格|价钱|收费|售价|费用|\bprices?\b|\bhow much\b(?!\s+(?!{_PRICE_FOLLOWERS}\b)[a-z])",
            re.I,
        ),
        re.compile(r"多少钱?|价格|价钱|收费|售价|费用|\bprices?\b|\bhow much\b|\bcosts?\b|\bcharges?\b", re.I),
        re.compile(r"[¥$€£￥]\s*\d|\d\s*(?:元|块|美元|欧元|rmb|cny|usd|eur|dollars?|euros?)|免费|\bfree\b", re.I),
    ),
    AnswerType(
        "a duration",
        re.compile(
            r"几天|几年|几个月|几周|几个小时|几小时|几分钟|多少(?:天|年|个月|小时|分钟)|多久|多长时间"
            r"|\bhow long\b|\bhow many (?:days|hours|weeks|months|years|minutes)\b",
            re.I,
        ),
        _DURATION_ASKING,
        _DURATION,
        # How long something took ("how long did the repair take") is dated by a thread's message times; how
        # long something takes ("审核要多久", "how often") asks for a duration someone states.
        dated=_TOOK,
    ),
    AnswerType(
        "a time or date",
        re.compile(
            # "When should I / 什么时候需要" asks for a condition ("电量低于 20% 时"), not a time.
            r"(?:什么时候|什么时间)(?!需要|要|该|应该|会|可以|才|能|用)|几点|哪天|哪一天|几号|几月|哪个月|哪年|哪一年"
            r"|周几|星期几|^\s*when (?:is|are|was|were|did|will)\b|\bwhat (?:time|date|day|year|month)\b"
            r"|\bwhich (?:day|date|year|month)\b",
            re.I,
        ),
        re.compile(
            r"什么时候|什么时间|几点|哪天|哪一天|几号|几月|哪个月|哪年|哪一年|周几|星期几"
            r"|\bwhen\b|\bwhat (?:time|date|day|year|month)\b|\bwhich (?:day|date|year|month)\b",
            re.I,
        ),
        re.compile(
            rf"\d{{1,2}}\s*[:：]\s*\d{{2}}|\d\s*(?:点|时|号|日|月|年)|[一二两三四五六七八九十]+(?:点|号|月)"
            rf"|{_WEEKDAY}|[今明后昨前]天|[上下本这]个?(?:周|星期|月)|早上|上午|中午|下午|晚上|凌晨|每天|工作日|节假日"
            rf"|\b\d{{1,2}}\s*(?:am|pm|a\.m\.|p\.m\.)|\b(?:19|20)\d{{2}}\b|\b(?:{_MONTHS}|{_DAYS})\b"
            r"|\b(?:today|tomorrow|tonight|yesterday|morning|afternoon|evening|noon|midnight|daily|weekly|monthly"
            r"|weekends?|weekdays?|(?:last|next|this) (?:week|month|year))\b"
            rf"|{_DURATION.pattern}",  # a time from now: "3 天后", "in two weeks"
            re.I,
        ),
        dated=_PAST,
        dated_subject=0.0,
    ),
    AnswerType(
        "a version",
        _VERSION_ASKING,
        _VERSION_ASKING,
        # 版本 is also an edition: "哪个版本支持 SSO" is answered by 企业版, "which version" by "the Pro plan".
        re.compile(rf"(?<![\w.])[vV]?\d+(?:\.\d+){{1,3}}\b|{_EDITION}"),
        chat_subject=0.0,
    ),
    AnswerType(
        # "Which plan includes parking" is not answered by a section listing plans without parking: the plan
        # must be named where the rest of the question is.
        "a plan or edition",
        _PLAN_ASKING,
        _PLAN_ASKING,
        re.compile(_EDITION),
    ),
    AnswerType(
        # Which model someone has or a part fits: a product's name ("Brava Duo", "X3 Pro", 标准版), not a
        # passage that only mentions the product.
        "a model",
        re.compile(r"(?:什么|哪个|哪一个|哪款|哪一款)型号|型号是?(?:什么|多少)|\b(?:which|what) models?\b", re.I),
        re.compile(r"(?:什么|哪个|哪一个|哪款|哪一款)?型号(?:是?(?:什么|多少))?|\b(?:which|what) models?\b", re.I),
        re.compile(
            rf"{_EDITION}|(?<![\w.])(?=[\w-]*\d)(?=[\w-]*[A-Za-z])[A-Za-z0-9]+(?:-[A-Za-z0-9]+)*(?![\w.])"
            r"|\b[A-Z][a-z]+ (?:[A-Z][a-z]+|[A-Z]*\d\w*|[A-Z]{2,})\b"
        ),
    ),
    AnswerType(
        # A messaging account (微信号, QQ, a handle): an ID someone gave, not a passage naming the app.
        "an account ID",
        re.compile(
            r"(?:微信|QQ)\s*号?\s*(?:是)?(?:多少|什么)|\bwhat(?:'s| is) .*\b(?:handle|username|user name)\b", re.I
        ),
        re.compile(r"(?:微信|QQ)\s*号?|是?(?:多少|什么)|\bwhat(?:'s| is)?\b|\b(?:handle|username|user name)\b", re.I),
        re.compile(
            r"(?:微信|wechat|wx|vx|QQ|handle|username|id)\s*(?:号|id)?\s*[:：是为]?\s*@?[A-Za-z0-9_-]{5,}", re.I
        ),
    ),
    AnswerType(
        "a phone number",
        re.compile(r"(?:手机|电话)号?码?(?:是)?多少|号码是|联系电话|\b(?:what|which)(?:'s| is) .*phone number", re.I),
        re.compile(r"手机号?码?|电话号?码?|号码|多少|\bphone number\b", re.I),
        re.compile(r"\d[\d*\- ]{6,}\d"),
    ),
    AnswerType(
        # "Raj's email" asks for an address; "how do I change my email" does not.
        "an email address",
        re.compile(r"(?:邮箱|电子邮件)(?:地址)?(?:是)?(?:多少|什么)|\bwhat(?:'s| is) .*\be-?mail(?: address)?\b", re.I),
        re.compile(r"邮箱|电子邮件|地址|是?多少|什么|\bwhat(?:'s| is)?\b|\be-?mail\b|\baddress\b", re.I),
        re.compile(r"[\w.+-]+@[\w-]+\.[\w.]+"),
    ),
    AnswerType(
        # How high, big, heavy or far: a number with a unit of measure (门槛多高 is not answered by a section on
        # 门槛 without one; 水箱多大 by "300 毫升"). 多长 of 多长时间 asks for a duration.
        "a measurement",
        re.compile(
            r"多高|多大(?!年纪|岁)|多重|多远|多宽|多厚|多长(?!时间)|多少(?:厘米|毫米|米|公斤|克|毫升|升|平方|寸)"
            r"|\bhow (?:big|tall|high|heavy|far|wide|large|thick)\b|\bin (?:metres|meters|cm|inches|feet)\b",
            re.I,
        ),
        re.compile(
            r"多高|多大|多重|多远|多宽|多厚|多长|多少|\bhow (?:big|tall|high|heavy|far|wide|large|thick)\b"
            r"|\bin (?:metres|meters|cm|inches|feet)\b",
            re.I,
        ),
        re.compile(
            r"\d\s*(?:厘米|毫米|公里|千米|米|公斤|千克|克|毫升|升|平方米|平米|寸|英寸|GB|TB|MB|mAh|瓦|W\b)"
            r"|\d\s*(?:cm|mm|km|kg|g|ml|l|m|m2|sq ?m|in|ft|lbs?|inch(?:es)?|feet|foot|metres?|meters?|litres?|liters?"
            r"|grams?|kilos?|pounds?|square (?:metres|meters|feet))\b",
            re.I,
        ),
    ),
    AnswerType(
        # "What is the gate code" asks for the code itself; 虚位密码是什么 asks what a kind of password is.
        "a code or password",
        re.compile(
            r"(?:密码|验证码|门禁码|开门码)(?:是)?多少"
            r"|\bwhat(?:'s| is| are) (?:the |my |our )?(?:[\w-]+ ){0,4}(?:codes?|passwords?|passcodes?|pins?)\b",
            re.I,
        ),
        re.compile(
            r"密码|验证码|门禁码|开门码|是?多少|\bwhat(?:'s| is| are)?\b|\b(?:codes?|passwords?|passcodes?|pins?)\b",
            re.I,
        ),
        # A number of three digits or more, or a code such as "harbor-guest-2026"; "the password is on the
        # card by the door" says where it is, not what it is.
        re.compile(rf"(?<![\w.])\d{{3,}}(?![\w.])|{CODE.pattern}"),
    ),
)


def count_value(question: str) -> re.Pattern[str] | None:
    """How a passage states the number a "how many" question asks for; None when it asks for none."""
    match = _COUNT_ASKING.search(question)
    if match is None:
        return None
    if match["counter"]:
        return re.compile(rf"{_NUMBER}\s*(?:多)?{match['counter']}")
    counted = content_tokens(match["counted"] or "")
    if not counted or counted[0] == "time":
        return _NUMBER_WORD  # "how many times": a count of events, which no passage states as "N times"
    # As for a Chinese measure word: "how many phone booths" is answered by "two phone booths", not by a
    # number of something else in the same section ("floor 3", "1 credit a page").
    # The number before the thing ("two phone booths") or after it as a label or a table cell ("Users: 10",
    # "| Users | 10 |", "users up to 10").
    thing = re.escape(counted[0])
    before = rf"(?:{_NUMBER_WORD.pattern})\s+(?:[\w'-]+\s+){{0,2}}{thing}"
    after = rf"\b{thing}\w*(?:\s*[:：|]\s*|\s+)(?:(?:up to|at most|max(?:imum)?)\s+)?(?:{_NUMBER_WORD.pattern})"
    return re.compile(f"{before}|{after}", re.I)


# Units of measure a question may name ("多少伏", "几度电", "in decibels"), each with the ways a passage writes a
# number in it: a value in another unit is no answer (续航 "65 公里" says nothing of 多少伏, "18 g" nothing of
# decibels).
_UNITS = (
    ("伏特?|volts?", r"伏特?|V|volts?"),
    ("千瓦时|度电?|kwh|kilowatt[ -]hours?", r"度|kWh|千瓦时|kilowatt[ -]hours?"),
    ("千?瓦|watts?|kilowatts?", r"千?瓦|k?W|(?:kilo)?watts?"),
    ("分贝|decibels?|db", r"分贝|dB|decibels?"),
    ("毫安时?|mah", r"毫安时?|mAh"),
    ("公里|千米|kilomet(?:re|er)s?|km", r"公里|千米|km|kilomet(?:re|er)s?"),
    ("miles?|mph", r"miles?|mi\b|mph"),
    ("英寸|寸|inch(?:es)?", r"英?寸|inch(?:es)?|in\b|\""),
    ("厘米|centimet(?:re|er)s?|cm", r"厘米|cm|centimet(?:re|er)s?"),
    ("毫米|millimet(?:re|er)s?|mm", r"毫米|mm|millimet(?:re|er)s?"),
    ("米|met(?:re|er)s?", r"米|m\b|met(?:re|er)s?"),
    ("公斤|千克|斤|kilo(?:gram)?s?|kg", r"公斤|千克|斤|kg|kilo(?:gram)?s?"),
    ("pounds?|lbs?", r"pounds?|lbs?"),
    ("毫升|升|lit(?:re|er)s?|millilit(?:re|er)s?|ml", r"毫?升|m?l\b|ml|(?:milli)?lit(?:re|er)s?"),
    ("bars?|psi|帕|巴", r"bars?|psi|k?Pa|帕|巴"),
)
_UNIT_ASKING = re.compile(
    r"(?:多少|几)\s*(?P<zh>伏特?|千瓦时|度电?|千?瓦|分贝|毫安时?|公里|千米|英?寸|厘米|毫米|米|公斤|千克|斤|毫?升|帕|巴)"
    r"|\b(?:in|how many)\s+(?P<en>[a-z]+(?:[ -]hours?)?)\b",
    re.I,
)


def unit_value(question: str) -> AnswerType | None:
    """The value a question naming its unit of measure asks for, as a number in that unit; None when it names
    none. "How many" of a thing that is no unit ("how many nodes") is a count, read by `count_value`."""
    for match in _UNIT_ASKING.finditer(question):
        unit = match["zh"] or match["en"]
        for asked, written in _UNITS:
            if re.fullmatch(asked, unit, re.I):
                value = re.compile(rf"(?:\d|[一二两三四五六七八九十百千万])\s*(?:{written})(?![A-Za-z])", re.I)
                return AnswerType(f"a value in {unit}", _UNIT_ASKING, _UNIT_ASKING, value)
    return None


def asked_types(question: str) -> list[AnswerType]:
    """The kinds of value the question asks for, each of which a passage about its subject must state."""
    wanted = [kind for kind in ANSWER_TYPES if kind.asks.search(question)]
    number = count_value(question)
    if number is not None:
        wanted.append(AnswerType("a number", _COUNT_ASKING, _COUNT_ASKING, number))
    unit = unit_value(question)
    if unit is not None:
        wanted.append(unit)
    return wanted
