"""KakaoTalk chat `.txt` exports, PC and mobile, Korean and English.

Both start with a header: `Bob 님과 카카오톡 대화` (English PC: `... with KakaoTalk
Chats`) and `저장한 날짜 : 2024-12-09 14:30:00`.
- PC (Windows): date lines `--------------- 2024년 12월 9일 월요일 ---------------`
  (`--------------- Monday, December 9, 2024 ---------------`), then
  `[홍길동] [오후 2:30] 안녕하세요` / `[John] [2:30 PM] Hello`.
- Mobile: every message carries its date: `2024. 12. 9. 오후 2:30, 홍길동 : 안녕하세요`
  (iOS), `2024년 12월 9일 오후 2:30, 홍길동 : 안녕하세요` (Android),
  `December 9, 2024, 2:30 PM, John : Hello` (English); date lines
  (`2024년 12월 9일 월요일`) sit between days. A dated line without `name : ` is an
  event (`... 오후 3:00, 홍길동님이 들어왔습니다.` or `... 오후 3:00: ...`).
Lines that match none of these continue the message above.

Decisions:
- Times are the phone's wall clock with no zone. KakaoTalk is overwhelmingly used
  on Korea Standard Time (no daylight saving since 1988), so they are read as
  +09:00 and the conversation records `metadata["timezone"] = "Asia/Seoul
  (+09:00) assumed"`.
- There are no platform ids: sender ref = the name as shown; message id =
  `<conversation>:<time>:<hash of sender and text>`; conversation ref =
  `kakaotalk:<chat name from the header>` (else the file name). More than two
  people speaking makes it a group.
- `사진` / `Photo`, `동영상` / `Video`, `이모티콘` / `Emoticon`, `음성메시지`,
  `파일: name` / `File: name` become media messages; `삭제된 메시지입니다.` / `This
  message has been deleted.` are recalled; joins, leaves and invitations are system
  lines, on PC at the time of the message above them.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from datetime import date, datetime, time, timedelta, timezone
from pathlib import Path

from threadkeep.model import Conversation, ReadResult, Skip
from threadkeep.readers._io import head_lines, line_messages, read_filled_text, read_line_files

NAME = "kakaotalk"

KOREA = timezone(timedelta(hours=9), "Asia/Seoul")
TIMEZONE_NOTE = "Asia/Seoul (+09:00) assumed"
HEAD_BYTES = 8192
NAME_LIMIT = 80
HEADERS = (re.compile(r"^(?P<name>.+?) ?님과 카카오톡 대화$"), re.compile(r"^(?P<name>.+?) with KakaoTalk Chats$"))
SAVED = re.compile(r"^(?:저장한 날짜|Date Saved)\s*:")
_CLOCK = r"(?:(?P<pre>오전|오후) (?P<h1>\d{1,2}):(?P<m1>\d{2})|(?P<h2>\d{1,2}):(?P<m2>\d{2})(?: (?P<post>[AP]M))?)"
_DATE = (
    r"(?:(?P<y1>\d{4})\. (?P<mo1>\d{1,2})\. (?P<d1>\d{1,2})\.|(?P<y2>\d{4})년 (?P<mo2>\d{1,2})월 (?P<d2>\d{1,2})일"
    r"|(?P<month>[A-Z][a-z]+) (?P<d3>\d{1,2}), (?P<y3>\d{4}),)"
)
PC_LINE = re.compile(r"^\[(?P<name>[^\]]{1,80})\] \[" + _CLOCK + r"\] (?P<text>.*)$")
MOBILE_LINE = re.compile(r"^" + _DATE + r" " + _CLOCK + r"(?P<sep>, |: )(?P<rest>.*)$")
MOBILE_MARKER = re.compile(r"^" + _DATE + r" " + _CLOCK + r"$")
KOREAN_DAY = re.compile(r"^(?P<y>\d{4})년 (?P<m>\d{1,2})월 (?P<d>\d{1,2})일(?: \S요일)?$")
EVENT = re.compile(
    r"님이 (?:들어왔습니다|나갔습니다|.{0,200}초대했습니다|.{0,200}내보냈습니다)\.?$|(?:joined|left) this chatroom\.?$"
)
MONTHS = {
    name: number
    for number, name in enumerate(
        (
            "January",
            "February",
            "March",
            "April",
            "May",
            "June",
            "July",
            "August",
            "September",
            "October",
            "November",
            "December",
        ),
        start=1,
    )
}
MEDIA = {
    "사진": "image",
    "Photo": "image",
    "이모티콘": "image",
    "Emoticon": "image",
    "동영상": "video",
    "Video": "video",
}
MEDIA_PREFIX = re.compile(
    r"^(?:사진 \d{1,3}장|Photos? \d{1,3})$|^(?:파일|File): (?P<file>.+)$|^(?:음성메시지|Voice Message)"
)
DELETED = frozenset({"삭제된 메시지입니다.", "This message has been deleted."})


@dataclass(slots=True)
class _Raw:
    line: int
    moment: datetime
    sender: str  # "" for an event
    text: str
    continuation: list[str] = field(default_factory=list)


def _clock(found: re.Match[str]) -> time:
    if found.group("pre"):
        hour, minute = int(found.group("h1")), int(found.group("m1"))
        meridiem = "pm" if found.group("pre") == "오후" else "am"
    else:
        hour, minute = int(found.group("h2")), int(found.group("m2"))
        meridiem = (found.group("post") or "").lower()
    if meridiem:
        if not 1 <= hour <= 12:
            raise ValueError(f"hour {hour} on a 12-hour clock")
        hour = hour % 12 + (12 if meridiem == "pm" else 0)
    return time(hour, minute)


def _date(found: re.Match[str]) -> date:
    if found.group("y1"):
        return date(int(found.group("y1")), int(found.group("mo1")), int(found.group("d1")))
    if found.group("y2"):
        return date(int(found.group("y2")), int(found.group("mo2")), int(found.group("d2")))
    month = MONTHS.get(found.group("month"))
    if month is None:
        raise ValueError(f"unknown month {found.group('month')!r}")
    return date(int(found.group("y3")), month, int(found.group("d3")))


def _pc_day(line: str) -> date | None:
    """The day of a PC date line (`----- 2024년 12월 9일 월요일 -----`).

    Raises ValueError for a day that does not exist.
    """
    if not (line.startswith("-----") and line.endswith("-----")):
        return None
    inner = line.strip("-").strip()
    found = KOREAN_DAY.match(inner)
    if found:
        return date(int(found.group("y")), int(found.group("m")), int(found.group("d")))
    try:
        return datetime.strptime(inner[:60], "%A, %B %d, %Y").date()
    except ValueError:
        return None


def _header(line: str) -> str | None:
    for pattern in HEADERS:
        found = pattern.match(line)
        if found:
            return found.group("name").strip()
    return None


def _head_lines(path: Path) -> list[str]:
    return [line.strip("\ufeff \r") for line in head_lines(path, HEAD_BYTES) if line.strip("\ufeff \t\r")]


def detect(path: Path) -> bool:
    if not path.is_file() or path.suffix.lower() != ".txt":
        return False
    lines = _head_lines(path)[:40]
    if not lines:
        return False
    if _header(lines[0]) is not None:
        return True
    # A header trimmed off: mostly KakaoTalk-shaped lines.
    shaped = sum(PC_LINE.match(line) is not None or MOBILE_LINE.match(line) is not None for line in lines)
    return shaped >= 2 and shaped * 2 >= len(lines)


def _parse(text: str, file: str, result: ReadResult) -> tuple[list[_Raw], str]:
    raws: list[_Raw] = []
    title = ""
    day: date | None = None
    for number, raw_line in enumerate(text.splitlines(), start=1):
        line = raw_line.rstrip("\r").lstrip("\ufeff")
        stripped = line.strip()
        if number <= 3 and not raws:
            header = _header(stripped)
            if header and not title:
                title = header
                continue
            if SAVED.match(stripped) or not stripped:
                continue
        if not stripped:  # a blank line in a message; no pattern can match it (a file of them stays fast)
            if raws:
                raws[-1].continuation.append(line)
            continue
        try:
            pc_day = _pc_day(stripped)
            korean_day = KOREAN_DAY.match(stripped) if pc_day is None else None
            if korean_day:
                pc_day = date(int(korean_day.group("y")), int(korean_day.group("m")), int(korean_day.group("d")))
        except ValueError as error:
            result.skipped.append(Skip(file, number, f"bad date line ({error}); messages up to the next are left out"))
            day = None
            continue
        if pc_day is not None:
            day = pc_day
            continue
        if MOBILE_MARKER.match(stripped):
            result.ignore("kakaotalk date marker")
            continue
        found = PC_LINE.match(line)
        mobile = None if found else MOBILE_LINE.match(line)
        if found or mobile:
            try:
                clock = _clock(found or mobile)  # type: ignore[arg-type]
                on = _date(mobile) if mobile else day
            except ValueError as error:
                result.skipped.append(Skip(file, number, f"bad date/time ({error})"))
                continue
            if on is None:
                result.skipped.append(Skip(file, number, "message before any readable date line"))
                continue
            moment = datetime.combine(on, clock, tzinfo=KOREA)
            if found:
                raws.append(_Raw(number, moment, found.group("name").strip(), found.group("text")))
                continue
            assert mobile is not None
            rest = mobile.group("rest")
            name, colon, body = rest.partition(" : ")
            if mobile.group("sep") == ", " and colon and 0 < len(name.strip()) <= NAME_LIMIT:
                raws.append(_Raw(number, moment, name.strip(), body))
            else:
                raws.append(_Raw(number, moment, "", rest.strip()))
            continue
        if raws and EVENT.search(stripped):
            raws.append(_Raw(number, raws[-1].moment, "", stripped))
        elif raws:
            raws[-1].continuation.append(line)
        elif stripped:
            result.skipped.append(Skip(file, number, "text before the first KakaoTalk message"))
    return raws, title


def _media(text: str) -> tuple[str, str]:
    first, _, caption = text.partition("\n")
    head = first.strip()
    kind = MEDIA.get(head, "")
    placeholder = f"[{kind}]" if kind else ""
    found = None if kind else MEDIA_PREFIX.match(head)
    if found:
        if found.group("file"):
            kind, placeholder = "file", f"[file] {found.group('file').strip()}"
        elif head.startswith(("음성", "Voice")):
            kind, placeholder = "voice", "[voice]"
        else:
            kind, placeholder = "image", f"[image] {head}"
    if not kind:
        return "text", text
    return kind, "\n".join(part for part in (placeholder, caption) if part)


def _read_file(path: Path, result: ReadResult) -> None:
    text = read_filled_text(path, result.skipped)
    if text is None:
        return
    raws, title = _parse(text, str(path), result)
    if not raws:
        result.skipped.append(Skip(str(path), None, "no KakaoTalk messages found"))
        return
    title = title or path.stem
    ref = f"kakaotalk:{title}"
    messages, speakers = line_messages(ref, raws, DELETED.__contains__, _media)
    result.messages.extend(messages)
    metadata = {"timezone": TIMEZONE_NOTE, "file": path.name}
    result.conversations.append(Conversation(ref, title, "group" if len(speakers) > 2 else "direct", NAME, metadata))


def read(path: Path) -> ReadResult:
    return read_line_files(path, NAME, "KakaoTalk", detect, _read_file)
