"""Claude Code sessions: `~/.claude/projects/<project>/<session>.jsonl`.

Each line is one record. `user` / `assistant` records carry `message.content`
(a string or Anthropic content blocks); the rest (`summary`, `system`,
`progress`, `file-history-snapshot`, `queue-operation`...) is bookkeeping. A
reply is streamed as several `assistant` records (one per content block, tool
calls and their results in between); everything the assistant says until the
human's next turn is read as one message, whose id is its first record's uuid,
so re-reading a growing session updates that message instead of adding one.
"""

from __future__ import annotations

import json
import re
from contextlib import suppress
from datetime import datetime
from itertools import islice
from pathlib import Path
from typing import Any

from threadkeep.model import Conversation, ReadResult, Skip
from threadkeep.readers._assistant import Draft, file_time, finish_drafts, tool_line
from threadkeep.readers._io import decode, iter_json_lines, parse_time

NAME = "claude_code"
HEAD_BYTES = 64 * 1024
MESSAGE_TYPES = frozenset({"user", "human", "assistant"})
BOOKKEEPING_TYPES = frozenset({"summary", "system", "progress", "file-history-snapshot", "queue-operation"})
RECORD_TYPES = MESSAGE_TYPES | BOOKKEEPING_TYPES
# Text Claude Code itself puts in a `user` record: command output and interruption notes.
NOT_HUMAN_PREFIXES = ("<local-command-stdout>", "<local-command-stderr>", "[Request interrupted by user")
TITLE_CHARS = 80
_COMMAND_NAME = re.compile(r"<command-name>(.*?)</command-name>", re.DOTALL)
_COMMAND_ARGS = re.compile(r"<command-args>(.*?)</command-args>", re.DOTALL)
MAX_DIR_FILES_CHECKED = 20


def _head_records(path: Path) -> tuple[str, list[dict[str, Any]]]:
    with path.open("rb") as handle:
        data = handle.read(HEAD_BYTES)
    text, _ = decode(data, str(path))
    lines = text.splitlines()
    if len(data) == HEAD_BYTES and lines:
        lines = lines[:-1]  # the last line is cut off
    records = []
    for line in lines[:10]:
        try:
            value = json.loads(line)
        except (json.JSONDecodeError, RecursionError):
            continue
        if isinstance(value, dict):
            records.append(value)
    return text, records


def _is_session_file(path: Path) -> bool:
    if path.suffix.lower() != ".jsonl" or not path.is_file():
        return False
    try:
        text, records = _head_records(path)
    except OSError:
        return False
    for record in records:
        kind = record.get("type")
        if "payload" in record or not isinstance(kind, str) or kind not in RECORD_TYPES:
            continue
        if "sessionId" in record or "leafUuid" in record or "parentUuid" in record:
            return True
        if record.get("type") == "file-history-snapshot" and "snapshot" in record:
            return True
    # The first record can be longer than the head (a file snapshot): judge by how it starts.
    start = text.lstrip()[:60].replace(" ", "")
    return not records and start.startswith(('{"type":"file-history-snapshot"', '{"parentUuid":'))


def detect(path: Path) -> bool:
    if path.is_dir():
        try:
            candidates = list(islice(path.rglob("*.jsonl"), MAX_DIR_FILES_CHECKED))
        except OSError:
            return False
        return any(_is_session_file(candidate) for candidate in candidates)
    return _is_session_file(path)


def read(path: Path) -> ReadResult:
    result = ReadResult(format=NAME)
    seen: set[str] = set()
    if not path.is_dir():
        _read_file(path, result, seen)
        return result
    for file in sorted(path.rglob("*.jsonl")):
        if _is_session_file(file):
            _read_file(file, result, seen)
        elif file.is_file():
            result.skipped.append(Skip(str(file), None, "not a Claude Code session file; left out"))
    return result


def _text_of(block: dict[str, Any], index: int, note: list[str]) -> str:
    value = block.get("text")
    if isinstance(value, str):
        return value
    note.append(f"content block {index} has no text")
    return ""


