"""What the assistant-chat readers (Claude Code, Claude.ai, ChatGPT, Codex, Gemini) share.

The one-line rendering of tool calls (`tool_line`), the rule for messages without a
time (`fill_times`) and the assembly of replies that span several records (`Draft`,
`finish_drafts`), so every assistant chat looks alike downstream.

A reply is what the tool shows as one answer: a model response with text. Its own
tool calls are lines in it. A response that only calls tools is not a message: its
tool lines join the visible reply before it in the same turn, or, when none came yet,
the next one's searchable text (`TOOL_TEXT_KEY`), so a reply still starts with the
words the tool shows. Tool output never enters the transcript; a bounded excerpt of
it (`tool_excerpt`) is kept as searchable text, so a fact only a command printed can
still be found.
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

from threadkeep.model import TOOL_TEXT_KEY, Message, ReadResult

TOOL_ARGUMENT_CHARS = 120
TOOL_OUTPUT_CHARS = 400
TOOL_TEXT_CHARS = 4000
TOOL_PREFIX = "[tool: "

# The argument that says most about a tool call, in order of preference.
_KEY_ARGUMENTS = (
    "command",
    "cmd",
    "file_path",
    "path",
    "notebook_path",
    "filePath",
    "absolute_path",
    "pattern",
    "query",
    "url",
    "description",
    "prompt",
    "skill",
    "subject",
    "text",
    "content",
)
_PATCH_FILE = re.compile(r"^\*\*\* (?:Add|Update|Delete) File: (.+)$", re.MULTILINE)


def _one_line(text: str) -> str:
    return " ".join(text.split())


def _shorten(text: str, limit: int = TOOL_ARGUMENT_CHARS) -> str:
    text = _one_line(text)
    return text if len(text) <= limit else text[: limit - 1].rstrip() + "…"


def _command_text(value: Any) -> str:
    """A shell command given as a string or an argv list (`["bash", "-lc", "ls"]`)."""
    if isinstance(value, list) and all(isinstance(part, str) for part in value):
        if len(value) >= 3 and value[0].endswith(("bash", "sh", "zsh")) and value[1] in ("-lc", "-c"):
            return value[2]
        return " ".join(value)
    return value if isinstance(value, str) else ""


def key_argument(arguments: Any) -> str:
    """The one argument of a tool call worth showing: a command, a path, a query..."""
    if isinstance(arguments, str):
        stripped = arguments.strip()
        if stripped.startswith("{"):
            try:
                return key_argument(json.loads(stripped))
            except (json.JSONDecodeError, RecursionError):
                return stripped
        patched = _PATCH_FILE.findall(stripped)
        return ", ".join(patched) if patched else stripped
    if isinstance(arguments, Mapping):
        for key in _KEY_ARGUMENTS:
            value = arguments.get(key)
            text = _command_text(value) if key in ("command", "cmd") else value
            if isinstance(text, str) and text.strip():
                return key_argument(text) if key in ("content", "text") else text
        for value in arguments.values():
            if isinstance(value, str) and value.strip():
                return value
        return json.dumps(arguments, ensure_ascii=False, default=str) if arguments else ""
    if isinstance(arguments, list):
        return _command_text(arguments) or json.dumps(arguments, ensure_ascii=False, default=str)
    return "" if arguments is None else str(arguments)


def tool_line(name: Any, arguments: Any = None) -> str:
    """One short line for a tool call inside an assistant message: `[tool: Bash — ls -la src]`."""
    label = _one_line(name) if isinstance(name, str) and name.strip() else "tool"
    argument = _shorten(key_argument(arguments))
    return f"[tool: {label} — {argument}]" if argument else f"[tool: {label}]"


def tool_excerpt(output: Any) -> str:
    """A tool result as at most `TOOL_OUTPUT_CHARS` of searchable text (strings, content blocks, or JSON)."""
    if isinstance(output, list):
        texts = [block.get("text") if isinstance(block, Mapping) else block for block in output]
        output = "\n".join(text for text in texts if isinstance(text, str))
    elif isinstance(output, Mapping):
        text = output.get("output", output.get("text", output.get("content")))
        output = text if isinstance(text, str) else ""
    if not isinstance(output, str):
        return ""
    return _shorten(output, TOOL_OUTPUT_CHARS)


def fill_times(times: Sequence[datetime | None], fallback: datetime) -> list[tuple[datetime, str | None]]:
    """Give every message a time, and say where a borrowed one came from.

    A message without a time takes the previous message's time (it was written
    after it), else the next one's, else `fallback` (the conversation's or the
    file's time). Returns (time, note) with note None for a message's own time.
    """
    following: list[datetime | None] = [None] * len(times)
    upcoming: datetime | None = None
    for index in range(len(times) - 1, -1, -1):
        following[index] = upcoming
        upcoming = times[index] if times[index] is not None else upcoming
    filled: list[tuple[datetime, str | None]] = []
    previous: datetime | None = None
    for moment, later in zip(times, following, strict=True):
        if moment is not None:
            previous = moment
            filled.append((moment, None))
        elif previous is not None:
            filled.append((previous, "previous message"))
        elif later is not None:
            filled.append((later, "next message"))
        else:
            filled.append((fallback, "conversation time"))
    return filled


def file_time(path: Path) -> datetime:
    """The file's modification time: the last resort for a conversation without any time."""
    try:
        return datetime.fromtimestamp(path.stat().st_mtime, tz=UTC)
    except (OSError, OverflowError, ValueError):
        return datetime(1970, 1, 1, tzinfo=UTC)


