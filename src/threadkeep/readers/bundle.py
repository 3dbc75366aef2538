"""The group-chat export bundle (`shared/spec/export-bundle.md`, version 1)."""

from __future__ import annotations

from datetime import datetime
from pathlib import Path
from typing import Any

from threadkeep.model import CONVERSATION_KINDS, MESSAGE_KINDS, Conversation, Message, ReadResult, Skip
from threadkeep.readers._io import iter_json_lines, parse_time

NAME = "bundle"
KNOWN_FIELDS = frozenset(
    {
        "messageId",
        "conversationRef",
        "senderRef",
        "sentAt",
        "type",
        "text",
        "quotedMessageId",
        "mentionedRefs",
        "recalled",
        "editedAt",
    }
)


def bundle_dir(path: Path) -> Path:
    return path.parent if path.is_file() else path


def detect(path: Path) -> bool:
    folder = bundle_dir(path)
    return (folder / "messages.jsonl").is_file() and (path.is_dir() or path.name == "messages.jsonl")


def _time(raw: dict[str, Any], key: str) -> datetime:
    try:
        return parse_time(raw[key])
    except ValueError as error:
        raise ValueError(f"{key}: {error}") from error


def parse_message(raw: Any, names: dict[str, str]) -> Message:
    """Validate one message object; raise ValueError naming what is wrong."""
    if not isinstance(raw, dict):
        raise ValueError(f"expected a JSON object, got {type(raw).__name__}")
    for key in ("messageId", "conversationRef", "senderRef"):
        value = raw.get(key)
        if not isinstance(value, str) or not value:
            raise ValueError(f"{key} must be a non-empty string")
    if "sentAt" not in raw:
        raise ValueError("sentAt is missing")
    sent_at = _time(raw, "sentAt")
    kind = raw.get("type") or "text"
    if not isinstance(kind, str) or kind not in MESSAGE_KINDS:
        raise ValueError(f"type: unknown type {kind!r}")
    text = raw.get("text") or ""
    if not isinstance(text, str):
        raise ValueError("text must be a string")
    quoted = raw.get("quotedMessageId")
    if quoted is not None and not isinstance(quoted, str):
        raise ValueError("quotedMessageId must be a string or null")
    mentions = raw.get("mentionedRefs") or []
    if not isinstance(mentions, list) or not all(isinstance(ref, str) for ref in mentions):
        raise ValueError("mentionedRefs must be a list of strings")
    recalled = raw.get("recalled", False)
    if not isinstance(recalled, bool):
        raise ValueError("recalled must be true or false")
    edited_at = _time(raw, "editedAt") if raw.get("editedAt") else None
    sender = raw["senderRef"]
    system = kind == "system" or sender == "system"
    return Message(
        id=raw["messageId"],
        conversation=raw["conversationRef"],
        sender=sender,
        sender_name=names.get(sender, ""),
        sent_at=sent_at,
        text=text,
        kind="system" if system else kind,
        role="system" if system else "member",
        reply_to=quoted or None,
        mentions=tuple(mentions),
        recalled=recalled,
        edited_at=edited_at,
        metadata={key: value for key, value in raw.items() if key not in KNOWN_FIELDS},
    )


def read_members(folder: Path, skipped: list[Skip]) -> dict[str, str]:
    names: dict[str, str] = {}
    path = folder / "members.jsonl"
    if not path.is_file():
        return names
    for item in iter_json_lines(path):
        if isinstance(item, Skip):
            skipped.append(item)
            continue
        number, raw = item
        if isinstance(raw, dict) and isinstance(raw.get("senderRef"), str):
            names[raw["senderRef"]] = str(raw.get("displayName") or "")
        else:
            skipped.append(Skip(str(path), number, "member needs a senderRef string"))
    return names


def _read_conversations(folder: Path, skipped: list[Skip]) -> dict[str, Conversation]:
    conversations: dict[str, Conversation] = {}
    path = folder / "conversations.jsonl"
    if not path.is_file():
        return conversations
    for item in iter_json_lines(path):
        if isinstance(item, Skip):
            skipped.append(item)
            continue
        number, raw = item
        if not isinstance(raw, dict) or not isinstance(raw.get("conversationRef"), str):
            skipped.append(Skip(str(path), number, "conversation needs a conversationRef string"))
            continue
        kind = raw.get("kind") or "group"
        if not isinstance(kind, str) or kind not in CONVERSATION_KINDS:
            skipped.append(Skip(str(path), number, f"unknown kind {kind!r}; read as 'group'"))
            kind = "group"
        ref = raw["conversationRef"]
        extra = {k: v for k, v in raw.items() if k not in {"conversationRef", "title", "kind"}}
        conversations[ref] = Conversation(ref, str(raw.get("title") or ref), kind, NAME, extra)
    return conversations


def read(path: Path) -> ReadResult:
    folder = bundle_dir(path)
    result = ReadResult(format=NAME)
    names = read_members(folder, result.skipped)
    conversations = _read_conversations(folder, result.skipped)
    messages_path = folder / "messages.jsonl"
    seen: set[tuple[str, str]] = set()
    for item in iter_json_lines(messages_path):
        if isinstance(item, Skip):
            result.skipped.append(item)
            continue
        number, raw = item
        try:
            message = parse_message(raw, names)
        except ValueError as error:
            result.skipped.append(Skip(str(messages_path), number, str(error)))
            continue
        key = (message.conversation, message.id)
        if key in seen:
            result.skipped.append(Skip(str(messages_path), number, f"duplicate messageId {message.id!r}"))
            continue
        seen.add(key)
        result.messages.append(message)
        if message.conversation not in conversations:
            conversations[message.conversation] = Conversation(
                message.conversation, message.conversation, "group", NAME
            )
    # Sort by time, then file order (the spec's rule); sorted() is stable.
    result.messages.sort(key=lambda message: message.sent_at)
    result.conversations = list(conversations.values())
    return result
