"""Gemini CLI chats: `~/.gemini/tmp/<project hash>/chats/session-*.json`.

A session file is one JSON object (`sessionId`, `projectHash`, `startTime`,
`lastUpdated`, `messages`), each message typed `user`, `gemini`, `info`, `error`
or `warning`; a Gemini message may carry `toolCalls` and `thoughts`. The older
`logs.json` beside `chats/` is a list of the user's prompts only
(`sessionId`, `messageId`, `type`, `message`, `timestamp`); in a folder that has
both, prompts already in a session file are not read twice.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from contextlib import suppress
from datetime import datetime
from itertools import islice
from pathlib import Path
from typing import Any

from threadkeep.model import Conversation, ReadResult, Skip
from threadkeep.readers._assistant import Draft, file_time, finish_drafts, tool_line
from threadkeep.readers._io import decode, load_json, parse_time

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


def _kind(path: Path) -> str | None:
    """Say "session" for a chat file, "logs" for a prompt log, None for anything else."""
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
    for path in folder.rglob("*.json"):
        if path.name.startswith("session-") or path.name == "logs.json":
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
        if _kind(path) == "logs":
            _read_logs(path, result, set())
        else:
            _read_session(path, result)
        return result
    files = sorted(_candidates(path))
    kinds = {file: _kind(file) for file in files}
    sessions: set[str] = set()
    for file in files:
        if kinds[file] == "session":
            sessions.update(_read_session(file, result))
    for file in files:
        if kinds[file] == "logs":
            _read_logs(file, result, sessions)
        elif kinds[file] is None:
            result.skipped.append(Skip(str(file), None, "not a Gemini CLI chat or log; left out"))
    return result


def _time(value: Any, where: str, file: str, result: ReadResult) -> datetime | None:
    if value is None:
        return None
    try:
        return parse_time(value, assume_utc=True)
    except (ValueError, TypeError, OverflowError, OSError) as error:
        result.skipped.append(Skip(file, None, f"{where}: bad timestamp ({error}); time taken from a neighbour"))
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


def _load(path: Path) -> tuple[Any, list[Skip]]:
    return load_json(path)


def _title(messages: list[Any], ref: str) -> str:
    first = next((m.text for m in messages if m.role == "user"), "")
    return first.strip().split("\n", 1)[0][:TITLE_CHARS] or ref


def _read_session(path: Path, result: ReadResult) -> set[str]:
    file = str(path)
    data, problems = _load(path)
    result.skipped.extend(problems)
    if data is None:
        return set()
    if not isinstance(data, dict):
        result.skipped.append(Skip(file, None, f"expected a session object, got {type(data).__name__}"))
        return set()
    own = data.get("sessionId")
    ref = own if isinstance(own, str) and own else path.stem
    messages = data.get("messages")
    if not isinstance(messages, list):
        result.skipped.append(Skip(file, None, "messages is missing or not a list"))
        return set()
    drafts: list[Draft] = []
    reply: Draft | None = None
    last_time: datetime | None = None
    for index, raw in enumerate(messages):
        where = f"message {index}"
        if not isinstance(raw, dict):
            result.skipped.append(Skip(file, None, f"{where} is {type(raw).__name__}, not an object; left out"))
            continue
        kind = raw.get("type")
        if not isinstance(kind, str):
            result.skipped.append(Skip(file, None, f"{where} has no type; left out"))
            continue
        if kind in NOTICE_TYPES or (kind != "user" and kind not in ASSISTANT_TYPES):
            result.ignore(f"{kind} message")
            with suppress(ValueError, TypeError, OverflowError, OSError):
                last_time = parse_time(raw.get("timestamp"), assume_utc=True)
            continue
        sent_at = _time(raw.get("timestamp"), where, file, result)
        borrowed = sent_at is None and last_time is not None
        # A message without a time was written right after the record before it.
        sent_at, last_time = sent_at or last_time, sent_at or last_time
        own_id = raw.get("id") if isinstance(raw.get("id"), str) else ""
        problems: list[str] = []
        if kind == "user":
            draft = Draft(id=own_id, role="user", sent_at=sent_at)
            if borrowed:
                draft.metadata["time_derived"] = "previous record"
            for text in _content(raw.get("content"), draft, problems):
                draft.add(text)
            drafts.append(draft)
            reply = None
            for problem in problems:
                result.skipped.append(Skip(file, None, f"{where}: {problem}; left out"))
            continue
        if reply is None:
            reply = Draft(id=own_id, role="assistant", sent_at=sent_at)
            if borrowed:
                reply.metadata["time_derived"] = "previous record"
            drafts.append(reply)
        else:
            # Tool rounds write one Gemini message each; the turn's answer is all of them.
            reply.records += 1
            reply.sent_at = reply.sent_at or sent_at
        for text in _content(raw.get("content"), reply, problems):
            reply.add(text)
        calls = raw.get("toolCalls")
        if isinstance(calls, list):
            for call in calls:
                if isinstance(call, dict):
                    reply.add(tool_line(call.get("name"), call.get("args")))
                else:
                    problems.append(f"a tool call is {type(call).__name__}, not an object")
        elif calls is not None:
            problems.append(f"toolCalls is {type(calls).__name__}, not a list")
        thoughts = raw.get("thoughts")
        if isinstance(thoughts, list | dict) and thoughts:
            result.ignore("thought", len(thoughts) if isinstance(thoughts, list) else 1)
        for problem in problems:
            result.skipped.append(Skip(file, None, f"{where}: {problem}; left out"))
        if isinstance(raw.get("model"), str) and raw["model"]:
            reply.metadata.setdefault("model", raw["model"])
    for index, draft in enumerate(drafts):
        if not draft.id:
            draft.id = f"{ref}:{index}"
    started = _time(data.get("startTime"), "startTime", file, result)
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


def _read_logs(path: Path, result: ReadResult, in_sessions: set[str]) -> None:
    file = str(path)
    data, problems = _load(path)
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
        sent_at = _time(row.get("timestamp"), where, file, result)
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
