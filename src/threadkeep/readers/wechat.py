"""WeChat desktop copy-paste text: a header line `name 2023/12/31 21:05` (or `2023-12-31 21:05:33`), then the
message's lines until the next header.

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
from threadkeep.readers._io import files_to_read, head_lines, read_text_or_skip

NAME = "wechat"

CHINA = timezone(timedelta(hours=8), "Asia/Shanghai")
TIMEZONE_NOTE = "Asia/Shanghai (+08:00) assumed"
HEADER = re.compile(
    r"^(?P<name>\S.*?)[ \t\u3000]+"
    r"(?P<date>\d{4}[/-]\d{1,2}[/-]\d{1,2}|\d{4}年\d{1,2}月\d{1,2}日)[ \t\u3000]+"
    r"(?P<time>\d{1,2}:\d{2}(?::\d{2})?)[ \t]*$"
)
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


def _moment(date: str, time: str) -> datetime:
    year, month, day = (int(part) for part in re.split(r"[/\-年月日]", date) if part)
    pieces = [int(piece) for piece in time.split(":")]
    return datetime(year, month, day, pieces[0], pieces[1], pieces[2] if len(pieces) > 2 else 0, tzinfo=CHINA)


def _head_lines(path: Path) -> list[str]:
    return [line.strip("\ufeff \t\r") for line in head_lines(path, HEAD_BYTES) if line.strip("\ufeff \t\r")]


def detect(path: Path) -> bool:
    if not path.is_file() or path.suffix.lower() != ".txt":
        return False
    lines = _head_lines(path)
    # The first line of a paste is always a speaker header; nothing else ends a line with a date and time.
    return bool(lines) and HEADER.match(lines[0]) is not None


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
        header = HEADER.match(stripped)
        if header:
            try:
                moment = _moment(header.group("date"), header.group("time"))
            except ValueError as error:
                reason = f"bad date/time in header ({error}); lines up to the next header are left out"
                result.skipped.append(Skip(file, number, reason))
                current = _Block(number, "", datetime.min.replace(tzinfo=CHINA))
                continue
            current = _Block(number, header.group("name").strip(), moment)
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
        if SYSTEM_LINE.match(stripped):
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
    start = text.find("@")
    while start != -1:
        after = text[start + 1 :]
        for name in names:
            if after.startswith(name) and name not in found:
                found.append(name)
                break
        start = text.find("@", start + 1)
    return text.replace(MENTION_SPACE, " "), tuple(found)


def _read_file(path: Path, result: ReadResult) -> None:
    file = str(path)
    text = read_text_or_skip(path, result.skipped)
    if text is None:
        return
    if not text.strip("\ufeff \t\r\n"):
        result.skipped.append(Skip(file, None, "file is empty"))
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
    result = ReadResult(format=NAME)
    for file in files_to_read(path, detect, "WeChat", result.skipped):
        _read_file(file, result)
    result.messages.sort(key=lambda message: message.sent_at)
    return result
