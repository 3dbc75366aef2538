"""Facebook Messenger and Instagram JSON exports ("Download your information", JSON format).

Each thread is a folder `messages/inbox/<name>_<id>/` (Instagram:
`your_instagram_activity/messages/inbox/...`) holding `message_1.json`,
`message_2.json`...: `{"participants": [{"name"}], "messages": [...], "title",
"thread_type": "Regular" | "RegularGroup", "thread_path": "inbox/<name>_<id>"}`.
A message has `sender_name`, `timestamp_ms` and, depending on what it is,
`content`, `photos` / `videos` / `audio_files` / `gifs` / `files` / `sticker`,
`share` (`link`, `share_text`), `users` (who was added or removed),
`call_duration`, `is_unsent` and `reactions`; `type` is `Generic`, `Share`,
`Call`, `Subscribe` or `Unsubscribe` (Instagram often leaves it out).

Decisions:
- Every string is written as UTF-8 bytes escaped one by one as `\\u00XX`
  ("CzeÅ\\u009bÄ\\u0087" for "Cześć"); each is repaired by reading its characters
  as latin-1 bytes and those as UTF-8, and left as it is when that fails (text
  already correct).
- A folder is read thread by thread, all of a thread's `message_N.json` files
  together (`message_1.json` holds the newest messages, and each file lists
  newest first); a single file given alone is read alone.
- There are no platform ids: sender ref = the name as shown; conversation ref =
  `messenger:<thread_path>`; message id = `<ref>:<timestamp_ms>:<hash of sender
  and text>`. `timestamp_ms` is epoch milliseconds, so times are exact UTC.
- `Call`, `Subscribe` and `Unsubscribe` are system lines (their actor kept as
  sender); `is_unsent` is a recalled message; attachments become media
  placeholders (`[image] 1234.jpg`) with `content` as the caption; a share is a
  link message with its URL; reactions go to `metadata["reactions"]`.
"""

from __future__ import annotations

import hashlib
import re
from datetime import UTC, datetime
from itertools import islice
from pathlib import Path, PurePosixPath
from typing import Any

from threadkeep.model import Conversation, Message, ReadResult, Skip
from threadkeep.readers._io import confined, load_json

NAME = "messenger"

FILE_NAME = re.compile(r"^message_(\d{1,6})\.json$")
HEAD_BYTES = 4096
MAX_DETECT_FILES = 200
SYSTEM_TYPES = frozenset({"Call", "Subscribe", "Unsubscribe"})
MEDIA_KEYS = (("photos", "image"), ("gifs", "image"), ("videos", "video"), ("audio_files", "voice"), ("files", "file"))


def fix_mojibake(value: str) -> str:
    """Undo Facebook's encoding: UTF-8 bytes written as one `\\u00XX` character each."""
    try:
        return value.encode("latin-1").decode("utf-8")
    except (UnicodeEncodeError, UnicodeDecodeError):
        return value


def _text(value: Any) -> str:
    return fix_mojibake(value) if isinstance(value, str) else ""


def _is_thread_file(path: Path) -> bool:
    if not FILE_NAME.match(path.name):
        return False
    try:
        with path.open("rb") as handle:
            head = handle.read(HEAD_BYTES)
    except OSError:
        return False
    head = head.lstrip(b"\xef\xbb\xbf \t\r\n")
    return head.startswith(b"{") and (b'"participants"' in head or b'"sender_name"' in head)


def _thread_files(folder: Path) -> list[Path]:
    return sorted(path for path in folder.rglob("message_*.json") if path.is_file() and _is_thread_file(path))


def detect(path: Path) -> bool:
    if path.is_file():
        return _is_thread_file(path)
    if path.is_dir():
        try:
            candidates = islice(path.rglob("message_*.json"), MAX_DETECT_FILES)
            return any(_is_thread_file(child) for child in candidates if child.is_file())
        except OSError:
            return False
    return False


def _number(path: Path) -> int:
    found = FILE_NAME.match(path.name)
    return int(found.group(1)) if found else 0


def _names(raw: Any) -> list[str]:
    if not isinstance(raw, list):
        return []
    return [_text(item.get("name")) for item in raw if isinstance(item, dict) and _text(item.get("name"))]


def _attachments(raw: dict[str, Any]) -> tuple[str, list[str]]:
    """(kind of the first attachment, one placeholder line per attachment)."""
    kind = ""
    lines = []
    for key, this_kind in MEDIA_KEYS:
        items = raw.get(key)
        if not isinstance(items, list):
            continue
        for item in items:
            uri = _text(item.get("uri")) if isinstance(item, dict) else ""
            kind = kind or this_kind
            lines.append(f"[{this_kind}] {PurePosixPath(uri).name}".rstrip())
    if isinstance(raw.get("sticker"), dict):
        kind = kind or "image"
        lines.append("[image] sticker")
    return kind, lines


def _system_text(raw: dict[str, Any], kind: str, sender: str, content: str) -> str:
    if content:
        return content
    if kind == "Call":
        duration = raw.get("call_duration")
        seconds = f", {duration} s" if isinstance(duration, int) and not isinstance(duration, bool) else ""
        return f"{sender} call{seconds}"
    users = ", ".join(_names(raw.get("users")))
    return f"{sender} {'added' if kind == 'Subscribe' else 'removed'} {users}".rstrip()