def synthetic_times(base: datetime, count: int) -> list[datetime]:
    """Times for a format that has none: `base` plus one second per message, to keep the order."""
    return [base + timedelta(seconds=index) for index in range(count)]


@dataclass(slots=True)
class Draft:
    """A message being assembled by an assistant-chat reader (replies may span several records)."""

    id: str
    role: str  # "user" | "assistant"
    sent_at: datetime | None
    parts: list[str] = field(default_factory=list)
    metadata: dict[str, Any] = field(default_factory=dict)
    records: int = 1
    searchable: list[str] = field(default_factory=list)

    def add(self, text: str) -> None:
        if text.strip():
            self.parts.append(text.strip("\n"))

    def add_output(self, output: Any) -> None:
        """Keep an excerpt of a tool's output as searchable text (never shown in the transcript)."""
        excerpt = tool_excerpt(output)
        if excerpt:
            self.searchable.append(excerpt)

    @property
    def tools_only(self) -> bool:
        """True for a model response that only called tools: not a reply the tool shows."""
        return self.role == "assistant" and bool(self.parts) and all(p.startswith(TOOL_PREFIX) for p in self.parts)

    def absorb(self, other: Draft, *, shown: bool) -> None:
        """Take in a tools-only response: its lines shown after this reply's, or only searchable."""
        if shown:
            self.parts.extend(other.parts)
            self.searchable.extend(other.searchable)
        else:
            self.searchable[:0] = [*other.parts, *other.searchable]
        self.records += other.records

    def note_media(self, kind: str) -> None:
        media = self.metadata.setdefault("media", [])
        if kind not in media:
            media.append(kind)

    @property
    def text(self) -> str:
        # Tool lines sit on their own line next to the prose; prose blocks keep a blank line between them.
        pieces: list[str] = []
        for index, part in enumerate(self.parts):
            if index:
                tight = part.startswith(TOOL_PREFIX) or self.parts[index - 1].startswith(TOOL_PREFIX)
                pieces.append("\n" if tight else "\n\n")
            pieces.append(part)
        return "".join(pieces)


def fold_tool_steps(drafts: Sequence[Draft], result: ReadResult) -> list[Draft]:
    """Fold every tools-only response into a visible reply of its turn (see the module docstring).

    A turn whose responses all only called tools has no reply: counted, and its tool
    lines and output stay searchable with the user's turn.
    """
    kept: list[Draft] = []
    question: Draft | None = None
    visible: Draft | None = None
    waiting: list[Draft] = []

    def give_up() -> None:
        for step in waiting:
            result.ignore("tool-only reply")
            if question is not None:
                question.searchable.extend([*step.parts, *step.searchable])
        waiting.clear()

    for draft in drafts:
        if draft.role != "assistant":
            give_up()
            question, visible = draft, None
            kept.append(draft)
        elif draft.tools_only:
            if visible is not None:
                visible.absorb(draft, shown=True)
            else:
                waiting.append(draft)
        else:
            if draft.parts:
                for step in reversed(waiting):
                    draft.absorb(step, shown=False)
                waiting.clear()
                visible = draft
            kept.append(draft)
    give_up()
    return kept


def _searchable_text(draft: Draft) -> str:
    text = "\n".join(draft.searchable)
    return text if len(text) <= TOOL_TEXT_CHARS else text[: TOOL_TEXT_CHARS - 1].rstrip() + "…"


def finish_drafts(drafts: Sequence[Draft], conversation: str, fallback: datetime, result: ReadResult) -> list[Message]:
    """Turn drafts into messages: fold tool steps, borrow missing times, drop empty ones (counted),
    link answers to questions."""
    texts = [(draft, draft.text) for draft in fold_tool_steps(drafts, result)]
    kept = [(draft, text) for draft, text in texts if text.strip()]
    if len(kept) < len(texts):
        result.ignore("empty message", len(texts) - len(kept))
    messages: list[Message] = []
    question: str | None = None
    times = fill_times([draft.sent_at for draft, _ in kept], fallback)
    for (draft, text), (sent_at, note) in zip(kept, times, strict=True):
        metadata = dict(draft.metadata)
        if note:
            metadata["time_derived"] = note
        if draft.records > 1:
            metadata["merged_records"] = draft.records
        if draft.searchable:
            metadata[TOOL_TEXT_KEY] = _searchable_text(draft)
        messages.append(
            Message(
                id=draft.id,
                conversation=conversation,
                sender=draft.role,
                sent_at=sent_at,
                text=text,
                role=draft.role,
                # An answer replies to the question before it; a new question starts fresh, so
                # topic changes inside one chat stay visible to thread reconstruction.
                reply_to=question if draft.role == "assistant" else None,
                metadata=metadata,
            )
        )
        if draft.role == "user":
            question = draft.id
    return messages
