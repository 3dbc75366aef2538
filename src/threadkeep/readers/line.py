"""LINE chat history `.txt` (a chat's settings → "Export chat history"), in the app's language.

A header `[LINE] Chat history with Bob` (a group: `... in Hiking`; Japanese
`[LINE] Bobとのトーク履歴` / `[LINE] Hikingのトーク履歴`; Chinese `[LINE] 与Bob的聊天记录`
/ `[LINE] 與Bob的聊天記錄`), a `Saved on: 2023/09/16 14:51` line (`保存日時：`,
`保存日期:`) and a blank line; then date lines (`2023/09/15(Fri)`, `2023/09/15(金)`,
`2023/9/15周五`, `2023.09.15 Friday`, `Fri, 09/15/2023`) each followed by that day's
messages: `09:15<TAB>Alice<TAB>text`, with the time also as `9:15AM`, `下午9:15`
or `午後9:15`, and `TIME<TAB><TAB>text` for events (joins, invitations).
Older exports have no header and separate with single spaces (`09:15 Alice text`).
A message of several lines is wrapped in double quotes.

Decisions:
- Times are the phone's wall clock with no zone: stored as if UTC, and the
  conversation says `metadata["timezone"] = "unknown (local time read as UTC)"`.
  `24:05` (how some locales write five past midnight) is 00:05 the next day.
- There are no platform ids: sender ref = the name as shown; message id =
  `<conversation>:<time>:<hash of sender and text>`; conversation ref =
  `line:<chat name>` (from the header, else the file name). The header says
  whether it is a group; without one, more than two speakers make it a group.
- `[Photo]`, `[Sticker]`, `[Video]`, `[Voice message]`, `[File]` (and their
  Japanese and Chinese forms) become media messages; "unsent a message" lines are
  recalled messages; events are system lines.
- In the older space-separated form a name is one word (the format cannot say
  where a longer name ends).
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from datetime import UTC, date, datetime, timedelta
from pathlib import Path

from threadkeep.model import Conversation, ReadResult, Skip
from threadkeep.readers._io import head_lines, line_messages, read_filled_text, read_line_files

NAME = "line"

HEAD_BYTES = 8192
TIMEZONE_NOTE = "unknown (local time read as UTC)"
HEADERS = (
    (re.compile(r"^(?:\[LINE\] ?)?Chat history with (?P<name>.+)$"), False),
    (re.compile(r"^(?:\[LINE\] ?)?Chat history in (?P<name>.+)$"), True),
    (re.compile(r"^\[LINE\] ?(?P<name>.+)とのトーク履歴$"), False),
    (re.compile(r"^\[LINE\] ?(?P<name>.+)のトーク履歴$"), True),
    (re.compile(r"^\[LINE\] ?[与與](?P<name>.+)的聊天[记記][录錄]$"), False),
    (re.compile(r"^\[LINE\] ?(?P<name>.+)的聊天[记記][录錄]$"), True),
    (re.compile(r"^\[LINE\] ?(?P<name>.+)$"), None),
)
SAVED = re.compile(r"^(?:Saved on|保存日時|保存日期|儲存日期)\s*[:：]")
_WEEKDAY = r"(?:Sun|Mon|Tue|Wed|Thu|Fri|Sat)[a-z]*"
DATE_LINES = (
    (re.compile(r"^(?P<y>\d{4})/(?P<m>\d{1,2})/(?P<d>\d{1,2})(?:[(（][^)）]{1,12}[)）]|周.|週.|星期.)?$")),
    (re.compile(r"^(?P<y>\d{4})\.(?P<m>\d{1,2})\.(?P<d>\d{1,2})(?: " + _WEEKDAY + r")?$")),
    (re.compile(r"^" + _WEEKDAY + r", (?P<m>\d{1,2})/(?P<d>\d{1,2})/(?P<y>\d{4})$")),
)
TIME = r"(?P<pre>上午|下午|午前|午後)?(?P<hour>\d{1,2}):(?P<minute>\d{2})(?: ?(?P<post>[AaPp][Mm]))?"
TAB_LINE = re.compile(r"^" + TIME + r"\t(?P<name>[^\t]*)\t(?P<text>.*)$")
SPACE_LINE = re.compile(r"^" + TIME + r" (?P<name>\S+) (?P<text>.*)$")
MEDIA = {
    "[Photo]": "image",
    "[写真]": "image",
    "[照片]": "image",
    "[Sticker]": "image",
    "[スタンプ]": "image",
    "[贴图]": "image",
    "[貼圖]": "image",
    "[Video]": "video",
    "[動画]": "video",
    "[视频]": "video",
    "[影片]": "video",
    "[Voice message]": "voice",
    "[ボイスメッセージ]": "voice",
    "[语音信息]": "voice",
    "[語音訊息]": "voice",
    "[File]": "file",
    "[ファイル]": "file",
    "[文件]": "file",
    "[檔案]": "file",
}
UNSENT = re.compile(r"unsent a message\.?$|^Message unsent\.?$|送信を取り消しました$|已收回訊息$|撤回了一条消息$")
PM = frozenset({"下午", "午後", "pm"})
AM = frozenset({"上午", "午前", "am"})


@dataclass(slots=True)
class _Raw:
    line: int
    moment: datetime
    sender: str  # "" for an event line
    text: str
    continuation: list[str] = field(default_factory=list)
    quoted: bool = False  # text opened with a double quote that has not closed yet


def _header(line: str) -> tuple[str, bool | None] | None:
    """(chat name, whether it is a group or None when the header does not say) for a header line."""
    for pattern, group in HEADERS:
        found = pattern.match(line)
        if found:
            return found.group("name").strip(), group
    return None


def _date_line(line: str) -> date | None:
    """The day a date line opens; raises ValueError for a date line naming a day that does not exist."""
    for pattern in DATE_LINES:
        found = pattern.match(line)
        if found:
            return date(int(found.group("y")), int(found.group("m")), int(found.group("d")))
    return None


def _message_line(line: str) -> re.Match[str] | None:
    return TAB_LINE.match(line) or SPACE_LINE.match(line)


def _head_lines(path: Path) -> list[str]:
    return [line.strip("\ufeff \r") for line in head_lines(path, HEAD_BYTES) if line.strip("\ufeff \t\r")]


def detect(path: Path) -> bool:
    if not path.is_file() or path.suffix.lower() != ".txt":
        return False
    lines = _head_lines(path)[:40]
    if not lines:
        return False
    if lines[0].startswith(("[LINE]", "Chat history with ", "Chat history in ")):
        return True
    # Exports without a header: a date line, then time-name-text messages.
    dated = False
    messages = 0
    for line in lines:
        try:
            dated = dated or _date_line(line) is not None
        except ValueError:
            continue
        messages += _message_line(line) is not None
    return dated and messages >= 2


def _clock(found: re.Match[str]) -> tuple[int, int]:
    """(hours from midnight, minutes); hours can be 24 for a time past midnight."""
    hour, minute = int(found.group("hour")), int(found.group("minute"))
    meridiem = (found.group("pre") or found.group("post") or "").lower()
    if meridiem:
        if not 1 <= hour <= 12:
            raise ValueError(f"hour {hour} on a 12-hour clock")
        hour = hour % 12 + (12 if meridiem in PM else 0)
    if hour > 24 or minute > 59:
        raise ValueError(f"time {found.group('hour')}:{found.group('minute')} does not exist")
    return hour, minute


def _continue(raw: _Raw, line: str) -> None:
    """A further line of the message above; a quoted message closes on a line ending in its quote."""
    if raw.quoted and line.endswith('"'):
        line = line[:-1]
        raw.quoted = False
    raw.continuation.append(line)


def _unquoted(body: str) -> tuple[str, bool]:
    """(text, whether it opens a quoted message that goes on below) for a message line's text."""
    if not body.startswith('"'):
        return body, False
    if len(body) > 1 and body.endswith('"'):
        return body[1:-1], False
    return body[1:], True


