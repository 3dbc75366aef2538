"""WeChat desktop copy-paste text: a header line `name 2023/12/31 21:05` (or `2023-12-31 21:05:33`, or on a
12-hour clock `name 2023/09/16 2:51 PM` / `name 2023/09/16 下午2:51`), then the message's lines until the next
header.

Decisions:
- Times are the desktop's wall clock with no zone. WeChat is overwhelmingly used
  on China Standard Time, so they are read as +08:00 (China has had no daylight
  saving since 1991); the conversation records
  `metadata["timezone"] = "Asia/Shanghai (+08:00) assumed"`.
- There are no platform ids: sender ref = the name as shown; message id =
  `<conversation>:<time>:<hash of sender and text>`; conversation ref =
  `wechat:<file name without extension>`. More than two people speaking makes it
  a group.
- `[图片]`, `[视频]`, `[语音]`, `[文件]`, `[动画表情]` become media kinds with an
  English placeholder (`[image]`...) and keep what follows as the caption.
- Lines that are platform events (`"X"撤回了一条消息`, invitations, renames, pats)
  become system lines at the time of the header above them, whether they sit under
  a header or between messages.
"""

from __future__ import annotations

import hashlib
import re
from dataclasses import dataclass, field
from datetime import datetime, timedelta, timezone
from pathlib import Path

from threadkeep.model import Conversation, Message, ReadResult, Skip
from threadkeep.readers._io import head_lines, read_filled_text, read_line_files

NAME = "wechat"

CHINA = timezone(timedelta(hours=8), "Asia/Shanghai")
TIMEZONE_NOTE = "Asia/Shanghai (+08:00) assumed"
DATE = re.compile(r"(\d{4})[/-](\d{1,2})[/-](\d{1,2})|(\d{4})年(\d{1,2})月(\d{1,2})日")
TIME = re.compile(r"(?P<pre>上午|下午)?(?P<hour>\d{1,2}):(?P<minute>\d{2})(?::(?P<second>\d{2}))?")
MERIDIEMS = {"am": "am", "a.m.": "am", "上午": "am", "pm": "pm", "p.m.": "pm", "下午": "pm"}
# Nicknames are short; a longer line is a message, and a cap keeps header parsing linear.
MAX_HEADER_CHARS = 200
# Event lines are short too; the cap bounds the event pattern's lazy runs on long message lines.
MAX_SYSTEM_CHARS = 600
MEDIA = {
    "图片": "image",
    "动画表情": "image",
    "表情": "image",
    "视频": "video",
    "语音": "voice",
    "文件": "file",
    "链接": "link",
}
MEDIA_LINE = re.compile(r"^\[(?P<what>" + "|".join(MEDIA) + r")\]\s*(?P<rest>.*)$", re.DOTALL)
_QUOTED = r"[\"“”「」『』]?"
SYSTEM_LINE = re.compile(
    r"^(?:"
    + _QUOTED
    + r".{1,40}?"
    + _QUOTED
    + r"\s*撤回了一条消息"
    + r"|.{1,80}?邀请.{1,400}?加入了群聊"
    + r"|.{1,80}?(?:通过扫描.{0,40}?二维码)?加入了群聊"
    + r"|.{1,80}?(?:修改群名为|将群名修改为).*"
    + r"|.{1,80}?移出了群聊"
    + r"|.{1,80}?拍了拍.{0,80}"
    + r"|你已添加了.{1,80}?，现在可以开始聊天了。?"
    + r"|以上是打招呼的内容"
    + r")$"
)
MENTION_SPACE = "\u2005"  # WeChat ends an @mention with a four-per-em space
HEAD_BYTES = 4096


@dataclass(slots=True)
class _Block:
    line: int
    name: str
    moment: datetime
    lines: list[str] = field(default_factory=list)


@dataclass(frozen=True, slots=True)
class _Header:
    name: str
    moment: datetime


def _header(line: str) -> _Header | None:
    """`name date time` with an optional AM/PM after the time or 上午/下午 before it; None if not a header.

    Raises ValueError for a header-shaped line whose date or time does not exist.
    """
    if len(line) > MAX_HEADER_CHARS:
        return None
    parts = line.split()
    meridiem = ""
    if len(parts) >= 4 and parts[-1].lower() in MERIDIEMS:
        meridiem = MERIDIEMS[parts.pop().lower()]
    elif len(parts) >= 4 and parts[-2] in MERIDIEMS:
        meridiem = MERIDIEMS[parts.pop(-2)]
    if len(parts) < 3:
        return None
    date = DATE.fullmatch(parts[-2])
    clock = TIME.fullmatch(parts[-1])
    if date is None or clock is None:
        return None
    if clock.group("pre"):
        if meridiem:
            return None
        meridiem = MERIDIEMS[clock.group("pre")]
    name = line[: line.rindex(parts[-2])].strip()
    year, month, day = (int(part) for part in date.groups() if part)
    hour, minute = int(clock.group("hour")), int(clock.group("minute"))
    second = int(clock.group("second") or 0)
    if meridiem:
        if not 1 <= hour <= 12:
            raise ValueError(f"hour {hour} on a 12-hour clock")
        hour = hour % 12 + (12 if meridiem == "pm" else 0)
    return _Header(name, datetime(year, month, day, hour, minute, second, tzinfo=CHINA))