def _message(raw: Any, ref: str, seen: dict[str, int]) -> Message:
    if not isinstance(raw, dict):
        raise ValueError(f"expected an object, got {type(raw).__name__}")
    sender = _text(raw.get("sender_name")).strip()
    if not sender:
        raise ValueError("sender_name is missing")
    stamp = raw.get("timestamp_ms")
    if not isinstance(stamp, int) or isinstance(stamp, bool):
        raise ValueError(f"timestamp_ms is {type(stamp).__name__}, expected epoch milliseconds")
    try:
        sent_at = datetime.fromtimestamp(stamp / 1000, tz=UTC)
    except (OverflowError, OSError, ValueError) as error:
        raise ValueError(f"timestamp_ms {stamp} is out of range") from error
    message_type = _text(raw.get("type")) or "Generic"
    content = _text(raw.get("content"))
    metadata: dict[str, Any] = {"timestamp_ms": stamp, "type": message_type}
    reactions = raw.get("reactions")
    if isinstance(reactions, list):
        fixed = [
            {"reaction": _text(item.get("reaction")), "actor": _text(item.get("actor"))}
            for item in reactions
            if isinstance(item, dict)
        ]
        if fixed:
            metadata["reactions"] = fixed
    system = message_type in SYSTEM_TYPES
    recalled = raw.get("is_unsent") is True
    kind = "system" if system else "text"
    if system:
        text = _system_text(raw, message_type, sender, content)
    else:
        media_kind, placeholders = _attachments(raw)
        share = raw.get("share") if isinstance(raw.get("share"), dict) else {}
        link = _text(share.get("link"))
        share_text = _text(share.get("share_text"))
        lines = [*placeholders, content]
        if link and link not in content:
            lines.append(link)
        if share_text and share_text not in content:
            lines.append(share_text)
        text = "\n".join(line for line in lines if line)
        kind = media_kind or ("link" if link else "text")
    digest = hashlib.sha1(f"{sender}\n{text}".encode()).hexdigest()[:10]
    base = f"{ref}:{stamp}:{digest}"
    seen[base] = seen.get(base, 0) + 1
    return Message(
        id=base if seen[base] == 1 else f"{base}-{seen[base]}",
        conversation=ref,
        sender=sender,
        sender_name=sender,
        sent_at=sent_at,
        text=text,
        kind=kind,
        role="system" if system else "member",
        recalled=recalled,
        metadata=metadata,
    )


def _read_thread(files: list[Path], result: ReadResult) -> None:
    """One thread's files, oldest (highest-numbered) first, each read in reverse: the thread in time order."""
    header: dict[str, Any] | None = None
    entries: list[tuple[Path, int, Any]] = []
    for path in sorted(files, key=_number, reverse=True):
        data, problems = load_json(path)
        result.skipped.extend(problems)
        if data is None:
            continue
        if not isinstance(data, dict) or not isinstance(data.get("messages"), list):
            result.skipped.append(Skip(str(path), None, "expected an object with a messages list"))
            continue
        header = data  # ends on message_1.json, which has the thread's current title and participants
        entries.extend((path, index, raw) for index, raw in reversed(list(enumerate(data["messages"]))))
    if header is None:
        return
    thread_path = _text(header.get("thread_path")) or files[0].parent.name
    ref = f"messenger:{thread_path}"
    seen: dict[str, int] = {}
    messages = []
    for path, index, raw in entries:
        try:
            messages.append(_message(raw, ref, seen))
        except ValueError as error:
            result.skipped.append(Skip(str(path), None, f"message {index}: {error}"))
    if not messages:
        result.skipped.append(Skip(str(files[0]), None, "no messages"))
        return
    participants = _names(header.get("participants"))
    thread_type = _text(header.get("thread_type"))
    group = thread_type == "RegularGroup" or (thread_type != "Regular" and len(participants) > 2)
    title = _text(header.get("title")) or ", ".join(participants) or thread_path
    metadata: dict[str, Any] = {"thread_path": thread_path, "participants": participants}
    if thread_type:
        metadata["thread_type"] = thread_type
    if header.get("is_still_participant") is False:
        metadata["left"] = True
    parts = {part.lower() for part in files[0].resolve().parts}
    metadata["platform"] = "instagram" if any("instagram" in part for part in parts) else "facebook"
    result.conversations.append(Conversation(ref, title, "group" if group else "direct", NAME, metadata))
    result.messages.extend(sorted(messages, key=lambda message: message.sent_at))


def read(path: Path) -> ReadResult:
    result = ReadResult(format=NAME)
    if path.is_file():
        files = [path]
    elif path.is_dir():
        files = confined(path, _thread_files(path), result.skipped)
    else:
        files = []
    if not files:
        result.skipped.append(Skip(str(path), None, "no Messenger message_N.json files found"))
    threads: dict[Path, list[Path]] = {}
    for file in files:
        threads.setdefault(file.parent, []).append(file)
    for thread_files in threads.values():
        _read_thread(thread_files, result)
    result.messages.sort(key=lambda message: message.sent_at)
    return result
