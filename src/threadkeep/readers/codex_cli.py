"""OpenAI Codex CLI rollouts: `~/.codex/sessions/YYYY/MM/DD/rollout-*.jsonl`.

Current files wrap every record as `{"timestamp", "type", "payload"}` with type
`session_meta`, `turn_context`, `response_item` or `event_msg`. The conversation
as Codex shows it is the `event_msg` stream: each `user_message` is the person's
turn, each `agent_message` one reply. The `response_item` messages are what the
model was sent, context included; they are read only from a file without user
events. Tool calls (`function_call`, `custom_tool_call`, `local_shell_call`...)
are `response_item`s in either case: lines in the reply around them, their output
an excerpt of searchable text (see `_assistant`). Older (2025) files start with a
bare session object `{"id", "timestamp", "instructions"}` followed by unwrapped
items without times, and the oldest are one JSON object `{"session", "items"}`.

Codex sends the model its context as user messages (`<environment_context>`,
`<user_instructions>`, AGENTS.md): those are not the human speaking. The IDE
extension wraps what was typed in its context (`# Context from my IDE setup:` ...
`## My request for Codex:`): only the request is the person's turn.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from datetime import datetime
from itertools import islice
from pathlib import Path
from typing import Any

from threadkeep.model import Conversation, ReadResult, Skip
from threadkeep.readers._assistant import Draft, file_time, finish_drafts, tool_line
from threadkeep.readers._io import decode, iter_json_lines, load_json, parse_time

NAME = "codex_cli"
HEAD_BYTES = 64 * 1024
CONTEXT_PREFIXES = (
    "<environment_context>",
    "<user_instructions>",
    "# AGENTS.md instructions for",
    "<INSTRUCTIONS>",
    "<permissions instructions>",
)
TEXT_BLOCKS = frozenset({"input_text", "output_text", "text"})
TITLE_CHARS = 80
MAX_DIR_FILES_CHECKED = 20

_WRAPPED = re.compile(r'"type"\s*:\s*"(?:session_meta|response_item|event_msg|turn_context)"')
_PAYLOAD = re.compile(r'"payload"\s*:\s*\{')
_LEGACY = re.compile(r'"record_type"\s*:\s*"state"|"instructions"\s*:|"type"\s*:\s*"message"')
_LEGACY_JSON = re.compile(r'"session"\s*:\s*\{')
_CWD = re.compile(r"<cwd>(.*?)</cwd>", re.DOTALL)
_IDE_REQUEST = "## My request for Codex:"
_IDE_WRAPPERS = ("# Context from my IDE setup:", "# Files mentioned by the user:")
CONTEXT_KINDS = frozenset({"user_instructions", "environment_context"})
TOOL_CALLS = frozenset({"function_call", "custom_tool_call", "local_shell_call", "web_search_call"})
TOOL_OUTPUTS = frozenset({"function_call_output", "custom_tool_call_output"})


def _head(path: Path) -> str:
    with path.open("rb") as handle:
        return decode(handle.read(HEAD_BYTES), str(path))[0]


def _is_rollout(path: Path) -> bool:
    suffix = path.suffix.lower()
    if suffix not in (".jsonl", ".json") or not path.is_file():
        return False
    try:
        head = _head(path)
    except OSError:
        return False
    if suffix == ".jsonl" and _WRAPPED.search(head) and _PAYLOAD.search(head) and '"sessionId"' not in head:
        return True
    if not path.name.startswith("rollout-"):
        return False
    if suffix == ".json":
        return bool(_LEGACY_JSON.search(head))
    return bool(_LEGACY.search(head))


def _rollouts(folder: Path) -> Iterator[Path]:
    return (p for p in folder.rglob("rollout-*") if p.suffix.lower() in (".jsonl", ".json"))


def detect(path: Path) -> bool:
    if path.is_dir():
        try:
            candidates = list(islice(_rollouts(path), MAX_DIR_FILES_CHECKED))
        except OSError:
            return False
        return any(_is_rollout(candidate) for candidate in candidates)
    return _is_rollout(path)


def read(path: Path) -> ReadResult:
    result = ReadResult(format=NAME)
    if not path.is_dir():
        _Rollout(path, result).read()
        return result
    for file in sorted(_rollouts(path)):
        if _is_rollout(file):
            _Rollout(file, result).read()
        else:
            result.skipped.append(Skip(str(file), None, "not a Codex rollout; left out"))
    return result


def _texts(content: Any) -> tuple[list[str], list[str]]:
    """Text of a message's content blocks, and the media placeholders among them."""
    if isinstance(content, str):
        return [content], []
    if not isinstance(content, list):
        return [], []
    texts: list[str] = []
    media: list[str] = []
    for block in content:
        if isinstance(block, str):
            texts.append(block)
        elif isinstance(block, dict):
            kind = block.get("type")
            if isinstance(kind, str) and kind in TEXT_BLOCKS and isinstance(block.get("text"), str):
                texts.append(block["text"])
            elif kind == "input_image":
                texts.append("[image]")
                media.append("image")
    return texts, media


