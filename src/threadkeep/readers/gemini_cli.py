"""Gemini CLI chats: `~/.gemini/tmp/<project hash>/chats/session-*.jsonl` (and legacy `.json`).

Since 0.39 a session is a JSON Lines log, replayed as the CLI's own loader does:
line 1 is the metadata (`sessionId`, `projectHash`, `startTime`, `kind`...; no
`type`); each record with a string `id` is a message, and a repeated `id` replaces
the earlier one where it stood; `{"$set": {...}}` updates the metadata, and a
`$set.messages` list replaces the messages read so far; `{"$rewindTo": id}` removes
that message and everything after it (all of them when the id is unknown). Sub-agent
sessions (`chats/<parent session id>/<id>.jsonl`, `kind: "subagent"`) are a tool
call's inner work, which the CLI never lists: counted, not read.

A legacy session file is one JSON object (`sessionId`, `projectHash`, `startTime`,
`lastUpdated`, `messages`). Either way each message is typed `user`, `gemini`,
`info`, `error` or `warning`; a user message shows its `displayContent` when it has
one; a Gemini message may carry `toolCalls` and `thoughts`, and one that only called
tools is not a reply. A session in both shapes (the CLI copies a legacy file to
`.jsonl` when it resumes it) is read once, from the copy updated last. The older
`logs.json` beside `chats/` is a list of the user's prompts only (`sessionId`,
`messageId`, `type`, `message`, `timestamp`); prompts already in a session file are
not read twice.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from contextlib import suppress
from dataclasses import dataclass
from datetime import datetime
from itertools import islice
from pathlib import Path
from typing import Any

from threadkeep.model import Conversation, ReadResult, Skip
from threadkeep.readers._assistant import Draft, file_time, finish_drafts, tool_line
from threadkeep.readers._io import decode, head_lines, iter_json_lines, load_json, parse_time

NAME = "gemini_cli"
HEAD_BYTES = 64 * 1024
ASSISTANT_TYPES = frozenset({"gemini", "model", "assistant"})
NOTICE_TYPES = frozenset({"info", "error", "warning"})
TITLE_CHARS = 80
MAX_DIR_FILES_CHECKED = 20

_SESSION_ID = re.compile(r'"sessionId"\s*:')
_MESSAGES = re.compile(r'"messages"\s*:\s*\[')
_SESSION_KEYS = re.compile(r'"(?:projectHash|startTime|lastUpdated)"\s*:')
_LOG_KEYS = re.compile(r'"messageId"\s*:')


def _is_metadata(record: Any) -> bool:
    return (
        isinstance(record, dict)
        and isinstance(record.get("sessionId"), str)
        and isinstance(record.get("projectHash"), str)
        and "type" not in record
    )


def _is_log(path: Path) -> bool:
    """A JSON Lines session: its first record is the session's metadata."""
    for line in head_lines(path, HEAD_BYTES)[:3]:
        if not line.strip():
            continue
        try:
            return _is_metadata(json.loads(line.lstrip("\ufeff")))
        except (json.JSONDecodeError, RecursionError):
            return False
    return False


def _kind(path: Path) -> str | None:
    """Say "session" for a chat file, "log" for a JSON Lines chat, "logs" for a prompt log, else None."""
    if path.suffix.lower() == ".jsonl" and path.is_file():
        return "log" if _is_log(path) else None
    if path.suffix.lower() != ".json" or not path.is_file():
        return None
    try:
        with path.open("rb") as handle:
            head = decode(handle.read(HEAD_BYTES), str(path))[0].lstrip("\ufeff \t\r\n")
    except OSError:
        return None
    if not _SESSION_ID.search(head):
        return None
    session_like = bool(_SESSION_KEYS.search(head)) or path.name.startswith("session-")
    if head.startswith("{") and _MESSAGES.search(head) and session_like:
        return "session"
    if head.startswith("[") and _LOG_KEYS.search(head):
        return "logs"
    return None


def _candidates(folder: Path) -> Iterator[Path]:
    for path in folder.rglob("*.json*"):
        suffix = path.suffix.lower()
        named = path.name.startswith("session-")
        if (suffix == ".json" and (named or path.name == "logs.json")) or (
            suffix == ".jsonl" and (named or "chats" in path.parent.parts)
        ):
            yield path


