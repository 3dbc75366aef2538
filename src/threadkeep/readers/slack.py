"""Slack workspace export: `users.json`, `channels.json` and one folder per channel of `YYYY-MM-DD.json` days.

The reader takes the export root (or one channel folder, or one day file), and reads
nothing outside what it was given: a channel folder or day file alone is read
without the root's `users.json` / `channels.json` (ids stand in for names and the
folder name for the channel id), and symlinks leading out are not followed. Day files
are cut at midnight in the exporting workspace's time zone, so the file name is
never trusted for time: `ts` (epoch seconds, UTC) is. Thread replies can sit in a
later day's file than their parent, so threads are linked only after every day
of a channel has been read.

Decisions:
- conversation ref = the channel id from `channels.json` / `groups.json` /
  `mpims.json` / `dms.json` (stable across renames and re-exports), else the
  folder name; message id = `<conversation ref>:<ts>`.
- `platform_thread` = the parent's `thread_ts` on every reply and on the parent
  itself; replies also get `reply_to` = the parent's message id. When the parent
  is not in the export the link is kept (ids are stable) and flagged with
  `metadata["reply_to_missing"] = True`.
- bot posts (`subtype: bot_message`, or any message with a `bot_id` or
  `bot_profile`, which apps' posts carry next to their bot user's `user`) and
  every channel event subtype (joins, topic, pins...) become system lines; bot
  posts are marked `metadata["bot"] = True`.
- a `file_comment` (exports before 2019) is its commenter talking: the author is
  `comment.user` and the text `comment.comment`; the file commented on is named
  in `metadata["commented_file"]`.
"""

from __future__ import annotations

import dataclasses
import re
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from threadkeep.model import Conversation, Message, ReadResult, Skip
from threadkeep.readers._io import inside, json_array_items, load_json, read_text_or_skip, skip_space

NAME = "slack"

DAY_FILE = re.compile(r"^\d{4}-\d{2}-\d{2}\.json$")
# Files a workspace export has at its root; any one of them plus day folders marks an export.
ROOT_FILES = ("channels.json", "users.json", "groups.json", "dms.json", "mpims.json")
# Subtypes that are still a person talking; every other subtype is a platform event.
MEMBER_SUBTYPES = frozenset({"thread_broadcast", "me_message", "file_share", "file_comment", "reply_broadcast"})
RECALLED_SUBTYPES = frozenset({"tombstone"})
TOKEN = re.compile(r"<([^<>\n]+)>")


def _is_day_folder(folder: Path) -> bool:
    try:
        return any(DAY_FILE.match(child.name) and child.is_file() for child in folder.iterdir())
    except OSError:
        return False


def _starts_with_array(path: Path) -> bool:
    try:
        with path.open("rb") as handle:
            head = handle.read(64)
    except OSError:
        return False
    return head.lstrip(b"\xef\xbb\xbf \t\r\n").startswith(b"[")


def _is_root(folder: Path) -> bool:
    if not any((folder / name).is_file() for name in ROOT_FILES):
        return False
    try:
        return any(child.is_dir() and _is_day_folder(child) for child in folder.iterdir())
    except OSError:
        return False


def detect(path: Path) -> bool:
    if path.is_file():
        # A lone day file: the name pattern plus a JSON array; Discord and Telegram files are objects.
        return bool(DAY_FILE.match(path.name)) and _starts_with_array(path)
    if not path.is_dir():
        return False
    if _is_root(path):
        return True
    # One channel folder taken out of an export: day files that hold arrays.
    days = sorted(child for child in path.iterdir() if DAY_FILE.match(child.name) and child.is_file())
    # A few files, not just the first: an empty or broken day must not hide the channel.
    return any(_starts_with_array(day) for day in days[:5])


@dataclasses.dataclass(frozen=True, slots=True)
class _Channel:
    ref: str
    name: str
    kind: str  # "group" | "direct"
    list_name: str  # which root file named it ("" when none did)
    raw: dict[str, Any]


@dataclasses.dataclass(slots=True)
class _Workspace:
    users: dict[str, str]  # user id -> display name
    channels: dict[str, _Channel]  # folder name -> channel
    channel_names: dict[str, str]  # channel id -> name, for `<#C123>` links


def _user_name(raw: dict[str, Any]) -> str:
    profile = raw.get("profile") if isinstance(raw.get("profile"), dict) else {}
    for value in (profile.get("display_name"), profile.get("real_name"), raw.get("real_name"), raw.get("name")):
        if isinstance(value, str) and value.strip():
            return value.strip()
    return ""


