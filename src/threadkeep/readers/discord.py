"""DiscordChatExporter JSON: one file per channel (`guild`, `channel`, `messages`), or a folder of them.

Decisions:
- conversation ref = the channel id; message id = Discord's message id (a
  snowflake, unique across Discord and stable across re-exports).
- Threads (channel type `Guild*Thread`) are exported as their own files, with
  `channel.categoryId` holding the parent channel (DCE's schema predates threads
  and reuses the category fields for the parent). Their messages join the parent
  channel's conversation with `platform_thread` = the thread id, so a thread reads
  in context with the channel it branched from. The message a thread was started
  from has the thread's id, and gets the same `platform_thread` when it is read.
- `reference.messageId` -> `reply_to`; a reply whose target is not in what was read
  keeps the id and is flagged `metadata["reply_to_missing"] = True`.
- Message types other than Default / Reply / slash commands (joins, pins, renames,
  calls, "thread created"...) and messages by bots become system lines.
- A file whose JSON breaks part-way keeps the messages before the break.
"""

from __future__ import annotations

import dataclasses
import json
import re
from itertools import islice
from pathlib import Path, PurePosixPath
from typing import Any

from threadkeep.model import Conversation, Message, ReadResult, Skip
from threadkeep.readers._io import confined, json_array_items, loads, parse_time, read_filled_text, too_deep

NAME = "discord"

# By name, and by Discord's numbers in case an export wrote the raw enum (0, 19, 20, 23).
MEMBER_TYPES = frozenset({"Default", "Reply", "ChatInputCommand", "ContextMenuCommand", "0", "19", "20", "23"})
THREAD_CHANNEL_TYPES = frozenset({"GuildNewsThread", "GuildPublicThread", "GuildPrivateThread"})
DIRECT_CHANNEL_TYPES = frozenset({"DirectTextChat"})
IMAGE_EXTENSIONS = frozenset({".png", ".jpg", ".jpeg", ".gif", ".webp", ".bmp", ".heic", ".avif"})
VIDEO_EXTENSIONS = frozenset({".mp4", ".mov", ".webm", ".mkv", ".avi", ".m4v"})
VOICE_EXTENSIONS = frozenset({".ogg", ".opus", ".mp3", ".m4a", ".wav", ".aac", ".flac"})
# Raw mention markup, present when the export was made with markdown formatting off.
RAW_MENTION = re.compile(r"<@!?(\d+)>|<@&(\d+)>|<#(\d+)>")
MESSAGES_KEY = re.compile(r'"messages"\s*:\s*\[')
HEAD_BYTES = 256
MAX_DETECT_FILES = 200


def _head(path: Path) -> bytes:
    try:
        with path.open("rb") as handle:
            return handle.read(HEAD_BYTES)
    except OSError:
        return b""


def _is_channel_file(path: Path) -> bool:
    head = _head(path).lstrip(b"\xef\xbb\xbf \t\r\n")
    # DCE always writes "guild" as the first key; Telegram and Slack files never do.
    return head.startswith(b"{") and re.match(rb'\{\s*"guild"\s*:', head) is not None


def _channel_files(folder: Path) -> list[Path]:
    return sorted(path for path in folder.rglob("*.json") if path.is_file() and _is_channel_file(path))


def detect(path: Path) -> bool:
    if path.is_file():
        return path.suffix.lower() == ".json" and _is_channel_file(path)
    if path.is_dir():
        try:
            candidates = islice(path.rglob("*.json"), MAX_DETECT_FILES)
            return any(_is_channel_file(child) for child in candidates if child.is_file())
        except OSError:
            return False
    return False


def _load(path: Path, skipped: list[Skip]) -> tuple[dict[str, Any] | None, list[tuple[int | None, Any]]]:
    """Parse a channel file into its header and (line, raw message) pairs, salvaging a broken tail."""
    file = str(path)
    text = read_filled_text(path, skipped)
    if text is None:
        return None, []
    text = text.lstrip("\ufeff")
    try:
        try:
            data = loads(text)
        except json.JSONDecodeError as error:
            return _salvage(text, file, error, skipped)
    except RecursionError:
        # Also from the salvage parse, which runs a few frames deeper than the first.
        skipped.append(too_deep(text, file))
        return None, []
    if not isinstance(data, dict):
        skipped.append(Skip(file, 1, f"expected a JSON object, got {type(data).__name__}"))
        return None, []
    messages = data.get("messages")
    if not isinstance(messages, list):
        skipped.append(Skip(file, None, f"messages is {type(messages).__name__}, expected a list"))
        return data, []
    # Line numbers are only known when salvaging; whole-file parses report the message index.
    return data, [(None, raw) for raw in messages]