def detect(path: Path) -> bool:
    if path.is_dir():
        try:
            candidates = list(islice(_candidates(path), MAX_DIR_FILES_CHECKED))
        except OSError:
            return False
        return any(_kind(candidate) for candidate in candidates)
    return _kind(path) is not None


def read(path: Path) -> ReadResult:
    result = ReadResult(format=NAME)
    if not path.is_dir():
        kind = _kind(path)
        if kind == "logs":
            _read_logs(path, result, set())
        elif kind == "log" or (kind is None and path.suffix.lower() == ".jsonl"):
            _emit(_replay(path, result), result)
        else:
            _emit(_load_session(path, result), result)
        return result
    files = sorted(_candidates(path))
    kinds = {file: _kind(file) for file in files}
    loaded = [
        _replay(file, result) if kinds[file] == "log" else _load_session(file, result)
        for file in files
        if kinds[file] in ("log", "session")
    ]
    latest: dict[str, _Session] = {}
    for session in (s for s in loaded if s is not None):
        # The CLI lists one session per id: the copy updated last.
        other = latest.get(session.ref)
        if other is None or session.updated_key > other.updated_key:
            latest[session.ref] = session
    sessions: set[str] = set()
    for session in (s for s in loaded if s is not None):
        if latest[session.ref] is session:
            sessions.update(_emit(session, result))
        else:
            result.ignore("older copy of a session")
    for file in files:
        if kinds[file] == "logs":
            _read_logs(file, result, sessions)
        elif kinds[file] is None:
            result.skipped.append(Skip(str(file), None, "not a Gemini CLI chat or log; left out"))
    return result


def _time(value: Any, where: str, file: str, line: int | None, result: ReadResult) -> datetime | None:
    if value is None:
        return None
    try:
        return parse_time(value, assume_utc=True)
    except (ValueError, TypeError, OverflowError, OSError) as error:
        result.skipped.append(Skip(file, line, f"{where}: bad timestamp ({error}); time taken from a neighbour"))
        return None


def _content(content: Any, draft: Draft, problems: list[str]) -> list[str]:
    """Text of a message's content: a string, a part, or a list of parts (`{"text": ...}`)."""
    if isinstance(content, str):
        return [content]
    if isinstance(content, dict):
        content = [content]
    if not isinstance(content, list):
        if content is not None:
            problems.append(f"content is {type(content).__name__}, not text or parts")
        return []
    texts: list[str] = []
    for part in content:
        if isinstance(part, str):
            texts.append(part)
        elif isinstance(part, dict):
            if isinstance(part.get("text"), str) and not part.get("thought"):
                texts.append(part["text"])
            elif isinstance(part.get("inlineData"), dict) or isinstance(part.get("fileData"), dict):
                data = part.get("inlineData") or part.get("fileData")
                mime = data.get("mimeType") if isinstance(data, dict) else None
                media = "image" if isinstance(mime, str) and mime.startswith("image/") else "file"
                draft.note_media(media)
                texts.append(f"[{media}]")
    return texts


def _has_id(record: Any) -> bool:
    return isinstance(record, dict) and isinstance(record.get("id"), str)


def _title(messages: list[Any], ref: str) -> str:
    first = next((m.text for m in messages if m.role == "user"), "")
    return first.strip().split("\n", 1)[0][:TITLE_CHARS] or ref


@dataclass(slots=True)
class _Session:
    """One session as its file leaves it: metadata and message records, each with its line when known."""

    path: Path
    metadata: dict[str, Any]
    records: list[tuple[int | None, Any]]

    @property
    def ref(self) -> str:
        own = self.metadata.get("sessionId")
        return own if isinstance(own, str) and own else self.path.stem

    @property
    def updated_key(self) -> tuple[str, bool]:
        updated = self.metadata.get("lastUpdated")
        return (updated if isinstance(updated, str) else "", self.path.suffix.lower() == ".jsonl")


def _load_session(path: Path, result: ReadResult) -> _Session | None:
    file = str(path)
    data, problems = load_json(path)
    result.skipped.extend(problems)
    if data is None:
        return None
    if not isinstance(data, dict):
        result.skipped.append(Skip(file, None, f"expected a session object, got {type(data).__name__}"))
        return None
    messages = data.get("messages")
    if not isinstance(messages, list):
        result.skipped.append(Skip(file, None, "messages is missing or not a list"))
        return None
    return _Session(path, data, [(None, message) for message in messages])


