"""Signal chats exported by signal-export (Signal Desktop) or signalbackup-tools (Android backups).

signal-export (`sigexport DEST`) writes one folder per chat: `DEST/<chat name>/`
with `chat.md`, `data.json` and `index.html` (attachments under `media/`).
`data.json` has one JSON object per line: `date` (the exporting machine's wall
clock, ISO without an offset), `sender` ("Me" for your own messages), `body`,
`quote`, `sticker`, `reactions` (`[name, emoji]` pairs), `attachments`
(`{name, path}`), `deleted`. `chat.md` has the same messages as
`[2019-05-29 15:04:00] Aya: text` (older versions: `[2019-05-29, 15:04]`),
further lines continuing the message.

signalbackup-tools `--exporttxt DIR` writes one `<chat name> (_id<N>).txt` per
chat: `[Jan 02, 2024 10:00:00] <Aya> text`, a reaction list appended as
` (Me: 👍; Jim: ❤)`, `[...] *** <Aya> sent file "photo.jpg"` per attachment, and
`[...] *** <event text>` for events (group changes, calls, safety numbers).

Decisions:
- `data.json` is read when it is there, and its `chat.md` (the same messages
  rendered) is then only counted as ignored; a `chat.md` alone is read.
- Times have no zone: stored as if UTC, and the conversation says
  `metadata["timezone"] = "unknown (local time read as UTC)"`.
- There are no platform ids: sender ref = the name as shown; conversation ref =
  `signal:<chat name>` (the chat folder's name, or the `.txt` name without its
  ` (_idN)`); message id = `<ref>:<time>:<hash of sender and text>`. More than
  two people speaking makes it a group.
- Calls ("Outgoing voice call (accepted, 2m 3s)", "Missed call") and `***`
  events are system lines; deleted messages are recalled; attachments and
  stickers become media placeholders; the quoted message goes to
  `metadata["quote"]` and reactions to `metadata["reactions"]`.
"""

from __future__ import annotations

import re
from datetime import UTC, datetime
from pathlib import Path, PurePosixPath
from typing import Any

from threadkeep.model import Conversation, Message, ReadResult, Skip
from threadkeep.readers._io import confined, head_lines, iter_json_lines, read_text_or_skip, text_message_id

NAME = "signal"

DATA_FILE = "data.json"
CHAT_FILE = "chat.md"
HEAD_BYTES = 4096
TIMEZONE_NOTE = "unknown (local time read as UTC)"
MD_LINE = re.compile(
    r"^\[(?P<date>\d{4}-\d{2}-\d{2}),? (?P<time>\d{2}:\d{2}(?::\d{2})?)\] (?P<sender>[^:\n]{1,80}): (?P<body>.*)$"
)
CALL = re.compile(r"^(?:Incoming|Outgoing|Missed) (?:voice |video )?call\b")
MD_DELETED = "(This message was deleted)"
TXT_LINE = re.compile(
    r"^\[(?P<month>[A-Z][a-z]{2}) (?P<day>\d{1,2}), (?P<year>\d{4}) (?P<time>\d{2}:\d{2}:\d{2})\] (?P<rest>.*)$"
)
TXT_FILE = re.compile(r"^<(?P<sender>[^<>\n]{1,80})> sent file(?: \"(?P<name>.*)\"| of type (?P<type>\S+))?$")
TXT_SPEECH = re.compile(r"^<(?P<sender>[^<>\n]{1,80})> (?P<body>.*)$", re.DOTALL)
TXT_REACTIONS = re.compile(r" \((?P<list>[^():;\n]{1,80}: [^\s();]{1,12}(?:; [^():;\n]{1,80}: [^\s();]{1,12})*)\)$")
TXT_THREAD_ID = re.compile(r" \(_id\d+\)$")
MONTHS = {
    name: number
    for number, name in enumerate(
        ("Jan", "Feb", "Mar", "Apr", "May", "Jun", "Jul", "Aug", "Sep", "Oct", "Nov", "Dec"), start=1
    )
}
MAX_REACTIONS_CHARS = 2000
MAX_LINK_NAME = 300
MAX_LINK_PATH = 500
MD_REACTIONS = re.compile(r"^\(- (?P<list>.*) -\)$")
MD_STICKER = re.compile(r"^\(\( (?P<label>.*) \)\)$")
IMAGE = frozenset({".png", ".jpg", ".jpeg", ".gif", ".webp", ".heic", ".tif", ".tiff", ".apng", ".svg"})
VIDEO = frozenset({".mp4", ".mov", ".mkv", ".mpeg", ".webm", ".qt"})
VOICE = frozenset({".m4a", ".aac", ".mp3", ".ogg", ".opus", ".wav", ".flac"})


