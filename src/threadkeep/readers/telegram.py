"""Telegram Desktop JSON export (`result.json`): one chat, or a whole account (`chats.list`, `left_chats.list`).

Decisions:
- conversation ref = the chat id; message id = `<chat id>:<message id>`
  (Telegram numbers messages per chat). Sender ref = `from_id` ("user123",
  "channel456"), which `mention_name` entities resolve to as well. Exports made
  before Telegram Desktop 2.x wrote `from_id` / `actor_id` as a bare user number
  (read as "user123") and wrote no sender at all on channel posts (read as the
  channel, "channel<chat id>", with the post's `author` signature kept in
  metadata). A message with a `from` name and no id at all is read under that
  name (`metadata["sender_id_missing"] = True`), not dropped.
- Time comes from `date_unixtime` (UTC). `date` is the exporting machine's wall
  clock without an offset: beside `date_unixtime` it gives the offset the time is
  kept in (shown as Telegram showed it); when it is the only time, it is read as
  UTC and the message is flagged `metadata["time_zone_unknown"] = True`.
- `@username` mentions cannot be turned into sender refs (the export never lists
  usernames); they stay in the text and are listed in
  `metadata["mentioned_usernames"]`.
- In forum groups a message "replying" to a `topic_created` service message is
  posted in that topic: it gets `platform_thread` = the topic's message id and no
  `reply_to`.
- A reply whose target is not in the export keeps `reply_to` and is flagged
  `metadata["reply_to_missing"] = True`.
"""

from __future__ import annotations

import dataclasses
import json
import re
from datetime import UTC, datetime, timedelta, timezone
from pathlib import Path, PurePosixPath
from typing import Any

from threadkeep.model import Conversation, Message, ReadResult, Skip
from threadkeep.readers._io import confined, json_array_items, loads, read_filled_text, too_deep

NAME = "telegram"

CHAT_TYPES = frozenset(
    {
        "personal_chat",
        "bot_chat",
        "saved_messages",
        "private_group",
        "private_supergroup",
        "public_supergroup",
        "private_channel",
        "public_channel",
    }
)
DIRECT_TYPES = frozenset({"personal_chat", "bot_chat", "saved_messages"})
CHANNEL_TYPES = frozenset({"private_channel", "public_channel"})
MEDIA_KINDS = {
    "voice_message": "voice",
    "video_file": "video",
    "video_message": "video",
    "animation": "video",
    "sticker": "image",
    "audio_file": "file",
}
HEAD_BYTES = 2048
SINGLE_CHAT_HEAD = re.compile(rb'"type"\s*:\s*"(' + b"|".join(t.encode() for t in sorted(CHAT_TYPES)) + rb')"')
ACCOUNT_HEAD = re.compile(rb'^\{\s*"about"\s*:.*?"(personal_information|chats)"\s*:\s*\{', re.DOTALL)
MESSAGES_KEY = re.compile(r'"messages"\s*:\s*\[')
NOT_INCLUDED = "(File not included"


def _head(path: Path) -> bytes:
    try:
        with path.open("rb") as handle:
            return handle.read(HEAD_BYTES).lstrip(b"\xef\xbb\xbf \t\r\n")
    except OSError:
        return b""


def _is_export_file(path: Path) -> bool:
    head = _head(path)
    if not head.startswith(b"{") or re.match(rb'\{\s*"guild"\s*:', head):
        return False
    return bool(ACCOUNT_HEAD.search(head)) or (b'"messages"' in head and bool(SINGLE_CHAT_HEAD.search(head)))


def detect(path: Path) -> bool:
    if path.is_file():
        return path.suffix.lower() == ".json" and _is_export_file(path)
    if path.is_dir():
        return (path / "result.json").is_file() and _is_export_file(path / "result.json")
    return False


def _load(path: Path, skipped: list[Skip]) -> Any:
    file = str(path)
    text = read_filled_text(path, skipped)
    if text is None:
        return None
    text = text.lstrip("\ufeff")
    try:
        try:
            return loads(text)
        except json.JSONDecodeError as error:
            return _salvage(text, file, error, skipped)
    except RecursionError:
        # Also from the salvage parse, which runs a few frames deeper than the first.
        skipped.append(too_deep(text, file))
        return None