def _load_list(path: Path, skipped: list[Skip]) -> list[dict[str, Any]]:
    if not path.is_file():
        return []
    if not inside(path.parent, path):
        skipped.append(Skip(str(path), None, "symlink to outside the export; not followed"))
        return []
    data, problems = load_json(path)
    skipped.extend(problems)
    if data is None:
        return []
    if not isinstance(data, list):
        skipped.append(Skip(str(path), None, f"expected a JSON array, got {type(data).__name__}"))
        return []
    items = []
    for index, item in enumerate(data):
        if isinstance(item, dict) and isinstance(item.get("id"), str):
            items.append(item)
        else:
            skipped.append(Skip(str(path), None, f"entry {index}: needs an object with a string id"))
    return items


def _load_workspace(root: Path, skipped: list[Skip]) -> _Workspace:
    users = {}
    for raw in _load_list(root / "users.json", skipped):
        name = _user_name(raw)
        if name:
            users[raw["id"]] = name
    channels: dict[str, _Channel] = {}
    channel_names: dict[str, str] = {}
    for list_name, kind in (
        ("channels.json", "group"),
        ("groups.json", "group"),
        ("mpims.json", "group"),
        ("dms.json", "direct"),
    ):
        for raw in _load_list(root / list_name, skipped):
            name = raw.get("name") if isinstance(raw.get("name"), str) and raw.get("name") else ""
            # DM folders are named by id (DMs have no name); the others by name.
            folder = name or raw["id"]
            channels[folder] = _Channel(raw["id"], name, kind, list_name, raw)
            if name:
                channel_names[raw["id"]] = name
    return _Workspace(users, channels, channel_names)


def _render(text: str, workspace: _Workspace) -> tuple[str, list[str]]:
    """Slack mrkdwn to plain text: `<@U1>` -> `@Name`, `<url|label>` -> `label (url)`; returns mentioned ids."""
    mentions: list[str] = []

    def token(match: re.Match[str]) -> str:
        body = match.group(1)
        target, _, label = body.partition("|")
        if target.startswith("@"):
            user = target[1:]
            if user not in mentions:
                mentions.append(user)
            name = workspace.users.get(user) or label.lstrip("@") or user
            return f"@{name}"
        if target.startswith("#"):
            return f"#{label or workspace.channel_names.get(target[1:], target[1:])}"
        if target.startswith("!"):
            special = target[1:].split("^")[0]
            if special in ("here", "channel", "everyone"):
                return f"@{special}"
            # <!subteam^S1|@team> and <!date^...|fallback> carry their own rendering.
            return label or f"@{special}"
        url = target
        shown = url.removeprefix("mailto:")
        if label and label not in (url, shown):
            return f"{label} ({url})"
        return shown

    rendered = TOKEN.sub(token, text)
    # Slack escapes only these three; a full html.unescape would eat text like "&copy" people typed.
    rendered = rendered.replace("&lt;", "<").replace("&gt;", ">").replace("&amp;", "&")
    return rendered, mentions


def _file_kind(raw: dict[str, Any]) -> str:
    mime = raw.get("mimetype") if isinstance(raw.get("mimetype"), str) else ""
    if mime.startswith("image/"):
        return "image"
    if mime.startswith("video/"):
        return "video"
    if mime.startswith("audio/") or raw.get("subtype") == "slack_audio":
        return "voice"
    return "file"


def _files(raw: Any, where: str, skipped: list[Skip], file: str, line: int) -> tuple[str, list[str]]:
    """Placeholders for attached files; returns (kind of the first file, placeholder lines)."""
    if raw is None:
        return "", []
    if not isinstance(raw, list):
        skipped.append(Skip(file, line, f"{where}: files is {type(raw).__name__}, not a list; files left out"))
        return "", []
    kind = ""
    lines = []
    for item in raw:
        if not isinstance(item, dict):
            skipped.append(Skip(file, line, f"{where}: a file entry is {type(item).__name__}; left out"))
            continue
        this_kind = _file_kind(item)
        kind = kind or this_kind
        name = next((item[key] for key in ("name", "title") if isinstance(item.get(key), str) and item[key]), "")
        if item.get("mode") in ("tombstone", "hidden_by_limit") and not name:
            name = "(file no longer available)"
        lines.append(f"[{this_kind}] {name}".rstrip())
    return kind, lines


def _parse_ts(value: Any) -> datetime:
    if value is None:
        raise ValueError("ts is missing")
    if isinstance(value, bool) or not isinstance(value, str | int | float):
        raise ValueError(f"ts is {type(value).__name__}, expected a string of epoch seconds")
    try:
        seconds = float(value)
    except ValueError:
        raise ValueError(f"ts {value!r} is not epoch seconds") from None
    if seconds != seconds or abs(seconds) > 1e11:  # NaN or absurd
        raise ValueError(f"ts {value!r} is out of range")
    return datetime.fromtimestamp(seconds, tz=UTC)