def _head(path: Path) -> list[str]:
    return [line for line in head_lines(path, HEAD_BYTES) if line.strip()]


def _is_data_file(path: Path) -> bool:
    if path.name != DATA_FILE:
        return False
    lines = _head(path)
    first = lines[0].lstrip("\ufeff ") if lines else ""
    return first.startswith("{") and all(f'"{key}"' in first for key in ("date", "sender", "body"))


def _is_chat_file(path: Path) -> bool:
    if path.name != CHAT_FILE:
        return False
    lines = _head(path)
    return bool(lines) and MD_LINE.match(lines[0].lstrip("\ufeff")) is not None


def _is_txt_file(path: Path) -> bool:
    if path.suffix.lower() != ".txt":
        return False
    lines = _head(path)
    return bool(lines) and TXT_LINE.match(lines[0].lstrip("\ufeff")) is not None


def _txt_files(folder: Path) -> list[Path]:
    return sorted(child for child in folder.iterdir() if child.is_file() and _is_txt_file(child))


def _chat_folders(path: Path) -> list[Path]:
    """The chat folders: `path` itself, or its subfolders (a whole `sigexport` destination)."""
    candidates = [path, *sorted(child for child in path.iterdir() if child.is_dir())]
    return [folder for folder in candidates if _is_data_file(folder / DATA_FILE) or _is_chat_file(folder / CHAT_FILE)]


def detect(path: Path) -> bool:
    if path.is_file():
        return _is_data_file(path) or _is_chat_file(path) or _is_txt_file(path)
    if path.is_dir():
        try:
            return bool(_chat_folders(path)) or bool(_txt_files(path))
        except OSError:
            return False
    return False


def _kind_of(name: str) -> str:
    suffix = PurePosixPath(name.lower()).suffix
    if suffix in IMAGE:
        return "image"
    if suffix in VIDEO:
        return "video"
    if suffix in VOICE:
        return "voice"
    return "file"


def _time(value: Any) -> datetime:
    if not isinstance(value, str):
        raise ValueError(f"date is {type(value).__name__}, expected an ISO date string")
    moment = datetime.fromisoformat(value)
    return moment.replace(tzinfo=UTC) if moment.tzinfo is None else moment


class _Draft:
    __slots__ = ("kind", "line", "metadata", "moment", "recalled", "sender", "text")

    def __init__(self, line: int, moment: datetime, sender: str, text: str, kind: str = "text") -> None:
        self.line = line
        self.moment = moment
        self.sender = sender
        self.text = text
        self.kind = kind
        self.recalled = False
        self.metadata: dict[str, Any] = {"line": line}


def _from_record(line: int, raw: Any) -> _Draft:
    if not isinstance(raw, dict):
        raise ValueError(f"expected an object, got {type(raw).__name__}")
    moment = _time(raw.get("date"))
    sender = raw.get("sender")
    if not isinstance(sender, str) or not sender.strip():
        raise ValueError("sender is missing")
    body = raw.get("body") if isinstance(raw.get("body"), str) else ""
    body = body.rstrip()  # sigexport pads every body with two spaces for Markdown line breaks
    draft = _Draft(line, moment, sender.strip(), body)
    if raw.get("deleted") is True:
        draft.recalled, draft.text = True, ""
        return draft
    if raw.get("call") is True or CALL.match(body):
        draft.kind = "system"
        return draft
    placeholders = []
    for attachment in raw.get("attachments") if isinstance(raw.get("attachments"), list) else []:
        name = attachment.get("name") if isinstance(attachment, dict) else None
        if isinstance(name, str) and name:
            kind = _kind_of(name)
            draft.kind = draft.kind if draft.kind != "text" else kind
            placeholders.append(f"[{kind}] {name}")
    sticker = raw.get("sticker")
    label = sticker if isinstance(sticker, str) else sticker.get("emoji") if isinstance(sticker, dict) else ""
    if sticker and isinstance(label, str):
        draft.kind = draft.kind if draft.kind != "text" else "image"
        placeholders.append(f"[image] sticker {label}".rstrip())
    draft.text = "\n".join(part for part in (*placeholders, body) if part)
    quote = raw.get("quote")
    if isinstance(quote, str) and quote.strip():
        draft.metadata["quote"] = "\n".join(part.removeprefix("> ") for part in quote.strip().splitlines())
    reactions = raw.get("reactions")
    if isinstance(reactions, list):
        pairs = [item for item in reactions if isinstance(item, list | dict)]
        if pairs:
            draft.metadata["reactions"] = pairs
    return draft


