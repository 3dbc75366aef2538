"""The time a question names: "two weeks ago", "last Saturday", "in June", "on 3 June, 2023", "上周".

Search reads it relative to its clock (the question's `now`) and favours chat said in that span
(`threadkeep.search`): a chat answer is dated by its messages, and a person who remembers when
something was said asks with the date. Each phrase gives a span with some slack (people round: "a
week ago" may be five days or ten); a question naming several gets the span over all of them, one
naming none gets None. Only the forms below are read; anything else is left to the words.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from datetime import datetime, timedelta

DAY = timedelta(days=1)
UNIT_DAYS = {"day": 1, "week": 7, "month": 30.44, "year": 365.25}
NUMBERS = {
    "a": 1, "an": 1, "one": 1, "two": 2, "three": 3, "four": 4, "five": 5, "six": 6, "seven": 7, "eight": 8,
    "nine": 9, "ten": 10, "eleven": 11, "twelve": 12, "a couple of": 2, "couple of": 2, "a few": 3, "few": 3,
}  # fmt: skip
MONTHS = {
    name: number
    for number, names in enumerate(
        (
            ("january", "jan"), ("february", "feb"), ("march", "mar"), ("april", "apr"), ("may",), ("june", "jun"),
            ("july", "jul"), ("august", "aug"), ("september", "sep", "sept"), ("october", "oct"),
            ("november", "nov"), ("december", "dec"),
        ),
        start=1,
    )
    for name in names
}  # fmt: skip
WEEKDAYS = ("monday", "tuesday", "wednesday", "thursday", "friday", "saturday", "sunday")
CHINESE_DIGITS = {"一": 1, "两": 2, "二": 2, "三": 3, "四": 4, "五": 5, "六": 6, "七": 7, "八": 8, "九": 9, "十": 10}

_NUMBER = r"(\d+|" + "|".join(sorted(NUMBERS, key=len, reverse=True)) + ")"
_UNIT = r"(day|week|month|year)s?"
_MONTH = r"(" + "|".join(sorted(MONTHS, key=len, reverse=True)) + r")\.?"
_DAY_OF_MONTH = r"(\d{1,2})(?:st|nd|rd|th)?"
_YEAR = r"((?:19|20)\d{2})"

AGO = re.compile(rf"\b{_NUMBER}\s+{_UNIT}\s+(?:ago|back|earlier)\b")
# Not "last year's time" (a thing of then, not when it was said) nor "this weekend" (still to come).
LAST_UNIT = re.compile(rf"\b(?:last|previous)\s+{_UNIT}\b(?!'s)")
WITHIN = re.compile(rf"\b(?:in|over|during|within)\s+the\s+(?:last|past|previous)\s+(?:{_NUMBER}\s+)?{_UNIT}\b")
WEEKDAY = re.compile(r"\b(last|on|past)\s+(" + "|".join(WEEKDAYS) + r")\b")
WEEKEND = re.compile(r"\b(?:last|past)\s+weekend\b")
YESTERDAY = re.compile(r"\b(?:yesterday|the day before yesterday)\b")
DAY_MONTH_YEAR = re.compile(rf"\b{_DAY_OF_MONTH}\s+(?:of\s+)?{_MONTH},?\s+{_YEAR}\b")
MONTH_DAY_YEAR = re.compile(rf"\b{_MONTH}\s+{_DAY_OF_MONTH},?\s+{_YEAR}\b")
MONTH_YEAR = re.compile(rf"\b{_MONTH},?\s+{_YEAR}\b")
DAY_MONTH = re.compile(rf"\b{_DAY_OF_MONTH}\s+(?:of\s+)?{_MONTH}\b")
MONTH_DAY = re.compile(rf"\b{_MONTH}\s+{_DAY_OF_MONTH}\b(?!\s*(?:,\s*)?(?:19|20)\d{{2}})")
IN_MONTH = re.compile(rf"\b(?:in|during|since|early|late|mid)[\s-]+(?:of\s+)?{_MONTH}\b")
ISO_DATE = re.compile(r"\b((?:19|20)\d{2})-(\d{1,2})-(\d{1,2})\b")
CHINESE_AGO = re.compile(r"([0-9一两二三四五六七八九十]+)\s*(天|日|周|星期|个星期|个月|年)(?:以?前|之前)")
CHINESE_DATE = re.compile(r"(?:((?:19|20)\d{2})\s*年\s*)?(\d{1,2})\s*月(?:\s*(\d{1,2})\s*[日号])?")
CHINESE_NAMED = {
    "昨天": 1, "昨日": 1, "前天": 2, "上周": 7, "上星期": 7, "上个星期": 7,
    "上个月": 30.44, "上月": 30.44, "去年": 365.25,
}  # fmt: skip


@dataclass(frozen=True, slots=True)
class Span:
    since: datetime
    until: datetime

    def overlaps(self, start: datetime, end: datetime) -> bool:
        return start <= self.until and end >= self.since


def _around(center: datetime, slack: timedelta) -> Span:
    return Span(center - slack, center + slack)


def _ago(now: datetime, count: float, unit_days: float) -> Span:
    # Half a unit either way, at least a day: "three weeks ago" is 17-25 days, "a month ago" 15-45.
    return _around(now - timedelta(days=count * unit_days), max(DAY, timedelta(days=unit_days / 2)))


def _day(year: int, month: int, day: int, now: datetime) -> Span | None:
    try:
        start = now.replace(year=year, month=month, day=day, hour=0, minute=0, second=0, microsecond=0)
    except ValueError:
        return None
    # The whole day, and a day either side: time zones, and a message about yesterday's event sent today.
    return Span(start - DAY, start + 2 * DAY)


def _month(year: int, month: int, now: datetime) -> Span:
    start = now.replace(year=year, month=month, day=1, hour=0, minute=0, second=0, microsecond=0)
    end = start.replace(year=year + month // 12, month=month % 12 + 1)
    return Span(start - DAY, end + DAY)


def _latest_year(month: int, day: int, now: datetime) -> int:
    """The year of the last such date up to `now` (a question asks about the past)."""
    return now.year if (month, day) <= (now.month, now.day) else now.year - 1


def _number(text: str) -> float:
    return float(text) if text.isdigit() else float(NUMBERS[text])


def _chinese_number(text: str) -> float | None:
    if text.isdigit():
        return float(text)
    if len(text) == 1:
        return CHINESE_DIGITS.get(text)
    if text.startswith("十"):  # 十二
        return 10 + CHINESE_DIGITS.get(text[1:], 0) if len(text) == 2 else None
    if len(text) == 2 and text.endswith("十"):  # 二十
        tens = CHINESE_DIGITS.get(text[0])
        return 10 * tens if tens else None
    return None


def _english_relative(text: str, now: datetime) -> list[Span]:
    spans: list[Span] = []
    for number, unit in AGO.findall(text):
        spans.append(_ago(now, _number(number), UNIT_DAYS[unit]))
    for unit in LAST_UNIT.findall(text):
        spans.append(_ago(now, 1, UNIT_DAYS[unit]))
    for number, unit in WITHIN.findall(text):
        spans.append(Span(now - timedelta(days=(_number(number) if number else 1) * UNIT_DAYS[unit]), now))
    for which, weekday in WEEKDAY.findall(text):
        back = (now.weekday() - WEEKDAYS.index(weekday)) % 7 or (7 if which in ("last", "past") else 0)
        spans.append(_around(now - timedelta(days=back), DAY))
    if WEEKEND.search(text):
        saturday = now - timedelta(days=(now.weekday() - 5) % 7 or 7)
        spans.append(Span(saturday - DAY, saturday + 2 * DAY))
    if YESTERDAY.search(text):
        spans.append(_around(now - DAY, DAY))
    return spans


def _english_dates(text: str, now: datetime) -> list[Span]:
    spans: list[Span] = []
    taken: list[tuple[int, int]] = []  # the characters of full dates, so "3 June, 2023" is not also "3 June"

    def free(match: re.Match) -> bool:
        return not any(start < match.end() and match.start() < end for start, end in taken)

    for pattern, order in ((DAY_MONTH_YEAR, "dmy"), (MONTH_DAY_YEAR, "mdy")):
        for match in pattern.finditer(text):
            values = dict(zip(order, match.groups(), strict=True))
            span = _day(int(values["y"]), MONTHS[values["m"].lower()], int(values["d"]), now)
            if span:
                spans.append(span)
                taken.append(match.span())
    for match in ISO_DATE.finditer(text):
        span = _day(int(match[1]), int(match[2]), int(match[3]), now) if 1 <= int(match[2]) <= 12 else None
        if span:
            spans.append(span)
            taken.append(match.span())
    for match in MONTH_YEAR.finditer(text):
        if free(match):
            spans.append(_month(int(match[2]), MONTHS[match[1].lower()], now))
            taken.append(match.span())
    for pattern, order in ((DAY_MONTH, "dm"), (MONTH_DAY, "md")):
        for match in pattern.finditer(text):
            if not free(match):
                continue
            values = dict(zip(order, match.groups(), strict=True))
            month, day = MONTHS[values["m"].lower()], int(values["d"])
            span = _day(_latest_year(month, day, now), month, day, now) if 1 <= day <= 31 else None
            if span:
                spans.append(span)
                taken.append(match.span())
    for match in IN_MONTH.finditer(text):
        if free(match):
            month = MONTHS[match[1].lower()]
            spans.append(_month(_latest_year(month, 1, now), month, now))
    return spans


def _chinese_relative(text: str, now: datetime) -> list[Span]:
    spans: list[Span] = []
    for number, unit in CHINESE_AGO.findall(text):
        count = _chinese_number(number)
        if count is not None:
            days = {"天": 1, "日": 1, "周": 7, "星期": 7, "个星期": 7, "个月": 30.44, "年": 365.25}[unit]
            spans.append(_ago(now, count, days))
    for word, days in CHINESE_NAMED.items():
        if word in text:
            spans.append(_ago(now, 1, days) if days > 2 else _around(now - timedelta(days=days), DAY))
    return spans


def _chinese_dates(text: str, now: datetime) -> list[Span]:
    spans: list[Span] = []
    for year, month, day in CHINESE_DATE.findall(text):
        month_number = int(month)
        if not 1 <= month_number <= 12:
            continue
        if day:
            chosen = int(year) if year else _latest_year(month_number, int(day), now)
            span = _day(chosen, month_number, int(day), now)
        else:
            span = _month(int(year) if year else _latest_year(month_number, 1, now), month_number, now)
        if span:
            spans.append(span)
    return spans


def named_span(question: str, now: datetime) -> Span | None:
    """The span of time `question` names, read relative to `now`, or None when it names none."""
    # A date named outright wins: "the weekend before April 10" is not the weekend before the clock.
    spans = _english_dates(question.lower(), now) + _chinese_dates(question, now)
    spans = spans or _english_relative(question.lower(), now) + _chinese_relative(question, now)
    if not spans:
        return None
    return Span(min(span.since for span in spans), max(span.until for span in spans))