def _replay(path: Path, result: ReadResult) -> _Session | None:
    """The session a JSON Lines log describes once every record is applied in order."""
    file = str(path)
    metadata: dict[str, Any] = {}
    by_id: dict[str, tuple[int | None, Any]] = {}
    lines = 0
    try:
        for item in iter_json_lines(path):
            lines += 1
            if isinstance(item, Skip):
                result.skipped.append(item)
                continue
            number, record = item
            if not isinstance(record, dict):
                result.skipped.append(Skip(file, number, f"expected a JSON object, got {type(record).__name__}"))
            elif isinstance(record.get("$rewindTo"), str):
                ids = list(by_id)
                target = record["$rewindTo"]
                removed = ids[ids.index(target) :] if target in by_id else ids
                for message_id in removed:
                    del by_id[message_id]
                result.ignore("rewound message", len(removed))
            elif _has_id(record):
                by_id[record["id"]] = (number, record)
            elif isinstance(record.get("$set"), dict):
                update = record["$set"]
                metadata.update(update)
                if isinstance(update.get("messages"), list):
                    listed = update["messages"]
                    by_id = {m["id"]: (number, m) for m in listed if _has_id(m)}
                    loose = len(listed) - len(by_id)
                    if loose:
                        result.skipped.append(Skip(file, number, f"{loose} messages in $set have no id; left out"))
            elif _is_metadata(record):
                metadata.update(record)
            else:
                result.skipped.append(Skip(file, number, "record is not metadata, a message, $set or $rewindTo"))
    except RecursionError:
        result.skipped.append(Skip(file, None, "a line is nested too deeply to read; the rest of the file left out"))
    if not lines:
        result.skipped.append(Skip(file, None, "file is empty"))
        return None
    if not isinstance(metadata.get("sessionId"), str):
        result.skipped.append(Skip(file, None, "no session metadata (sessionId) in the file; messages read anyway"))
    metadata.pop("messages", None)
    return _Session(path, metadata, list(by_id.values()))


def _tool_output(call: dict[str, Any]) -> Any:
    """What a tool call returned: the function response's output, else what the CLI displayed."""
    parts = call.get("result")
    for part in parts if isinstance(parts, list) else []:
        response = part.get("functionResponse") if isinstance(part, dict) else None
        response = response.get("response") if isinstance(response, dict) else None
        if isinstance(response, dict):
            for key in ("output", "error"):
                if isinstance(response.get(key), str):
                    return response[key]
    display = call.get("resultDisplay")
    return display if isinstance(display, str) else None


def _emit(session: _Session | None, result: ReadResult) -> set[str]:
    if session is None:
        return set()
    path, data = session.path, session.metadata
    file = str(path)
    ref = session.ref
    if data.get("kind") == "subagent":
        result.ignore("subagent session")
        return set()
    drafts: list[Draft] = []
    last_time: datetime | None = None
    for index, (line, raw) in enumerate(session.records):
        where = f"message {index}" if line is None else "message"
        if not isinstance(raw, dict):
            result.skipped.append(Skip(file, line, f"{where} is {type(raw).__name__}, not an object; left out"))
            continue
        kind = raw.get("type")
        if not isinstance(kind, str):
            result.skipped.append(Skip(file, line, f"{where} has no type; left out"))
            continue
        if kind in NOTICE_TYPES or (kind != "user" and kind not in ASSISTANT_TYPES):
            result.ignore(f"{kind} message")
            with suppress(ValueError, TypeError, OverflowError, OSError):
                last_time = parse_time(raw.get("timestamp"), assume_utc=True)
            continue
        sent_at = _time(raw.get("timestamp"), where, file, line, result)
        borrowed = sent_at is None and last_time is not None
        # A message without a time was written right after the record before it.
        sent_at, last_time = sent_at or last_time, sent_at or last_time
        own_id = raw.get("id") if isinstance(raw.get("id"), str) else ""
        problems: list[str] = []
        draft = Draft(id=own_id, role="user" if kind == "user" else "assistant", sent_at=sent_at)
        if borrowed:
            draft.metadata["time_derived"] = "previous record"
        drafts.append(draft)
        content = raw.get("content")
        if kind == "user":
            shown = raw.get("displayContent")
            if _content(shown, Draft(id="", role="user", sent_at=None), []):
                content = shown
        for text in _content(content, draft, problems):
            draft.add(text)
        if kind != "user":
            _gemini_extras(raw, draft, problems, result)
        for problem in problems:
            result.skipped.append(Skip(file, line, f"{where}: {problem}; left out"))
    for index, draft in enumerate(drafts):
        if not draft.id:
            draft.id = f"{ref}:{index}"
    started = _time(data.get("startTime"), "startTime", file, None, result)
    out = finish_drafts(drafts, ref, started or file_time(path), result)
    if not out:
        result.ignore("empty conversation")
        return {ref}
    result.messages.extend(out)
    metadata: dict[str, Any] = {"file": path.name}
    for key in ("projectHash", "startTime", "lastUpdated"):
        if isinstance(data.get(key), str):
            metadata[key] = data[key]
    summary = data.get("summary")
    title = summary if isinstance(summary, str) and summary.strip() else _title(out, ref)
    result.conversations.append(
        Conversation(ref=ref, title=title, kind="assistant", source_format=NAME, metadata=metadata)
    )
    return {ref}