def _read_data(path: Path, result: ReadResult) -> list[_Draft]:
    drafts = []
    for item in iter_json_lines(path):
        if isinstance(item, Skip):
            result.skipped.append(item)
            continue
        line, raw = item
        try:
            drafts.append(_from_record(line, raw))
        except ValueError as error:
            result.skipped.append(Skip(str(path), line, str(error)))
    return drafts


def _links(text: str) -> list[tuple[int, int, str, str]]:
    """(start, end, name, target) of each Markdown link `[name](target)` / `![name](target)`.

    Found from each `](` outwards with bounded look-ups: a pattern scanning from every `[` backtracks
    on a line of thousands of them.
    """
    links = []
    position = 0
    while True:
        middle = text.find("](", position)
        if middle == -1:
            return links
        opening = text.rfind("[", max(position, middle - MAX_LINK_NAME), middle)
        closing = text.find(")", middle + 2, middle + 2 + MAX_LINK_PATH)
        name = text[opening + 1 : middle] if opening != -1 else ""
        target = text[middle + 2 : closing] if closing != -1 else ""
        if opening == -1 or closing == -1 or "\n" in name or "\n" in target or "]" in name:
            position = middle + 2
            continue
        start = opening - 1 if opening > 0 and text[opening - 1] == "!" else opening
        links.append((start, closing + 1, name, target))
        position = closing + 1


def _finish_markdown(draft: _Draft, lines: list[str]) -> None:
    """Turn a chat.md message's lines into text, media placeholders, quote and reactions."""
    kept = []
    quote = []
    for line in lines:
        stripped = line.strip()
        reactions = MD_REACTIONS.match(stripped)
        sticker = MD_STICKER.match(stripped)
        if reactions:
            draft.metadata["reactions"] = [part.split(": ", 1) for part in reactions.group("list").split(", ")]
        elif sticker:
            draft.kind = "image"
            kept.append(f"[image] sticker {sticker.group('label')}")
        elif stripped.startswith("> ") or stripped == ">":
            quote.append(stripped[2:])
        else:
            kept.append(line.rstrip())
    text = "\n".join(kept).strip("\n")
    if text == MD_DELETED:
        draft.recalled, draft.text = True, ""
        return
    placeholders = []
    kept_parts = []
    position = 0
    for start, end, name, target in _links(text):
        kind = _kind_of(name or target)
        draft.kind = draft.kind if draft.kind != "text" else kind
        placeholders.append(f"[{kind}] {name}".rstrip())
        kept_parts.append(text[position:start])
        position = end
    text = ("".join(kept_parts) + text[position:]).strip()
    draft.text = "\n".join(part for part in (*placeholders, text) if part)
    if quote:
        draft.metadata["quote"] = "\n".join(quote).strip()
    if CALL.match(draft.text):
        draft.kind = "system"


def _read_markdown(path: Path, result: ReadResult) -> list[_Draft]:
    text = read_text_or_skip(path, result.skipped)
    if text is None:
        return []
    drafts: list[_Draft] = []
    pending: list[str] = []
    for number, raw_line in enumerate(text.splitlines(), start=1):
        line = raw_line.rstrip("\r").lstrip("\ufeff")
        found = MD_LINE.match(line)
        if found:
            try:
                moment = _time(f"{found.group('date')}T{found.group('time')}")
            except ValueError as error:
                result.skipped.append(Skip(str(path), number, f"bad date/time ({error})"))
                continue
            if drafts:
                _finish_markdown(drafts[-1], pending)
            drafts.append(_Draft(number, moment, found.group("sender").strip(), ""))
            pending = [found.group("body")]
        elif drafts:
            pending.append(line)
        elif line.strip():
            result.skipped.append(Skip(str(path), number, "text before the first dated Signal line"))
    if drafts:
        _finish_markdown(drafts[-1], pending)
    return drafts