def _parse_message(
    raw: Any, channel: _Channel, workspace: _Workspace, file: str, line: int, skipped: list[Skip]
) -> Message:
    if not isinstance(raw, dict):
        raise ValueError(f"expected an object, got {type(raw).__name__}")
    ts = raw.get("ts")
    sent_at = _parse_ts(ts)
    ts = str(ts)
    where = f"message ts {ts}"
    subtype = raw.get("subtype")
    if subtype is not None and not isinstance(subtype, str):
        raise ValueError(f"subtype is {type(subtype).__name__}, expected a string")
    text = raw.get("text")
    if text is None:
        text = ""
    if not isinstance(text, str):
        raise ValueError(f"text is {type(text).__name__}, expected a string")
    user = raw.get("user") if isinstance(raw.get("user"), str) and raw.get("user") else ""
    comment = raw.get("comment") if isinstance(raw.get("comment"), dict) else {}
    commented_file = ""
    if subtype == "file_comment" and comment:
        if isinstance(comment.get("user"), str) and comment["user"]:
            user = comment["user"]
        if isinstance(comment.get("comment"), str):
            text = comment["comment"]
        commented = raw.get("file") if isinstance(raw.get("file"), dict) else {}
        commented_file = next(
            (commented[key] for key in ("name", "title") if isinstance(commented.get(key), str) and commented[key]), ""
        )
    bot_id = raw.get("bot_id") if isinstance(raw.get("bot_id"), str) else ""
    is_bot = subtype == "bot_message" or bool(bot_id) or isinstance(raw.get("bot_profile"), dict)
    system = is_bot or (subtype is not None and subtype not in MEMBER_SUBTYPES | RECALLED_SUBTYPES)
    sender = user or bot_id or (raw.get("username") if isinstance(raw.get("username"), str) else "")
    if not sender:
        if not system:
            raise ValueError("no user")
        sender = "system"
    profile = raw.get("user_profile") if isinstance(raw.get("user_profile"), dict) else {}
    bot_profile = raw.get("bot_profile") if isinstance(raw.get("bot_profile"), dict) else {}
    sender_name = workspace.users.get(sender) or next(
        (
            value
            for value in (
                profile.get("display_name"),
                profile.get("real_name"),
                raw.get("username"),
                bot_profile.get("name"),
            )
            if isinstance(value, str) and value.strip()
        ),
        "",
    )
    body, mentions = _render(text, workspace)
    if is_bot and not body:
        attachments = raw.get("attachments") if isinstance(raw.get("attachments"), list) else []
        body = "\n".join(
            item["fallback"] for item in attachments if isinstance(item, dict) and isinstance(item.get("fallback"), str)
        )
    files = raw.get("files")
    if files is None and subtype == "file_share" and isinstance(raw.get("file"), dict):
        files = [raw["file"]]  # exports before 2019 held one `file`
    kind, placeholders = _files(files, where, skipped, file, line)
    if placeholders:
        body = "\n".join([*placeholders, body]) if body else "\n".join(placeholders)
    edited = raw.get("edited")
    edited_at = None
    if isinstance(edited, dict) and edited.get("ts") is not None:
        try:
            edited_at = _parse_ts(edited["ts"])
        except ValueError as error:
            skipped.append(Skip(file, line, f"{where}: edited.{error}; edit time left out"))
    thread_ts = raw.get("thread_ts")
    if thread_ts is not None and not isinstance(thread_ts, str):
        skipped.append(Skip(file, line, f"{where}: thread_ts is {type(thread_ts).__name__}; thread left out"))
        thread_ts = None
    reply_count = raw.get("reply_count")
    has_replies = (isinstance(reply_count, int) and reply_count > 0) or bool(raw.get("replies"))
    platform_thread = None
    reply_to = None
    if thread_ts and thread_ts != ts:
        platform_thread = thread_ts
        reply_to = f"{channel.ref}:{thread_ts}"
    elif thread_ts and has_replies:
        platform_thread = thread_ts
    metadata: dict[str, Any] = {"ts": ts}
    if subtype:
        metadata["subtype"] = subtype
    if is_bot:
        metadata["bot"] = True
    if commented_file:
        metadata["commented_file"] = commented_file
    if not system and raw.get("reactions"):
        metadata["reactions"] = raw["reactions"]
    return Message(
        id=f"{channel.ref}:{ts}",
        conversation=channel.ref,
        sender=sender,
        sender_name=sender_name,
        sent_at=sent_at,
        text=body,
        kind="system" if system else (kind or "text"),
        role="system" if system else "member",
        reply_to=reply_to,
        # A join line names the joiner; that is not anyone being addressed.
        mentions=() if system else tuple(mentions),
        recalled=subtype in RECALLED_SUBTYPES,
        edited_at=edited_at,
        platform_thread=platform_thread,
        metadata=metadata,
    )


