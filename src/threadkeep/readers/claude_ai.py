"""Claude.ai data export: `conversations.json` (a list of conversations with `chat_messages`).

Also reads the older flat shapes people saved by hand or with browser
extensions: a list of `{"role", "content"}` messages, or `{"messages": [...]}`,
with roles user/human and assistant/ai/model (Gemini's name for the assistant,
whose messages may carry `parts: [{"text"}]` instead of `content`). System and
tool messages are counted as left out; any other role is reported with its line.
Text extracted from attached files is kept, appended to the message that carried
it as `[attachment: name]`.
"""

from __future__ import annotations

import re
from collections import Counter
from datetime import datetime
from pathlib import Path
from typing import Any

from threadkeep.model import Conversation, ReadResult, Skip
from threadkeep.readers._assistant import Draft, file_time, fill_times, finish_drafts, synthetic_times, tool_line
from threadkeep.readers._io import decode, json_array_items, load_export, parse_time, skip_space

NAME = "claude_ai"
HEAD_BYTES = 64 * 1024
EXPORT_FILE = "conversations.json"
USER_ROLES = frozenset({"human", "user"})
ASSISTANT_ROLES = frozenset({"assistant", "ai", "claude", "model", "gemini", "bot"})
# Roles that are not either side of the conversation: left out on purpose, counted.
OTHER_ROLES = frozenset({"system", "developer", "tool", "function", "ipython"})
TIME_KEYS = ("created_at", "timestamp", "create_time", "updated_at")

_CHAT_MESSAGES = re.compile(r'"chat_messages"\s*:\s*\[')
_FLAT_ROLE = re.compile(r'"(?:role|sender)"\s*:\s*"(?:user|human|assistant|ai|model)"')
_FLAT_CONTENT = re.compile(r'"(?:content|text|parts)"\s*:')
_MODEL_ROLE = re.compile(r'"role"\s*:\s*"model"')
_MESSAGES_LIST = re.compile(r'"messages"\s*:\s*\[')
# Keys that mark other assistant formats sharing the same general shape.
_OTHER_FORMATS = re.compile(r'"(?:mapping|sessionId|projectHash|payload|session|parts)"\s*:')


def _head(path: Path) -> str:
    with path.open("rb") as handle:
        return decode(handle.read(HEAD_BYTES), str(path))[0].lstrip("\ufeff \t\r\n")


def _is_export_file(path: Path) -> bool:
    if path.suffix.lower() != ".json" or not path.is_file():
        return False
    try:
        head = _head(path)
    except OSError:
        return False
    if _CHAT_MESSAGES.search(head):
        return True
    other = _OTHER_FORMATS.search(head)
    # Gemini-style messages carry `parts` of their own.
    if other and not (other.group(0).startswith('"parts"') and _MODEL_ROLE.search(head)):
        return False
    if not (_FLAT_ROLE.search(head) and _FLAT_CONTENT.search(head)):
        return False
    return head.startswith("[") or (head.startswith("{") and bool(_MESSAGES_LIST.search(head)))


def detect(path: Path) -> bool:
    if path.is_dir():
        return _is_export_file(path / EXPORT_FILE)
    return _is_export_file(path)


def read(path: Path) -> ReadResult:
    result = ReadResult(format=NAME)
    path, data = load_export(path, EXPORT_FILE, result.skipped)
    if data is None:
        return result
    reader = _Reader(path, result)
    single = isinstance(data, dict) and not isinstance(data.get("conversations"), list)
    if isinstance(data, dict):
        data = [data] if single else data["conversations"]
    if not isinstance(data, list):
        result.skipped.append(Skip(str(path), None, f"expected a list of conversations, got {type(data).__name__}"))
        return result
    loose: list[Any] = []
    for index, item in enumerate(data):
        if isinstance(item, dict) and isinstance(item.get("chat_messages"), list):
            reader.conversation(item, None if single else index)
        elif isinstance(item, dict) and isinstance(item.get("messages"), list):
            reader.flat(item["messages"], item, None if single else index)
        elif isinstance(item, dict) and ("role" in item or "sender" in item):
            loose.append(item)
        else:
            what = (
                f"a {type(item).__name__}"
                if not isinstance(item, dict)
                else "an object without chat_messages or a role"
            )
            result.skipped.append(Skip(str(path), None, f"item {index} is {what}, not a conversation; left out"))
    if loose:
        reader.flat(loose, {}, None)
    return result


def _flat_lines(path: Path) -> list[int]:
    """Where each message of a flat file starts: its top-level list, or its first `"messages": [` list."""
    try:
        text = decode(path.read_bytes(), str(path))[0]
    except OSError:
        return []
    start = skip_space(text.lstrip("\ufeff"), 0) + (len(text) - len(text.lstrip("\ufeff")))
    if not text.startswith("[", start):
        found = _MESSAGES_LIST.search(text)
        if found is None:
            return []
        start = found.end() - 1
    return [item[0] for item in json_array_items(text, start, str(path)) if not isinstance(item, Skip)]