def _salvage(
    text: str, file: str, error: json.JSONDecodeError, skipped: list[Skip]
) -> tuple[dict[str, Any] | None, list[tuple[int | None, Any]]]:
    found = MESSAGES_KEY.search(text)
    header = None
    if found is not None:
        try:
            header = loads(text[: found.start()] + '"messages": []}')
        except json.JSONDecodeError:
            header = None
    if found is None or not isinstance(header, dict):
        skipped.append(Skip(file, error.lineno, f"not valid JSON ({error.msg} at column {error.colno})"))
        return None, []
    items: list[tuple[int | None, Any]] = []
    for item in json_array_items(text, found.end() - 1, file):
        if isinstance(item, Skip):
            skipped.append(item)
        else:
            items.append(item)
    return header, items


@dataclasses.dataclass(frozen=True, slots=True)
class _Channel:
    conversation: Conversation
    thread: str | None  # the thread id when this file is a thread


def _text(value: Any) -> str:
    return value if isinstance(value, str) else ""


def _channel(data: dict[str, Any], file: str, skipped: list[Skip]) -> _Channel | None:
    guild = data.get("guild") if isinstance(data.get("guild"), dict) else {}
    channel = data.get("channel")
    if not isinstance(channel, dict) or channel.get("id") in (None, ""):
        skipped.append(Skip(file, None, "channel.id is missing; file left out"))
        return None
    channel_id = str(channel["id"])
    kind = _text(channel.get("type"))
    metadata: dict[str, Any] = {"guild_id": str(guild.get("id", "")), "guild_name": _text(guild.get("name"))}
    if channel.get("topic"):
        metadata["topic"] = _text(channel.get("topic"))
    parent = channel.get("categoryId")
    if kind in THREAD_CHANNEL_TYPES and parent not in (None, ""):
        metadata["channel_name"] = _text(channel.get("category"))
        title = f"#{metadata['channel_name']}" if metadata["channel_name"] else str(parent)
        return _Channel(Conversation(str(parent), title, "group", NAME, metadata), channel_id)
    name = _text(channel.get("name"))
    metadata["channel_name"] = name
    metadata["channel_type"] = kind
    if channel.get("category"):
        metadata["category"] = _text(channel.get("category"))
    direct = kind in DIRECT_CHANNEL_TYPES
    title = name if direct or not name else f"#{name}"
    conversation = Conversation(channel_id, title or channel_id, "direct" if direct else "group", NAME, metadata)
    return _Channel(conversation, None)


def _attachment_kind(file_name: str) -> str:
    suffix = PurePosixPath(file_name.lower()).suffix
    if suffix in IMAGE_EXTENSIONS:
        return "image"
    if suffix in VIDEO_EXTENSIONS:
        return "video"
    if suffix in VOICE_EXTENSIONS:
        return "voice"
    return "file"


def _person(raw: Any) -> tuple[str, str] | None:
    if not isinstance(raw, dict) or raw.get("id") in (None, ""):
        return None
    name = _text(raw.get("nickname")) or _text(raw.get("name"))
    return str(raw["id"]), name


def _list(raw: dict[str, Any], key: str, notes: list[str]) -> list[Any]:
    value = raw.get(key)
    if value is None:
        return []
    if not isinstance(value, list):
        notes.append(f"{key} is {type(value).__name__}, not a list; left out")
        return []
    return value