def _read_day(path: Path, channel: _Channel, workspace: _Workspace, result: ReadResult) -> list[Message]:
    text = read_text_or_skip(path, result.skipped)
    if text is None:
        return []
    file = str(path)
    text = text.lstrip("\ufeff")
    opening = skip_space(text, 0)
    if opening >= len(text):
        result.skipped.append(Skip(file, None, "file is empty"))
        return []
    if text[opening] != "[":
        result.skipped.append(Skip(file, 1, "expected a JSON array of messages"))
        return []
    messages = []
    for index, item in enumerate(json_array_items(text, opening, file)):
        if isinstance(item, Skip):
            result.skipped.append(item)
            continue
        line, raw = item
        if isinstance(raw, dict) and raw.get("hidden") is True:
            # Hidden records are edit/delete bookkeeping, never shown in the channel.
            result.ignore("slack hidden event")
            continue
        try:
            messages.append(_parse_message(raw, channel, workspace, file, line, result.skipped))
        except ValueError as error:
            result.skipped.append(Skip(file, line, f"message {index}: {error}"))
    return messages


def _link_threads(messages: list[Message]) -> list[Message]:
    """Give parents their thread and flag replies whose parent the export does not hold."""
    by_id = {message.id: message for message in messages}
    parents = {message.reply_to for message in messages if message.platform_thread and message.reply_to}
    linked = []
    for message in messages:
        if message.id in parents and message.platform_thread is None:
            message = dataclasses.replace(message, platform_thread=message.metadata["ts"])
        if message.reply_to and message.reply_to not in by_id:
            message = dataclasses.replace(message, metadata={**message.metadata, "reply_to_missing": True})
        linked.append(message)
    return linked


def _channel_title(channel: _Channel, workspace: _Workspace) -> str:
    if channel.kind == "direct":
        members = channel.raw.get("members") if isinstance(channel.raw.get("members"), list) else []
        names = [workspace.users.get(member, member) for member in members if isinstance(member, str)]
        return "DM: " + ", ".join(names) if names else channel.ref
    return f"#{channel.name}" if channel.name else channel.ref


def _conversation(channel: _Channel, workspace: _Workspace) -> Conversation:
    metadata: dict[str, Any] = {"channel_id": channel.ref}
    if channel.name:
        metadata["channel_name"] = channel.name
    if channel.list_name:
        metadata["listed_in"] = channel.list_name
    for key in ("topic", "purpose"):
        value = channel.raw.get(key)
        if isinstance(value, dict) and isinstance(value.get("value"), str) and value["value"]:
            metadata[key] = value["value"]
    return Conversation(channel.ref, _channel_title(channel, workspace), channel.kind, NAME, metadata)


def read(path: Path) -> ReadResult:
    result = ReadResult(format=NAME)
    if path.is_file():
        folders = [path.parent]
        only_file: Path | None = path
        root: Path | None = None
    elif _is_root(path):
        root = path
        folders = []
        for child in sorted(path.iterdir()):
            if not (child.is_dir() and _is_day_folder(child)):
                continue
            if inside(path, child):
                folders.append(child)
            else:
                result.skipped.append(Skip(str(child), None, "symlink to outside the export; not followed"))
        only_file = None
    else:
        root = None
        folders = [path] if path.is_dir() and _is_day_folder(path) else []
        only_file = None
    # Only the export root's own lists name users and channels: never look above the path given.
    workspace = _load_workspace(root, result.skipped) if root is not None else _Workspace({}, {}, {})
    for folder in folders:
        channel = workspace.channels.get(folder.name) or _Channel(folder.name, folder.name, "group", "", {})
        days = [only_file] if only_file else []
        for child in [] if only_file else sorted(folder.iterdir()):
            if not (child.is_file() and DAY_FILE.match(child.name)):
                continue
            if inside(path, child):
                days.append(child)
            else:
                result.skipped.append(Skip(str(child), None, "symlink to outside the export; not followed"))
        messages: list[Message] = []
        seen: set[str] = set()
        for day in days:
            for message in _read_day(day, channel, workspace, result):
                if message.id in seen:
                    result.skipped.append(Skip(str(day), None, f"duplicate message ts {message.metadata['ts']}"))
                    continue
                seen.add(message.id)
                messages.append(message)
        if not messages:
            continue
        messages.sort(key=lambda message: message.sent_at)
        result.messages.extend(_link_threads(messages))
        result.conversations.append(_conversation(channel, workspace))
    if not folders:
        result.skipped.append(Skip(str(path), None, "no Slack day files (YYYY-MM-DD.json) found"))
    result.messages.sort(key=lambda message: message.sent_at)
    return result