def _head_lines(path: Path) -> list[str]:
    return [line.strip("\ufeff \t\r") for line in head_lines(path, HEAD_BYTES) if line.strip("\ufeff \t\r")]


def detect(path: Path) -> bool:
    if not path.is_file() or path.suffix.lower() != ".txt":
        return False
    lines = _head_lines(path)
    # The first line of a paste is always a speaker header; nothing else ends a line with a date and time.
    if not lines:
        return False
    try:
        return _header(lines[0]) is not None
    except ValueError:
        return True  # header-shaped, with an impossible date: read it and report the line


def _message_id(conversation: str, moment: datetime, sender: str, text: str, seen: dict[str, int]) -> str:
    digest = hashlib.sha1(f"{sender}\n{text}".encode()).hexdigest()[:10]
    base = f"{conversation}:{moment:%Y%m%dT%H%M%S}:{digest}"
    seen[base] = seen.get(base, 0) + 1
    return base if seen[base] == 1 else f"{base}-{seen[base]}"


def _blocks(text: str, file: str, result: ReadResult) -> list[_Block]:
    """Split into speaker blocks; event lines become their own blocks with the name "system".

    An event line interrupts but does not end the message above it: lines after it
    still belong to the last header.
    """
    blocks: list[_Block] = []
    current: _Block | None = None  # the speaker block lines go to; name "" = header unreadable
    for number, raw_line in enumerate(text.splitlines(), start=1):
        line = raw_line.rstrip("\r").lstrip("\ufeff")
        stripped = line.strip()
        if not stripped:  # a blank line in a message; no header or system line is blank (keeps a file of them fast)
            if current is not None and current.name:
                current.lines.append(line)
            continue
        try:
            header = _header(stripped)
        except ValueError as error:
            reason = f"bad date/time in header ({error}); lines up to the next header are left out"
            result.skipped.append(Skip(file, number, reason))
            current = _Block(number, "", datetime.min.replace(tzinfo=CHINA))
            continue
        if header:
            current = _Block(number, header.name, header.moment)
            blocks.append(current)
            continue
        if current is None:
            if stripped:
                result.skipped.append(Skip(file, number, "text before the first speaker header"))
            continue
        if current.name == "":
            if stripped:
                result.skipped.append(Skip(file, number, "line of a message whose header could not be read"))
            continue
        if len(stripped) <= MAX_SYSTEM_CHARS and SYSTEM_LINE.match(stripped):
            blocks.append(_Block(number, "system", current.moment, [stripped]))
            continue
        current.lines.append(line)
    return blocks


def _media(text: str) -> tuple[str, str]:
    found = MEDIA_LINE.match(text)
    if not found:
        return "text", text
    kind = MEDIA[found.group("what")]
    if kind == "link":
        return "link", found.group("rest").strip() or "[link]"
    return kind, f"[{kind}] {found.group('rest').strip()}".rstrip()


def _mentions(text: str, names: list[str]) -> tuple[str, tuple[str, ...]]:
    found: list[str] = []
    if "@" in text and names:
        # One alternation, longest names first: the regex engine tries them at each "@" in C, not Python.
        pattern = re.compile("@(?:" + "|".join(re.escape(name) for name in names) + ")")
        for match in pattern.finditer(text):
            name = match.group()[1:]
            if name not in found:
                found.append(name)
    return text.replace(MENTION_SPACE, " "), tuple(found)


def _read_file(path: Path, result: ReadResult) -> None:
    file = str(path)
    text = read_filled_text(path, result.skipped)
    if text is None:
        return
    blocks = _blocks(text, file, result)
    if not blocks:
        result.skipped.append(Skip(file, None, "no WeChat speaker headers found"))
        return
    title = path.stem
    ref = f"wechat:{title}"
    names = sorted({block.name for block in blocks if block.name != "system"}, key=len, reverse=True)
    seen: dict[str, int] = {}
    for block in blocks:
        body = "\n".join(block.lines).strip("\n")
        if block.name == "system":
            result.messages.append(
                Message(
                    id=_message_id(ref, block.moment, "system", body, seen),
                    conversation=ref,
                    sender="system",
                    sent_at=block.moment,
                    text=body,
                    kind="system",
                    role="system",
                    metadata={"line": block.line},
                )
            )
            continue
        kind, body = _media(body)
        body, mentions = _mentions(body, names)
        result.messages.append(
            Message(
                id=_message_id(ref, block.moment, block.name, body, seen),
                conversation=ref,
                sender=block.name,
                sender_name=block.name,
                sent_at=block.moment,
                text=body,
                kind=kind,
                mentions=tuple(name for name in mentions if name != block.name),
                metadata={"line": block.line},
            )
        )
    speakers = {block.name for block in blocks if block.name != "system"}
    metadata = {"timezone": TIMEZONE_NOTE}
    result.conversations.append(Conversation(ref, title, "group" if len(speakers) > 2 else "direct", NAME, metadata))


def read(path: Path) -> ReadResult:
    return read_line_files(path, NAME, "WeChat", detect, _read_file)
