"""Continue (VS Code / JetBrains) sessions: `~/.continue/sessions/<sessionId>.json`.

The shape is Continue's `Session` type (`core/index.d.ts` in continuedev/continue):
`{"sessionId", "title", "workspaceDirectory", "history": [...]}`, each history item
`{"message": {"role", "content", "toolCalls"?, "toolCallId"?}, "contextItems",
"toolCallStates"?, ...}`. Roles are `user`, `assistant`, `thinking`, `system` and
`tool`; content is a string or a list of parts (`{"type": "text", "text"}`,
`{"type": "imageUrl", ...}`). An assistant message that only calls tools is not
a reply, and tool output (`tool` messages, `toolCallStates[].output`) is kept as
searchable text, not shown (see `_assistant`). Messages have no times: the
session's `dateCreated` from `sessions.json` beside it (epoch milliseconds), else
the file's time, plus one second per message.
"""

from __future__ import annotations

import re
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from threadkeep.model import Conversation, ReadResult, Skip
from threadkeep.readers._assistant import Draft, file_time, finish_drafts, synthetic_times, tool_line
from threadkeep.readers._io import decode, files_to_read, load_json

NAME = "continue_dev"
HEAD_BYTES = 64 * 1024
INDEX_FILE = "sessions.json"
TITLE_CHARS = 80
IGNORED_ROLES = frozenset({"thinking", "system"})

_SESSION_ID = re.compile(r'"sessionId"\s*:')
_HISTORY = re.compile(r'"history"\s*:\s*\[')
_WORKSPACE = re.compile(r'"workspaceDirectory"\s*:')


def _is_session_file(path: Path) -> bool:
    if path.suffix.lower() != ".json" or path.name == INDEX_FILE or not path.is_file():
        return False
    try:
        with path.open("rb") as handle:
            head = decode(handle.read(HEAD_BYTES), str(path))[0].lstrip("\ufeff \t\r\n")
    except OSError:
        return False
    return head.startswith("{") and all(p.search(head) for p in (_SESSION_ID, _HISTORY, _WORKSPACE))


def detect(path: Path) -> bool:
    if path.is_dir():
        try:
            return any(_is_session_file(child) for child in sorted(path.glob("*.json"))[:20])
        except OSError:
            return False
    return _is_session_file(path)


def read(path: Path) -> ReadResult:
    result = ReadResult(format=NAME)
    folder = path if path.is_dir() else path.parent
    created = _created_times(folder / INDEX_FILE, result)
    for file in files_to_read(path, _is_session_file, "Continue session", result.skipped):
        _read_session(file, created, result)
    if path.is_dir():
        for child in sorted(path.glob("*")):
            if child.is_file() and child.name != INDEX_FILE and not _is_session_file(child):
                result.skipped.append(Skip(str(child), None, "not a Continue session file; left out"))
    return result


def _created_times(index: Path, result: ReadResult) -> dict[str, datetime]:
    """Each session's `dateCreated` from the sessions index, when there is one."""
    if not index.is_file():
        return {}
    data, problems = load_json(index)
    result.skipped.extend(problems)
    created: dict[str, datetime] = {}
    for row in data if isinstance(data, list) else []:
        if not isinstance(row, dict) or not isinstance(row.get("sessionId"), str):
            continue
        value = row.get("dateCreated")
        try:
            millis = float(value) if isinstance(value, str | int | float) and not isinstance(value, bool) else None
            if millis is not None:
                created[row["sessionId"]] = datetime.fromtimestamp(millis / 1000, tz=UTC)
        except (ValueError, OverflowError, OSError):
            result.skipped.append(Skip(str(index), None, f"session {row['sessionId']}: bad dateCreated {value!r}"))
    return created


def _texts(content: Any, draft: Draft) -> list[str]:
    if isinstance(content, str):
        return [content]
    texts: list[str] = []
    for part in content if isinstance(content, list) else []:
        if isinstance(part, str):
            texts.append(part)
        elif isinstance(part, dict) and isinstance(part.get("text"), str):
            texts.append(part["text"])
        elif isinstance(part, dict) and part.get("type") == "imageUrl":
            draft.note_media("image")
            texts.append("[image]")
    return texts