def _user_parts(content: Any, draft: Draft, note: list[str]) -> tuple[list[str], int]:
    """The human's own text in a `user` record, and how many tool results it carried."""
    if isinstance(content, str):
        return [content], 0
    if not isinstance(content, list):
        note.append(f"message content is {type(content).__name__}, not text or blocks")
        return [], 0
    parts: list[str] = []
    results = 0
    for index, block in enumerate(content, start=1):
        if isinstance(block, str):
            parts.append(block)
            continue
        if not isinstance(block, dict):
            note.append(f"content block {index} is {type(block).__name__}, not an object")
            continue
        kind = block.get("type")
        if kind == "text":
            parts.append(_text_of(block, index, note))
        elif kind == "tool_result":
            results += 1
        elif kind in ("image", "document"):
            draft.note_media(str(kind))
            parts.append(f"[{kind}]")
        else:
            note.append(f"content block {index} has unknown type {kind!r}")
    return parts, results


def _assistant_parts(content: Any, draft: Draft, note: list[str], result: ReadResult) -> list[str]:
    if isinstance(content, str):
        return [content]
    if not isinstance(content, list):
        note.append(f"message content is {type(content).__name__}, not text or blocks")
        return []
    parts: list[str] = []
    for index, block in enumerate(content, start=1):
        if not isinstance(block, dict):
            note.append(f"content block {index} is {type(block).__name__}, not an object")
            continue
        kind = block.get("type")
        if kind == "text":
            parts.append(_text_of(block, index, note))
        elif kind in ("tool_use", "server_tool_use"):
            parts.append(tool_line(block.get("name"), block.get("input")))
        elif kind in ("thinking", "redacted_thinking"):
            result.ignore("thinking")
        elif isinstance(kind, str) and kind.endswith("tool_result"):
            result.ignore("tool result")
        elif kind == "image":
            draft.note_media("image")
            parts.append("[image]")
        else:
            note.append(f"content block {index} has unknown type {kind!r}")
    return parts


def _command(text: str) -> str:
    """A slash command the human typed, as typed (`/model opus`), rather than Claude Code's markup."""
    if not text.lstrip().startswith(("<command-name>", "<command-message>")):
        return text
    name = _COMMAND_NAME.search(text)
    if name is None:
        return text
    arguments = _COMMAND_ARGS.search(text)
    typed = name.group(1).strip()
    if arguments and arguments.group(1).strip():
        typed += " " + arguments.group(1).strip()
    return typed