def _salvage(text: str, file: str, error: json.JSONDecodeError, skipped: list[Skip]) -> Any:
    """A single-chat export cut short: keep its header and the messages before the break."""
    found = MESSAGES_KEY.search(text)
    header = None
    if found is not None:
        try:
            header = loads(text[: found.start()] + '"messages": []}')
        except json.JSONDecodeError:
            header = None
    if found is None or not isinstance(header, dict) or "chats" in header:
        skipped.append(Skip(file, error.lineno, f"not valid JSON ({error.msg} at column {error.colno})"))
        return None
    for item in json_array_items(text, found.end() - 1, file):
        if isinstance(item, Skip):
            skipped.append(item)
        else:
            header["messages"].append(item[1])
    return header


def _chats(data: Any, file: str, skipped: list[Skip]) -> list[dict[str, Any]]:
    if not isinstance(data, dict):
        skipped.append(Skip(file, 1, f"expected a JSON object, got {type(data).__name__}"))
        return []
    if "messages" in data:
        if isinstance(data["messages"], list):
            return [data]
        skipped.append(Skip(file, None, f"messages is {type(data['messages']).__name__}, expected a list"))
        return []
    chats: list[dict[str, Any]] = []
    for section in ("chats", "left_chats"):
        block = data.get(section)
        if block is None:
            continue
        listed = block.get("list") if isinstance(block, dict) else None
        if not isinstance(listed, list):
            skipped.append(Skip(file, None, f"{section}.list is missing or not a list"))
            continue
        for index, chat in enumerate(listed):
            if isinstance(chat, dict) and isinstance(chat.get("messages"), list):
                chats.append({**chat, "_section": section})
            else:
                skipped.append(Skip(file, None, f"{section}.list[{index}]: not a chat with a messages list"))
    if not chats and "chats" not in data:
        skipped.append(Skip(file, None, "neither messages nor chats.list found"))
    return chats


def _string(value: Any) -> str:
    return value if isinstance(value, str) else ""


def _render(raw: Any, notes: list[str]) -> tuple[str, list[str], list[str]]:
    """`text` (a string, or a list of strings and entity objects) -> (text, sender refs, @usernames).

    Raises ValueError when `text` is neither: the message has nothing left to say.
    """
    if raw is None:
        return "", [], []
    if isinstance(raw, str):
        return raw, [], []
    if not isinstance(raw, list):
        raise ValueError(f"text is {type(raw).__name__}, expected a string or a list")
    parts: list[str] = []
    mentions: list[str] = []
    usernames: list[str] = []
    for part in raw:
        if isinstance(part, str):
            parts.append(part)
            continue
        if not isinstance(part, dict):
            notes.append(f"a text part is {type(part).__name__}; left out")
            continue
        text = _string(part.get("text"))
        kind = part.get("type")
        if kind == "mention_name" and part.get("user_id") is not None:
            ref = f"user{part['user_id']}"
            if ref not in mentions:
                mentions.append(ref)
            parts.append(text if text.startswith("@") else f"@{text}")
        elif kind == "mention":
            usernames.append(text.lstrip("@"))
            parts.append(text)
        elif kind == "text_link" and isinstance(part.get("href"), str) and part["href"] != text:
            parts.append(f"{text} ({part['href']})")
        else:
            parts.append(text)
    return "".join(parts), mentions, usernames


def _time(raw: dict[str, Any], unix_key: str, local_key: str) -> tuple[datetime, bool]:
    """(moment, exact): exact is False when only the offset-less local time was there."""
    local = raw.get(local_key)
    wall = _wall_clock(local)
    unix = raw.get(unix_key)
    if isinstance(unix, str | int) and not isinstance(unix, bool):
        try:
            moment = datetime.fromtimestamp(int(unix), tz=UTC)
        except (ValueError, OverflowError, OSError):
            pass
        else:
            return moment.astimezone(_offset(wall, moment)), True
    if wall is None:
        raise ValueError(f"{unix_key} and {local_key} are missing or unreadable")
    if wall.tzinfo is None:
        return wall.replace(tzinfo=UTC), False
    return wall, True


def _wall_clock(local: object) -> datetime | None:
    if not isinstance(local, str):
        return None
    try:
        return datetime.fromisoformat(local)
    except ValueError:
        return None


_QUARTER_HOUR = 15 * 60
_MAX_OFFSET = timedelta(hours=14)