def _txt_draft(number: int, moment: datetime, rest: str) -> _Draft:
    """One signalbackup-tools line (its continuation lines already joined to `rest`)."""
    if rest.startswith("*** "):
        event = rest[4:]
        sent = TXT_FILE.match(event)
        if sent is None:
            return _Draft(number, moment, "system", event.strip(), "system")
        name = sent.group("name") or ""
        kind = _kind_of(name) if name else _mime_kind(sent.group("type") or "")
        return _Draft(number, moment, sent.group("sender").strip(), f"[{kind}] {name}".rstrip(), kind)
    speech = TXT_SPEECH.match(rest)
    if speech is None:
        raise ValueError("neither <name> text nor a *** event")
    body = speech.group("body")
    draft = _Draft(number, moment, speech.group("sender").strip(), body)
    reactions = TXT_REACTIONS.search(body[-MAX_REACTIONS_CHARS:])
    if reactions:
        draft.text = body[: len(body) - len(reactions.group(0))]
        draft.metadata["reactions"] = [part.split(": ", 1) for part in reactions.group("list").split("; ")]
    if CALL.match(draft.text):
        draft.kind = "system"
    return draft


def _mime_kind(mime: str) -> str:
    for prefix, kind in (("image/", "image"), ("video/", "video"), ("audio/", "voice")):
        if mime.startswith(prefix):
            return kind
    return "file"


def _read_txt(path: Path, result: ReadResult) -> list[_Draft]:
    text = read_text_or_skip(path, result.skipped)
    if text is None:
        return []
    entries: list[tuple[int, datetime, list[str]]] = []
    for number, raw_line in enumerate(text.splitlines(), start=1):
        line = raw_line.rstrip("\r").lstrip("\ufeff")
        found = TXT_LINE.match(line)
        if found:
            try:
                month = MONTHS.get(found.group("month"))
                if month is None:
                    raise ValueError(f"unknown month {found.group('month')!r}")
                day = f"{found.group('year')}-{month:02d}-{int(found.group('day')):02d}"
                moment = _time(f"{day}T{found.group('time')}")
            except ValueError as error:
                result.skipped.append(Skip(str(path), number, f"bad date/time ({error})"))
                continue
            entries.append((number, moment, [found.group("rest")]))
        elif entries:
            entries[-1][2].append(line)
        elif line.strip():
            result.skipped.append(Skip(str(path), number, "text before the first dated Signal line"))
    drafts = []
    for number, moment, lines in entries:
        try:
            drafts.append(_txt_draft(number, moment, "\n".join(lines).rstrip("\n")))
        except ValueError as error:
            result.skipped.append(Skip(str(path), number, str(error)))
    return drafts


def _add_chat(title: str, drafts: list[_Draft], source: Path, result: ReadResult) -> None:
    if not drafts:
        result.skipped.append(Skip(str(source), None, "no Signal messages found"))
        return
    ref = f"signal:{title}"
    seen: dict[str, int] = {}
    speakers = set()
    for draft in drafts:
        system = draft.kind == "system"
        if not system:
            speakers.add(draft.sender)
        result.messages.append(
            Message(
                id=text_message_id(ref, draft.moment, draft.sender, draft.text, seen),
                conversation=ref,
                sender=draft.sender,
                sender_name=draft.sender,
                sent_at=draft.moment,
                text=draft.text,
                kind=draft.kind,
                role="system" if system else "member",
                recalled=draft.recalled,
                metadata=draft.metadata,
            )
        )
    metadata = {"timezone": TIMEZONE_NOTE, "file": source.name}
    result.conversations.append(Conversation(ref, title, "group" if len(speakers) > 2 else "direct", NAME, metadata))


def read(path: Path) -> ReadResult:
    result = ReadResult(format=NAME)
    if path.is_file() and path.suffix.lower() == ".txt":
        _add_chat(TXT_THREAD_ID.sub("", path.stem), _read_txt(path, result), path, result)
    elif path.is_file():
        drafts = _read_data(path, result) if path.name == DATA_FILE else _read_markdown(path, result)
        _add_chat(path.parent.name or path.stem, drafts, path, result)
    elif path.is_dir():
        folders = _chat_folders(path)
        for file in confined(path, _txt_files(path), result.skipped):
            _add_chat(TXT_THREAD_ID.sub("", file.stem), _read_txt(file, result), file, result)
        if not folders and not _txt_files(path):
            result.skipped.append(Skip(str(path), None, "no signal-export chat folders (data.json, chat.md) found"))
        for folder in folders:
            data, chat = folder / DATA_FILE, folder / CHAT_FILE
            if _is_data_file(data) and confined(path, [data], result.skipped):
                if chat.is_file():
                    result.ignore("signal chat.md rendering of data.json")
                _add_chat(folder.name, _read_data(data, result), data, result)
            elif confined(path, [chat], result.skipped):
                _add_chat(folder.name, _read_markdown(chat, result), chat, result)
    else:
        result.skipped.append(Skip(str(path), None, "no such file or folder"))
    result.messages.sort(key=lambda message: message.sent_at)
    return result