def _context_output(items: Any) -> str:
    """The text of context items (what a tool returned, as Continue stores it)."""
    texts = [item.get("content") for item in items if isinstance(item, dict)] if isinstance(items, list) else []
    return "\n".join(text for text in texts if isinstance(text, str))


def _read_session(path: Path, created: dict[str, datetime], result: ReadResult) -> None:
    file = str(path)
    data, problems = load_json(path)
    result.skipped.extend(problems)
    if data is None:
        return
    if not isinstance(data, dict) or not isinstance(data.get("history"), list):
        result.skipped.append(Skip(file, None, "expected a session object with a history list"))
        return
    own = data.get("sessionId")
    ref = own if isinstance(own, str) and own else path.stem
    drafts: list[Draft] = []
    calls: dict[str, Draft] = {}
    answered: set[str] = set()
    for index, item in enumerate(data["history"]):
        where = f"history item {index}"
        message = item.get("message") if isinstance(item, dict) else None
        role = message.get("role") if isinstance(message, dict) else None
        if not isinstance(role, str):
            result.skipped.append(Skip(file, None, f"{where} has no message role; left out"))
            continue
        if role in IGNORED_ROLES:
            result.ignore(f"{role} message")
            continue
        if role == "tool":
            called = message.get("toolCallId")
            owner = calls.get(called) if isinstance(called, str) else None
            # The same output is often in the call's `toolCallStates` already.
            if owner is not None and called not in answered:
                owner.add_output(message.get("content"))
            result.ignore("tool result")
            continue
        if role not in ("user", "assistant"):
            result.skipped.append(Skip(file, None, f"{where}: unknown role {role!r}; left out"))
            continue
        own_id = message.get("id")
        draft = Draft(id=own_id if isinstance(own_id, str) and own_id else f"{ref}:{index}", role=role, sent_at=None)
        for text in _texts(message.get("content"), draft):
            draft.add(text)
        if role == "assistant":
            _tool_calls(message, item, draft, calls, answered)
        drafts.append(draft)
    base = created.get(ref) or file_time(path)
    for draft, moment in zip(drafts, synthetic_times(base, len(drafts)), strict=True):
        draft.sent_at = moment
        draft.metadata["time_derived"] = "session time + 1 s per message"
    messages = finish_drafts(drafts, ref, base, result)
    if not messages:
        result.ignore("empty conversation")
        return
    result.messages.extend(messages)
    metadata: dict[str, Any] = {"file": path.name, "synthetic_times": True}
    for key in ("workspaceDirectory", "chatModelTitle", "mode"):
        if isinstance(data.get(key), str) and data[key]:
            metadata[key] = data[key]
    title = data.get("title")
    if not isinstance(title, str) or not title.strip() or title == "New Session":
        first = next((m.text for m in messages if m.role == "user"), "")
        title = first.strip().split("\n", 1)[0][:TITLE_CHARS]
    result.conversations.append(
        Conversation(ref=ref, title=title or ref, kind="assistant", source_format=NAME, metadata=metadata)
    )


def _tool_calls(
    message: dict[str, Any], item: dict[str, Any], draft: Draft, calls: dict[str, Draft], answered: set[str]
) -> None:
    """An assistant message's tool calls as lines; their output (from `toolCallStates`) searchable."""
    states = item.get("toolCallStates")
    outputs = {
        state.get("toolCallId"): _context_output(state.get("output"))
        for state in (states if isinstance(states, list) else [])
        if isinstance(state, dict) and isinstance(state.get("toolCallId"), str)
    }
    listed = message.get("toolCalls")
    for call in listed if isinstance(listed, list) else []:
        function = call.get("function") if isinstance(call, dict) else None
        if not isinstance(function, dict):
            continue
        draft.add(tool_line(function.get("name"), function.get("arguments")))
        call_id = call.get("id")
        if isinstance(call_id, str):
            calls[call_id] = draft
            if outputs.get(call_id):
                draft.add_output(outputs[call_id])
                answered.add(call_id)