def _offset(wall: datetime | None, moment: datetime) -> timezone:
    """The exporting machine's offset, from its wall clock (`date`) beside the UTC time: times are
    then shown as Telegram showed them (10:01 in Shanghai, not 02:01), the instant unchanged."""
    if wall is None or wall.tzinfo is not None:
        return UTC
    seconds = (wall - moment.replace(tzinfo=None)).total_seconds()
    offset = timedelta(seconds=round(seconds / _QUARTER_HOUR) * _QUARTER_HOUR)
    return timezone(offset) if offset and abs(offset) <= _MAX_OFFSET else UTC


def _media(raw: dict[str, Any]) -> tuple[str, str]:
    """(kind, placeholder) for the message's attachment, or ("", "")."""

    def name(key: str) -> str:
        value = _string(raw.get(key))
        return "" if not value or value.startswith(NOT_INCLUDED) else PurePosixPath(value).name

    if "photo" in raw:
        return "image", f"[image] {name('photo')}".rstrip()
    media_type = _string(raw.get("media_type"))
    if "file" in raw or media_type:
        kind = MEDIA_KINDS.get(media_type, "file")
        label = _string(raw.get("file_name")) or name("file")
        if media_type == "sticker":
            label = f"sticker {_string(raw.get('sticker_emoji'))}".rstrip()
        return kind, f"[{kind}] {label}".rstrip()
    return "", ""


def _extras(raw: dict[str, Any]) -> list[str]:
    lines = []
    poll = raw.get("poll")
    if isinstance(poll, dict):
        lines.append(f"[poll] {_string(poll.get('question'))}".rstrip())
    if isinstance(raw.get("location_information"), dict):
        lines.append("[location]")
    contact = raw.get("contact_information")
    if isinstance(contact, dict):
        names = (_string(contact.get("first_name")), _string(contact.get("last_name")))
        name = " ".join(part for part in names if part)
        lines.append(f"[contact] {name}".rstrip())
    return lines


def _service_text(raw: dict[str, Any], text: str) -> str:
    if text:
        return text
    actor = _string(raw.get("actor")) or "someone"
    action = _string(raw.get("action")).replace("_", " ") or "did something"
    details = []
    members = raw.get("members")
    if isinstance(members, list):
        details.append(", ".join(member for member in members if isinstance(member, str)))
    for key in ("title", "new_title"):
        if _string(raw.get(key)):
            details.append(f'"{raw[key]}"')
    return " ".join(part for part in (actor, action, *details) if part)


@dataclasses.dataclass(frozen=True, slots=True)
class _Chat:
    ref: str
    conversation: Conversation


def _chat(raw: dict[str, Any]) -> _Chat:
    chat_id = raw.get("id")
    kind = _string(raw.get("type"))
    name = _string(raw.get("name"))
    if chat_id is None or isinstance(chat_id, bool | dict | list):
        # Ids are only missing from hand-trimmed exports; the name is the next best stable key.
        chat_id = name or "chat"
    ref = str(chat_id)
    title = name or ("Saved Messages" if kind == "saved_messages" else ref)
    metadata: dict[str, Any] = {"chat_type": kind}
    if raw.get("_section") == "left_chats":
        metadata["left"] = True
    conversation = Conversation(ref, title, "direct" if kind in DIRECT_TYPES else "group", NAME, metadata)
    return _Chat(ref, conversation)


def _peer_ref(value: Any) -> str:
    """A sender id as current exports write it ("user123"); old exports wrote the bare user number."""
    if isinstance(value, int) and not isinstance(value, bool):
        return f"user{value}"
    return _string(value).strip()


def _sender(raw: dict[str, Any], chat: _Chat, metadata: dict[str, Any]) -> tuple[str, str]:
    """(sender ref, display name) from whichever identity fields the export wrote."""
    name = _string(raw.get("from")).strip()
    ref = _peer_ref(raw.get("from_id"))
    if ref:
        return ref, name
    if name:
        metadata["sender_id_missing"] = True
        return name, name
    if chat.conversation.metadata.get("chat_type") in CHANNEL_TYPES:
        # Old exports left channel posts without a sender: the channel itself posted them.
        author = _string(raw.get("author")).strip()
        if author:
            metadata["author"] = author
        return f"channel{chat.ref}", chat.conversation.title
    raise ValueError("no sender (from_id and from are missing)")