def _role(raw: dict[str, Any]) -> str | None:
    value = raw.get("sender", raw.get("role"))
    if not isinstance(value, str):
        return None
    value = value.lower()
    if value in USER_ROLES:
        return "user"
    if value in ASSISTANT_ROLES:
        return "assistant"
    return value


def _uuid(raw: dict[str, Any]) -> str:
    value = raw.get("uuid")
    return value if isinstance(value, str) else ""


def _time(raw: dict[str, Any]) -> tuple[datetime | None, str | None]:
    """The record's time, or None and why not (None, None when it simply has none)."""
    for key in TIME_KEYS:
        if raw.get(key) is not None:
            try:
                return parse_time(raw[key], assume_utc=True), None
            except (ValueError, TypeError, OverflowError, OSError) as error:
                return None, f"bad {key} ({error}); time taken from a neighbour"
    return None, None


class _Reader:
    def __init__(self, path: Path, result: ReadResult) -> None:
        self.path = path
        self.file = str(path)
        self.result = result
        self.mtime = file_time(path)
        self.flat_lines: list[int] | None = None

    def line_of(self, index: int) -> int | None:
        """The line where item `index` of the file's one flat message list starts (None if unknown)."""
        if self.flat_lines is None:
            self.flat_lines = _flat_lines(self.path)
        return self.flat_lines[index] if index < len(self.flat_lines) else None

    def skip(self, where: str, reason: str) -> None:
        self.result.skipped.append(Skip(self.file, None, f"{where}: {reason}"))

    def _blocks(self, content: list[Any], draft: Draft, where: str) -> None:
        for index, block in enumerate(content, start=1):
            if isinstance(block, str):
                draft.add(block)
                continue
            if not isinstance(block, dict):
                self.skip(where, f"content block {index} is {type(block).__name__}, not an object; left out")
                continue
            kind = block.get("type")
            text = block.get("text")
            if kind == "text" or (kind not in ("thinking", "tool_result") and isinstance(text, str)):
                draft.add(text if isinstance(text, str) else "")
            elif kind == "tool_use":
                draft.add(tool_line(block.get("name"), block.get("input")))
            elif kind in ("thinking", "redacted_thinking"):
                self.result.ignore("thinking")
            elif kind == "tool_result":
                self.result.ignore("tool result")
            elif kind == "image":
                draft.note_media("image")
                draft.add("[image]")
            else:
                self.result.ignore(f"{kind} block")

    def _attachments(self, raw: dict[str, Any], draft: Draft, where: str) -> None:
        names: list[str] = []
        for key in ("attachments", "files", "files_v2"):
            items = raw.get(key)
            if items is None:
                continue
            if not isinstance(items, list):
                self.skip(where, f"{key} is {type(items).__name__}, not a list; left out")
                continue
            for item in items:
                if not isinstance(item, dict):
                    self.skip(where, f"an item of {key} is {type(item).__name__}, not an object; left out")
                    continue
                name = item.get("file_name") or item.get("name") or "file"
                name = name if isinstance(name, str) else "file"
                extracted = item.get("extracted_content")
                if isinstance(extracted, str) and extracted.strip():
                    draft.add(f"[attachment: {name}]\n{extracted.strip()}")
                    names.append(name)
                elif name not in names:
                    # Files without extracted text (images, PDFs shown to the model) are only named.
                    names.append(name)
                    draft.note_media("file")
                    if not draft.parts:
                        draft.add(f"[file: {name}]")
        if names:
            draft.metadata["attachments"] = names

    def _draft(self, raw: Any, index: int, ref: str, flat: bool, lines: bool = False) -> Draft | None:
        where = f"conversation {ref}, message {index}"
        if not isinstance(raw, dict):
            self.skip(where, f"is {type(raw).__name__}, not an object; left out")
            return None
        role = _role(raw)
        if role is None:
            self.skip(where, "has no sender; left out")
            return None
        if role in OTHER_ROLES:
            self.result.ignore(f"{role} message")
            return None
        if role not in ("user", "assistant"):
            line = self.line_of(index) if lines else None
            self.result.skipped.append(Skip(self.file, line, f"{where}: unknown role {role!r}; left out"))
            return None
        uuid = raw.get("uuid", raw.get("id"))
        sent_at, problem = _time(raw)
        if problem:
            self.skip(where, problem)
        draft = Draft(id=uuid if isinstance(uuid, str) and uuid else "", role=role, sent_at=sent_at)
        content = raw.get("content", raw.get("parts"))
        if isinstance(content, list):
            self._blocks(content, draft, where)
        elif isinstance(content, str):
            draft.add(content)
        elif content is not None:
            self.skip(where, f"content is {type(content).__name__}, not text or blocks; left out")
        if not draft.parts and isinstance(raw.get("text"), str):
            draft.add(raw["text"])
        if not flat:
            self._attachments(raw, draft, where)
        model = raw.get("model")
        if role == "assistant" and isinstance(model, str) and model:
            draft.metadata["model"] = model
        return draft

    def _branch(self, conversation: dict[str, Any], messages: list[Any]) -> set[str] | None:
        """The uuids on the branch the user last looked at, when the conversation really branched."""
        leaf = conversation.get("current_leaf_message_uuid")
        by_id = {m["uuid"]: m for m in messages if isinstance(m, dict) and isinstance(m.get("uuid"), str)}
        if not isinstance(leaf, str) or leaf not in by_id:
            return None
        parents = [m.get("parent_message_uuid") for m in by_id.values()]
        children = Counter(parent for parent in parents if isinstance(parent, str))
        if not children or max(children.values()) < 2:
            return None
        branch: set[str] = set()
        node: Any = by_id.get(leaf)
        while isinstance(node, dict) and node["uuid"] not in branch:
            branch.add(node["uuid"])
            parent = node.get("parent_message_uuid")
            node = by_id.get(parent) if isinstance(parent, str) else None
        return branch

    def conversation(self, raw: dict[str, Any], index: int | None) -> None:
        uuid = raw.get("uuid")
        ref = self.path.stem if index is None else f"{self.path.stem}:{index}"
        if isinstance(uuid, str) and uuid:
            ref = uuid
        messages = raw["chat_messages"]
        branch = self._branch(raw, messages)
        drafts: list[Draft] = []
        for position, message in enumerate(messages):
            if branch is not None and isinstance(message, dict) and _uuid(message) not in branch:
                self.result.ignore("other branch")
                continue
            draft = self._draft(message, position, ref, flat=False)
            if draft is not None:
                drafts.append(draft)
        started = _time(raw)[0] or self.mtime
        metadata: dict[str, Any] = {}
        for key in ("created_at", "updated_at", "summary", "project_uuid", "model"):
            if isinstance(raw.get(key), str) and raw[key]:
                metadata[key] = raw[key]
        name = raw.get("name")
        self._emit(ref, name if isinstance(name, str) else "", drafts, started, metadata)

    def flat(self, messages: list[Any], raw: dict[str, Any], index: int | None) -> None:
        own = raw.get("uuid", raw.get("id"))
        ref = self.path.stem if index is None else f"{self.path.stem}:{index}"
        if isinstance(own, str) and own:
            ref = own
        lines = index is None
        drafts = [d for i, m in enumerate(messages) if (d := self._draft(m, i, ref, True, lines)) is not None]
        metadata: dict[str, Any] = {"shape": "flat"}
        if drafts and all(draft.sent_at is None for draft in drafts):
            for draft, moment in zip(drafts, synthetic_times(self.mtime, len(drafts)), strict=True):
                draft.sent_at = moment
                draft.metadata["time_derived"] = "file modification time + 1 s per message"
            metadata["synthetic_times"] = True
        title = raw.get("name", raw.get("title"))
        self._emit(ref, title if isinstance(title, str) else "", drafts, _time(raw)[0] or self.mtime, metadata)

    def _emit(self, ref: str, title: str, drafts: list[Draft], started: datetime, metadata: dict[str, Any]) -> None:
        for position, draft in enumerate(drafts):
            if not draft.id:
                draft.id = f"{ref}:{position}"
        # Borrow missing times in export order first, then sort: the human's turn first on ties.
        for draft, (moment, note) in zip(drafts, fill_times([d.sent_at for d in drafts], started), strict=True):
            draft.sent_at = moment
            if note:
                draft.metadata["time_derived"] = note
        order = {id(draft): position for position, draft in enumerate(drafts)}
        # A borrowed time ties with the message it came from: stay on the side of it the export put us.
        side = {"previous message": 1, "next message": -1}
        drafts = sorted(
            drafts,
            key=lambda d: (d.sent_at, side.get(d.metadata.get("time_derived"), 0), d.role != "user", order[id(d)]),
        )
        messages = finish_drafts(drafts, ref, started, self.result)
        if not messages:
            self.result.ignore("empty conversation")
            return
        self.result.messages.extend(messages)
        if not title:
            first = next((m.text for m in messages if m.role == "user"), "")
            title = first.strip().split("\n", 1)[0][:80]
        self.result.conversations.append(
            Conversation(ref=ref, title=title or ref, kind="assistant", source_format=NAME, metadata=metadata)
        )