def _is_context(text: str) -> bool:
    return text.lstrip().startswith(CONTEXT_PREFIXES)


def _typed(text: str) -> str:
    """What the person typed: the request inside the IDE extension's context wrapper, else the text."""
    stripped = text.lstrip()
    if stripped.startswith(_IDE_WRAPPERS) and _IDE_REQUEST in stripped:
        return stripped.split(_IDE_REQUEST, 1)[1].strip()
    return text


def _call_line(payload: dict[str, Any]) -> str:
    kind = payload.get("type")
    action = payload.get("action") if isinstance(payload.get("action"), dict) else {}
    if kind == "local_shell_call":
        return tool_line("shell", {"command": action.get("command")})
    if kind == "web_search_call":
        return tool_line("web_search", action.get("query"))
    return tool_line(payload.get("name"), payload.get("arguments", payload.get("input")))


def _output_text(output: Any) -> Any:
    """A tool call's output: Codex often writes it as a JSON string `{"output": ..., "metadata": ...}`."""
    if isinstance(output, str) and output.lstrip().startswith("{"):
        try:
            value = json.loads(output)
        except (json.JSONDecodeError, RecursionError):
            return output
        return value.get("output", output) if isinstance(value, dict) else output
    return output


class _Rollout:
    def __init__(self, path: Path, result: ReadResult) -> None:
        self.path = path
        self.file = str(path)
        self.result = result
        self.ref: str | None = None
        self.started: datetime | None = None
        self.metadata: dict[str, Any] = {"file": path.name}
        self.model: str | None = None
        self.drafts: list[Draft] = []
        # Ids of the model-facing messages by text, lent to the event stream's matching messages.
        self.item_ids: dict[tuple[str, str], list[str]] = {}
        self.event_drafts: list[Draft] = []
        self.has_user_events = False
        # Tool calls by call id, in each stream, so their output lands with the call.
        self.calls: dict[str, Draft] = {}
        self.event_calls: dict[str, Draft] = {}

    def skip(self, line: int | None, reason: str) -> None:
        self.result.skipped.append(Skip(self.file, line, reason))

    def _time(self, value: Any, line: int | None) -> datetime | None:
        if value is None:
            return None
        try:
            return parse_time(value, assume_utc=True)
        except (ValueError, TypeError, OverflowError, OSError) as error:
            self.skip(line, f"bad timestamp ({error}); time taken from a neighbour")
            return None

    def read(self) -> None:
        if self.path.suffix.lower() == ".json":
            self._read_json()
        else:
            try:
                self._read_lines()
            except RecursionError:
                # A line nested deeper than Python's stack is bad input too.
                self.skip(None, "a line is nested too deeply to read; the rest of the file left out")
        self._finish()

    def _read_json(self) -> None:
        data, problems = load_json(self.path)
        self.result.skipped.extend(problems)
        if data is None:
            return
        if not isinstance(data, dict):
            self.skip(None, f"expected an object with session and items, got {type(data).__name__}")
            return
        if isinstance(data.get("session"), dict):
            self._meta(data["session"], None)
        items = data.get("items")
        if not isinstance(items, list):
            self.skip(None, "items is missing or not a list")
            return
        for index, item in enumerate(items):
            if isinstance(item, dict):
                self._item(item, None, None)
            else:
                self.skip(None, f"item {index} is {type(item).__name__}, not an object; left out")

    def _read_lines(self) -> None:
        first = True
        entries = 0
        for entry in iter_json_lines(self.path):
            entries += 1
            if isinstance(entry, Skip):
                self.result.skipped.append(entry)
                continue
            number, raw = entry
            is_first, first = first, False
            if not isinstance(raw, dict):
                self.skip(number, f"expected a JSON object, got {type(raw).__name__}")
                continue
            kind = raw.get("type")
            if "payload" in raw and isinstance(kind, str):
                self._wrapped(raw, kind, number)
            elif "record_type" in raw:
                self.result.ignore("state record")
            elif is_first and "id" in raw and "timestamp" in raw and kind is None:
                self._meta(raw, number)
            elif isinstance(kind, str):
                self._item(raw, None, number)
            else:
                self.skip(number, "record has neither a type nor a payload")
        if not entries:
            self.skip(None, "file is empty")

    def _wrapped(self, raw: dict[str, Any], kind: str, number: int) -> None:
        payload = raw["payload"]
        if not isinstance(payload, dict):
            self.skip(number, f"payload is {type(payload).__name__}, not an object")
            return
        if kind == "session_meta":
            self._meta(payload, number)
        elif kind == "turn_context":
            if isinstance(payload.get("model"), str):
                self.model = payload["model"]
            self.result.ignore("turn_context")
        elif kind == "response_item":
            self._item(payload, self._time(raw.get("timestamp"), number), number)
        elif kind == "event_msg":
            self._event(payload, self._time(raw.get("timestamp"), number))
        else:
            self.result.ignore(kind)

    def _meta(self, payload: dict[str, Any], number: int | None) -> None:
        self.result.ignore("session_meta")
        if self.ref is not None:
            return  # a forked session repeats its parent's meta after its own
        own = payload.get("id")
        if isinstance(own, str) and own:
            self.ref = own
        self.started = self._time(payload.get("timestamp"), number)
        for key in ("cwd", "cli_version", "originator", "source", "model_provider"):
            if isinstance(payload.get(key), str) and payload[key]:
                self.metadata[key] = payload[key]
        git = payload.get("git")
        if isinstance(git, dict):
            for key, name in (("branch", "gitBranch"), ("commit_hash", "gitCommit")):
                if isinstance(git.get(key), str) and git[key]:
                    self.metadata[name] = git[key]

    def _step(self, drafts: list[Draft], sent_at: datetime | None, own_id: Any = None) -> Draft:
        """A new model step (a reply or a tool call) of the assistant."""
        step = Draft(id=own_id if isinstance(own_id, str) else "", role="assistant", sent_at=sent_at)
        if self.model:
            step.metadata["model"] = self.model
        drafts.append(step)
        return step

    def _remember_id(self, role: str, text: str, own_id: Any) -> None:
        if isinstance(own_id, str) and own_id:
            self.item_ids.setdefault((role, text.strip()), []).append(own_id)

    def _item(self, payload: dict[str, Any], sent_at: datetime | None, number: int | None) -> None:
        kind = payload.get("type")
        if not isinstance(kind, str):
            self.result.ignore("untyped item")
        elif kind == "message":
            self._message(payload, sent_at, number)
        elif kind in TOOL_CALLS:
            line = _call_line(payload)
            call_id = payload.get("call_id", payload.get("id"))
            # A call is a step of its own, folded into the reply it belongs to (see `_assistant`).
            reply = self._step(self.drafts, sent_at)
            reply.add(line)
            step = self._step(self.event_drafts, sent_at)
            step.add(line)
            if isinstance(call_id, str):
                self.calls[call_id], self.event_calls[call_id] = reply, step
        elif kind in TOOL_OUTPUTS:
            self.result.ignore(str(kind))
            output = _output_text(payload.get("output"))
            call_id = payload.get("call_id")
            for calls in (self.calls, self.event_calls):
                owner = calls.get(call_id) if isinstance(call_id, str) else None
                if owner is not None:
                    owner.add_output(output)
        else:
            self.result.ignore(kind)  # reasoning, ghost snapshots...

    def _message(self, payload: dict[str, Any], sent_at: datetime | None, number: int | None) -> None:
        role = payload.get("role")
        content = payload.get("content")
        if not isinstance(content, str | list):
            self.skip(number, f"message content is {type(content).__name__}, not text or blocks; left out")
            return
        texts, media = _texts(content)
        if role == "assistant":
            reply = self._step(self.drafts, sent_at, payload.get("id"))
            self._remember_id("assistant", "\n".join(texts), payload.get("id"))
            for text in texts:
                reply.add(text)
            for kind in media:
                reply.note_media(kind)
            return
        if role != "user":
            self.result.ignore(f"{role} message")
            return
        for text in texts:
            cwd = _CWD.search(text) if text.lstrip().startswith("<environment_context>") else None
            if cwd and "cwd" not in self.metadata:
                self.metadata["cwd"] = cwd.group(1).strip()
        human = [_typed(text) for text in texts if text.strip() and not _is_context(text)]
        if not human:
            self.result.ignore("context message" if texts else "empty message")
            return
        draft = Draft(id="", role="user", sent_at=sent_at)
        for text in human:
            draft.add(text)
        for kind in media:
            draft.note_media(kind)
        own = payload.get("id")
        if isinstance(own, str) and own:
            draft.id = own
            self._remember_id("user", draft.text, own)
        self.drafts.append(draft)

    def _event(self, payload: dict[str, Any], sent_at: datetime | None) -> None:
        kind = payload.get("type")
        text = payload.get("message")
        if kind not in ("user_message", "agent_message") or not isinstance(text, str) or not text.strip():
            self.result.ignore(f"{kind} event" if isinstance(kind, str) else "event_msg")
            return
        if kind == "agent_message":
            self._step(self.event_drafts, sent_at).add(text)
            return
        if str(payload.get("kind")) in CONTEXT_KINDS or _is_context(text):
            self.result.ignore("context message")
            return
        draft = Draft(id="", role="user", sent_at=sent_at)
        draft.add(_typed(text))
        images = payload.get("images")
        for _ in images if isinstance(images, list) else []:
            draft.add("[image]")
            draft.note_media("image")
        self.event_drafts.append(draft)
        self.has_user_events = True

    def _finish(self) -> None:
        drafts = self.drafts
        self.metadata["read_from"] = "response_item"
        if self.has_user_events:
            drafts = self.event_drafts
            self.metadata["read_from"] = "event_msg"
            copies = sum(1 for draft in self.drafts if not draft.tools_only)
            if copies:
                self.result.ignore("model-facing copy of a message", copies)
            for draft in drafts:
                ids = self.item_ids.get((draft.role, draft.text.strip()))
                if ids and not draft.id:
                    draft.id = ids.pop(0)
        ref = self.ref or self.path.stem
        for index, draft in enumerate(drafts):
            if not draft.id:
                draft.id = f"{ref}:{index}"
        fallback = self.started or file_time(self.path)
        messages = finish_drafts(drafts, ref, fallback, self.result)
        if not messages:
            self.result.ignore("empty conversation")
            return
        self.result.messages.extend(messages)
        if self.started:
            self.metadata["started_at"] = self.started.isoformat()
        first = next((m.text for m in messages if m.role == "user"), "")
        title = first.strip().split("\n", 1)[0][:TITLE_CHARS] or ref
        if not any(conversation.ref == ref for conversation in self.result.conversations):
            self.result.conversations.append(
                Conversation(ref=ref, title=title, kind="assistant", source_format=NAME, metadata=self.metadata)
            )