def _parse_message(raw: Any, chat: _Chat, notes: list[str]) -> Message:
    if not isinstance(raw, dict):
        raise ValueError(f"expected an object, got {type(raw).__name__}")
    number = raw.get("id")
    if not isinstance(number, int | str) or isinstance(number, bool) or number == "":
        raise ValueError("id is missing")
    sent_at, exact = _time(raw, "date_unixtime", "date")
    service = raw.get("type") == "service"
    text, mentions, usernames = _render(raw.get("text"), notes)
    metadata: dict[str, Any] = {"message_id": number}
    if service:
        sender = _peer_ref(raw.get("actor_id")) or "system"
        sender_name = _string(raw.get("actor"))
        text = _service_text(raw, text)
        kind = "system"
    else:
        sender, sender_name = _sender(raw, chat, metadata)
        kind, placeholder = _media(raw)
        lines = [line for line in (placeholder, *_extras(raw), text) if line]
        text = "\n".join(lines)
    if not exact:
        metadata["time_zone_unknown"] = True
    if usernames:
        metadata["mentioned_usernames"] = usernames
    for key in ("forwarded_from", "via_bot", "action"):
        if _string(raw.get(key)):
            metadata[key] = raw[key]
    edited_at = None
    if raw.get("edited_unixtime") is not None or raw.get("edited") is not None:
        try:
            edited_at, _ = _time(raw, "edited_unixtime", "edited")
        except ValueError as error:
            notes.append(f"edit time: {error}; left out")
        if edited_at is not None and edited_at < sent_at:
            # Old exports wrote the epoch ("1970-01-01T03:00:00") on every message never edited.
            edited_at = None
    reply = raw.get("reply_to_message_id")
    reply_to = None
    if isinstance(reply, int | str) and not isinstance(reply, bool) and reply != "":
        reply_to = f"{chat.ref}:{reply}"
    elif reply is not None:
        notes.append(f"reply_to_message_id is {type(reply).__name__}; left out")
    return Message(
        id=f"{chat.ref}:{number}",
        conversation=chat.ref,
        sender=sender,
        sender_name=sender_name,
        sent_at=sent_at,
        text=text,
        kind=kind or "text",
        role="system" if service else "member",
        reply_to=reply_to,
        mentions=() if service else tuple(mentions),
        edited_at=edited_at,
        metadata=metadata,
    )


def _link(messages: dict[str, Message]) -> None:
    """Forum topics become platform threads; replies to messages outside the export are flagged."""
    topics = {mid for mid, message in messages.items() if message.metadata.get("action") == "topic_created"}
    for message_id, message in list(messages.items()):
        if message.reply_to in topics:
            topic = str(messages[message.reply_to].metadata["message_id"])
            messages[message_id] = dataclasses.replace(message, reply_to=None, platform_thread=topic)
        elif message.reply_to and message.reply_to not in messages:
            messages[message_id] = dataclasses.replace(message, metadata={**message.metadata, "reply_to_missing": True})


def read(path: Path) -> ReadResult:
    result = ReadResult(format=NAME)
    file_path = path / "result.json" if path.is_dir() else path
    file = str(file_path)
    if not file_path.is_file():
        result.skipped.append(Skip(file, None, "no such file (a Telegram export has result.json)"))
        return result
    if not confined(path, [file_path], result.skipped):
        return result
    data = _load(file_path, result.skipped)
    if data is None:
        return result
    seen_chats: set[str] = set()
    for raw_chat in _chats(data, file, result.skipped):
        chat = _chat(raw_chat)
        if chat.ref in seen_chats:
            # A chat left and re-joined can be listed twice; the first listing is the current one.
            result.ignore("telegram duplicate chat listing")
            continue
        seen_chats.add(chat.ref)
        messages: dict[str, Message] = {}
        for index, raw in enumerate(raw_chat["messages"]):
            notes: list[str] = []
            where = f"chat {chat.ref} message {index}"
            try:
                message = _parse_message(raw, chat, notes)
            except ValueError as error:
                result.skipped.append(Skip(file, None, f"{where}: {error}"))
                continue
            result.skipped.extend(Skip(file, None, f"{where}: {note}") for note in notes)
            if message.id in messages:
                result.skipped.append(Skip(file, None, f"{where}: duplicate id {message.id}"))
                continue
            messages[message.id] = message
        _link(messages)
        result.conversations.append(chat.conversation)
        result.messages.extend(messages.values())
    result.messages.sort(key=lambda message: message.sent_at)
    return result