def _parse_message(raw: Any, channel: _Channel, notes: list[str]) -> Message:
    """One message; raises ValueError when it is unusable, adds to `notes` what it had to leave out."""
    if not isinstance(raw, dict):
        raise ValueError(f"expected an object, got {type(raw).__name__}")
    if raw.get("id") in (None, "") or isinstance(raw.get("id"), bool | dict | list):
        raise ValueError("id is missing")
    message_id = str(raw["id"])
    sent_at = parse_time(raw.get("timestamp"))
    content = raw.get("content")
    if content is None:
        content = ""
    if not isinstance(content, str):
        raise ValueError(f"content is {type(content).__name__}, expected a string")
    author = _person(raw.get("author"))
    if author is None:
        raise ValueError("author.id is missing")
    sender, sender_name = author
    message_type = raw.get("type") if raw.get("type") is not None else "Default"
    is_bot = isinstance(raw.get("author"), dict) and raw["author"].get("isBot") is True
    system = str(message_type) not in MEMBER_TYPES or is_bot
    people = {}
    for mentioned in _list(raw, "mentions", notes):
        person = _person(mentioned)
        if person is not None:
            people[person[0]] = person[1]

    def unraw(match: re.Match[str]) -> str:
        user, role, channel_ref = match.groups()
        if user:
            people.setdefault(user, "")
            return f"@{people[user] or user}"
        return f"@{role}" if role else f"#{channel_ref}"

    text = RAW_MENTION.sub(unraw, content)
    placeholders = []
    kind = ""
    for attachment in _list(raw, "attachments", notes):
        if not isinstance(attachment, dict):
            notes.append(f"an attachment is {type(attachment).__name__}; left out")
            continue
        name = _text(attachment.get("fileName")) or PurePosixPath(_text(attachment.get("url"))).name
        this_kind = _attachment_kind(name)
        kind = kind or this_kind
        placeholders.append(f"[{this_kind}] {name}".rstrip())
    for sticker in _list(raw, "stickers", notes):
        if isinstance(sticker, dict):
            kind = kind or "image"
            placeholders.append(f"[image] sticker {_text(sticker.get('name'))}".rstrip())
    if not text and not placeholders:
        # Bot posts often carry everything in an embed.
        for embed in _list(raw, "embeds", notes):
            if isinstance(embed, dict):
                text = "\n".join(part for part in (_text(embed.get("title")), _text(embed.get("description"))) if part)
                if text:
                    break
    if placeholders:
        text = "\n".join([*placeholders, text]) if text else "\n".join(placeholders)
    edited_at = None
    if raw.get("timestampEdited"):
        try:
            edited_at = parse_time(raw["timestampEdited"])
        except ValueError as error:
            notes.append(f"timestampEdited: {error}; left out")
    reference = raw.get("reference") if isinstance(raw.get("reference"), dict) else {}
    reply_to = None
    metadata: dict[str, Any] = {"type": str(message_type)}
    referenced = reference.get("messageId")
    if str(message_type) == "ThreadCreated" and reference.get("channelId"):
        metadata["thread_id"] = str(reference["channelId"])
    elif referenced not in (None, "") and not system:
        reply_to = str(referenced)
    elif referenced not in (None, ""):
        metadata["reference"] = str(referenced)
    if is_bot:
        metadata["bot"] = True
    if raw.get("isPinned") is True:
        metadata["pinned"] = True
    return Message(
        id=message_id,
        conversation=channel.conversation.ref,
        sender=sender,
        sender_name=sender_name,
        sent_at=sent_at,
        text=text,
        kind="system" if system else (kind or "text"),
        role="system" if system else "member",
        reply_to=reply_to,
        mentions=() if system else tuple(people),
        edited_at=edited_at,
        platform_thread=channel.thread,
        metadata=metadata,
    )


def read(path: Path) -> ReadResult:
    result = ReadResult(format=NAME)
    files = [path] if path.is_file() else confined(path, _channel_files(path), result.skipped) if path.is_dir() else []
    if not files:
        result.skipped.append(Skip(str(path), None, "no DiscordChatExporter JSON files found"))
    conversations: dict[str, Conversation] = {}
    messages: dict[str, Message] = {}
    for file in files:
        data, raws = _load(file, result.skipped)
        if data is None:
            continue
        channel = _channel(data, str(file), result.skipped)
        if channel is None:
            continue
        known = conversations.get(channel.conversation.ref)
        # A thread file only knows its parent's name; the parent's own file knows more.
        if known is None or (channel.thread is None and "channel_type" not in known.metadata):
            conversations[channel.conversation.ref] = channel.conversation
        for index, (line, raw) in enumerate(raws):
            notes: list[str] = []
            try:
                message = _parse_message(raw, channel, notes)
            except ValueError as error:
                result.skipped.append(Skip(str(file), line, f"message {index}: {error}"))
                continue
            result.skipped.extend(Skip(str(file), line, f"message {index}: {note}") for note in notes)
            if message.id in messages:
                result.skipped.append(Skip(str(file), line, f"message {index}: duplicate id {message.id}"))
                continue
            messages[message.id] = message
    threads = {message.platform_thread for message in messages.values() if message.platform_thread}
    for message_id, message in list(messages.items()):
        if message_id in threads and message.platform_thread is None and not message.is_system:
            messages[message_id] = message = dataclasses.replace(message, platform_thread=message_id)
        if message.reply_to and message.reply_to not in messages:
            messages[message_id] = dataclasses.replace(message, metadata={**message.metadata, "reply_to_missing": True})
    result.conversations = list(conversations.values())
    result.messages = sorted(messages.values(), key=lambda message: message.sent_at)
    return result