def _gemini_extras(raw: dict[str, Any], draft: Draft, problems: list[str], result: ReadResult) -> None:
    """A Gemini message's tool calls (lines, and their output as searchable text), thoughts and model."""
    calls = raw.get("toolCalls")
    if isinstance(calls, list):
        for call in calls:
            if isinstance(call, dict):
                draft.add(tool_line(call.get("name"), call.get("args")))
                draft.add_output(_tool_output(call))
            else:
                problems.append(f"a tool call is {type(call).__name__}, not an object")
    elif calls is not None:
        problems.append(f"toolCalls is {type(calls).__name__}, not a list")
    thoughts = raw.get("thoughts")
    if isinstance(thoughts, list | dict) and thoughts:
        result.ignore("thought", len(thoughts) if isinstance(thoughts, list) else 1)
    if isinstance(raw.get("model"), str) and raw["model"]:
        draft.metadata.setdefault("model", raw["model"])


def _read_logs(path: Path, result: ReadResult, in_sessions: set[str]) -> None:
    file = str(path)
    data, problems = load_json(path)
    result.skipped.extend(problems)
    if data is None:
        return
    if not isinstance(data, list):
        result.skipped.append(Skip(file, None, f"expected a list of log rows, got {type(data).__name__}"))
        return
    by_session: dict[str, list[Draft]] = {}
    used: set[str] = set()
    for index, row in enumerate(data):
        where = f"row {index}"
        if not isinstance(row, dict):
            result.skipped.append(Skip(file, None, f"{where} is {type(row).__name__}, not an object; left out"))
            continue
        session = row.get("sessionId")
        text = row.get("message")
        if not isinstance(session, str) or not session:
            result.skipped.append(Skip(file, None, f"{where} has no sessionId; left out"))
            continue
        if row.get("type") != "user":
            result.ignore(f"{row.get('type')} log row")
            continue
        if session in in_sessions:
            result.ignore("prompt already in a session file")
            continue
        if not isinstance(text, str):
            result.skipped.append(Skip(file, None, f"{where}: message is {type(text).__name__}, not text; left out"))
            continue
        drafts = by_session.setdefault(session, [])
        number = row.get("messageId")
        message_id = f"{session}:{number}" if isinstance(number, int) and not isinstance(number, bool) else ""
        if not message_id or message_id in used:
            # A restarted CLI numbers its prompts from 0 again.
            message_id = f"{session}:row{index}"
        used.add(message_id)
        sent_at = _time(row.get("timestamp"), where, file, None, result)
        drafts.append(Draft(id=message_id, role="user", sent_at=sent_at, parts=[text]))
    fallback = file_time(path)
    for session, drafts in by_session.items():
        messages = finish_drafts(drafts, session, fallback, result)
        if not messages:
            continue
        result.messages.extend(messages)
        result.conversations.append(
            Conversation(
                ref=session,
                title=_title(messages, session),
                kind="assistant",
                source_format=NAME,
                metadata={"file": path.name, "prompts_only": True},
            )
        )