def _parse(text: str, file: str, result: ReadResult) -> tuple[list[_Raw], str, bool | None]:
    raws: list[_Raw] = []
    title = ""
    group: bool | None = None
    day: date | None = None
    day_broken = False
    for number, raw_line in enumerate(text.splitlines(), start=1):
        line = raw_line.rstrip("\r").lstrip("\ufeff")
        if number <= 3 and not raws and day is None:
            header = _header(line.strip())
            if header and not title:
                title, group = header
                continue
            if SAVED.match(line.strip()) or not line.strip():
                continue
        if not line.strip():  # a blank line in a message; no pattern can match it (a file of them stays fast)
            if raws:
                _continue(raws[-1], line)
            continue
        try:
            opened = _date_line(line.strip())
        except ValueError as error:
            result.skipped.append(Skip(file, number, f"bad date line ({error}); its messages are left out"))
            day, day_broken = None, True
            continue
        if opened is not None:
            day, day_broken = opened, False
            continue
        found = _message_line(line)
        if found and (day is not None or day_broken):
            if day is None:
                result.skipped.append(Skip(file, number, "message under a date line that could not be read"))
                continue
            try:
                hour, minute = _clock(found)
            except ValueError as error:
                result.skipped.append(Skip(file, number, f"bad time ({error})"))
                continue
            moment = datetime(day.year, day.month, day.day, tzinfo=UTC) + timedelta(hours=hour, minutes=minute)
            body, quoted = _unquoted(found.group("text"))
            raws.append(_Raw(number, moment, found.group("name").strip(), body, quoted=quoted))
            continue
        if raws:
            _continue(raws[-1], line)
        elif line.strip():
            result.skipped.append(Skip(file, number, "text before the first dated LINE message"))
    return raws, title, group


def _media(text: str) -> tuple[str, str]:
    first, _, caption = text.partition("\n")
    kind = MEDIA.get(first.strip())
    if kind is None:
        return "text", text
    return kind, "\n".join(part for part in (f"[{kind}]", caption) if part)


def _title_from_file(path: Path) -> str:
    stem = path.stem.removeprefix("[LINE]").strip()
    return stem.removeprefix("Chat with ").strip() or path.stem


def _read_file(path: Path, result: ReadResult) -> None:
    text = read_filled_text(path, result.skipped)
    if text is None:
        return
    raws, title, group = _parse(text, str(path), result)
    if not raws:
        result.skipped.append(Skip(str(path), None, "no dated LINE messages found"))
        return
    title = title or _title_from_file(path)
    ref = f"line:{title}"
    # The blank line LINE writes before each date line is not part of the message above it:
    # `line_messages` drops a body's trailing newlines.
    messages, speakers = line_messages(ref, raws, lambda body: UNSENT.search(body) is not None, _media)
    result.messages.extend(messages)
    is_group = group if group is not None else len(speakers) > 2
    metadata = {"timezone": TIMEZONE_NOTE, "file": path.name}
    result.conversations.append(Conversation(ref, title, "group" if is_group else "direct", NAME, metadata))


def read(path: Path) -> ReadResult:
    return read_line_files(path, NAME, "LINE", detect, _read_file)