class _Session:
    """What one file says about its conversation, gathered while reading its records."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self.ref: str | None = None
        self.metadata: dict[str, Any] = {"file": path.name, "project": path.parent.name}
        self.summaries: list[str] = []
        self.drafts: list[Draft] = []
        self.open_reply: Draft | None = None
        # The latest time any record carried: a message without one was written right after it.
        self.last_time: datetime | None = None

    def take(self, raw: dict[str, Any]) -> None:
        if isinstance(raw.get("timestamp"), str):
            # A bad time is reported when the record is a message; bookkeeping times are best effort.
            with suppress(ValueError):
                self.last_time = parse_time(raw["timestamp"], assume_utc=True)
        session_id = raw.get("sessionId")
        if self.ref is None and isinstance(session_id, str) and session_id:
            self.ref = session_id
        for key in ("cwd", "gitBranch", "version"):
            value = raw.get(key)
            if isinstance(value, str) and value and key not in self.metadata:
                self.metadata[key] = value


def _read_file(path: Path, result: ReadResult, seen: set[str]) -> None:
    file = str(path)
    session = _Session(path)
    try:
        records = _read_records(path, result, seen, session)
    except RecursionError:
        # A line nested deeper than Python's stack is bad input too.
        result.skipped.append(Skip(file, None, "a line is nested too deeply to read; the rest of the file left out"))
        records = 1
    if not records:
        result.skipped.append(Skip(file, None, "file is empty"))
    _finish(session, result)


def _read_records(path: Path, result: ReadResult, seen: set[str], session: _Session) -> int:
    file = str(path)
    records = 0
    for item in iter_json_lines(path):
        records += 1
        if isinstance(item, Skip):
            result.skipped.append(item)
            continue
        number, raw = item
        if not isinstance(raw, dict):
            result.skipped.append(Skip(file, number, f"expected a JSON object, got {type(raw).__name__}"))
            continue
        kind = raw.get("type")
        if not isinstance(kind, str):
            result.skipped.append(Skip(file, number, "record has no type"))
            continue
        previous_time = session.last_time
        session.take(raw)
        if kind not in MESSAGE_TYPES:
            if kind == "summary" and isinstance(raw.get("summary"), str):
                session.summaries.append(raw["summary"])
            result.ignore(kind)
            continue
        uuid = raw.get("uuid") if isinstance(raw.get("uuid"), str) and raw.get("uuid") else None
        if uuid is not None:
            if uuid in seen:
                # Resumed and compacted sessions copy earlier records; the first copy counts.
                result.ignore("duplicate record")
                continue
            seen.add(uuid)
        _read_record(raw, kind, uuid, number, session, result, previous_time)
    return records


def _read_record(
    raw: dict[str, Any],
    kind: str,
    uuid: str | None,
    number: int,
    session: _Session,
    result: ReadResult,
    previous_time: datetime | None,
) -> None:
    file = str(session.path)
    # Sub-agent chatter, injected context and compaction summaries are not the human speaking.
    for flag, label in (("isSidechain", "sidechain"), ("isMeta", "meta"), ("isCompactSummary", "compact summary")):
        if raw.get(flag) is True:
            result.ignore(label)
            return
    message = raw.get("message")
    if not isinstance(message, dict):
        result.skipped.append(Skip(file, number, "message is missing or not an object"))
        return
    sent_at = previous_time
    if raw.get("timestamp") is not None:
        try:
            sent_at = parse_time(raw["timestamp"], assume_utc=True)
        except (ValueError, TypeError) as error:
            result.skipped.append(Skip(file, number, f"bad timestamp ({error}); time taken from a neighbour"))
    borrowed = sent_at is not None and sent_at is previous_time
    note: list[str] = []
    if kind == "assistant":
        model = message.get("model")
        if model == "<synthetic>" or raw.get("isApiErrorMessage") is True:
            # Claude Code's own stand-in replies (API errors, "No response requested").
            result.ignore("synthetic reply")
            return
        reply = session.open_reply
        if reply is None:
            reply = Draft(id=uuid or "", role="assistant", sent_at=sent_at, metadata={"line": number})
            if borrowed:
                reply.metadata["time_derived"] = "previous record"
            session.drafts.append(reply)
            session.open_reply = reply
        else:
            reply.records += 1
            if reply.sent_at is None:
                reply.sent_at = sent_at
        if isinstance(model, str) and model:
            reply.metadata.setdefault("model", model)
        for part in _assistant_parts(message.get("content"), reply, note, result):
            reply.add(part)
    else:
        draft = Draft(id=uuid or "", role="user", sent_at=sent_at, metadata={"line": number})
        if borrowed:
            draft.metadata["time_derived"] = "previous record"
        parts, tool_results = _user_parts(message.get("content"), draft, note)
        human = [_command(part) for part in parts if part.strip() and not part.lstrip().startswith(NOT_HUMAN_PREFIXES)]
        if not human:
            if tool_results:
                result.ignore("tool result")
            elif any(part.strip() for part in parts):
                result.ignore("command output")
            elif not note:
                result.ignore("empty message")
        else:
            for part in human:
                draft.add(part)
            session.drafts.append(draft)
            session.open_reply = None
    for reason in note:
        result.skipped.append(Skip(file, number, f"{reason}; left out"))


def _finish(session: _Session, result: ReadResult) -> None:
    ref = session.ref or session.path.stem
    for index, draft in enumerate(session.drafts):
        if not draft.id:
            draft.id = f"{ref}:{index}"
    messages = finish_drafts(session.drafts, ref, file_time(session.path), result)
    if not messages:
        result.ignore("empty conversation")
        return
    result.messages.extend(messages)
    if any(conversation.ref == ref for conversation in result.conversations):
        return
    title = session.summaries[-1] if session.summaries else ""
    if not title:
        first_user = next((message.text for message in messages if message.role == "user"), "")
        title = first_user.strip().split("\n", 1)[0][:TITLE_CHARS]
    result.conversations.append(
        Conversation(ref=ref, title=title or ref, kind="assistant", source_format=NAME, metadata=session.metadata)
    )
