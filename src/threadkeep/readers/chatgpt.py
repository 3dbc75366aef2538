"""ChatGPT data export: `conversations.json` (one conversation object or a list of them).

A conversation is a tree (`mapping` of node id -> {message, parent, children}):
every edit or regeneration starts a new branch. The branch the user kept ends
at `current_node`; it is read by walking parent links back to the root (the
first child is not always it). Other branches are counted, not read.
"""

from __future__ import annotations

import re
from datetime import datetime
from pathlib import Path
from typing import Any

from threadkeep.model import Conversation, ReadResult, Skip
from threadkeep.readers._assistant import Draft, file_time, finish_drafts, tool_line
from threadkeep.readers._io import decode, load_export, parse_time

NAME = "chatgpt"
HEAD_BYTES = 64 * 1024
EXPORT_FILE = "conversations.json"
_MAPPING = re.compile(r'"mapping"\s*:\s*\{')
_CHAT_MESSAGES = re.compile(r'"chat_messages"\s*:')
# Content that is the model's scratch work or settings, not conversation text.
NOT_CONVERSATION = frozenset(
    {
        "user_editable_context",
        "model_editable_context",
        "thoughts",
        "reasoning_recap",
        "system_error",
        "execution_output",
        "tether_browsing_display",
        "computer_output",
    }
)
MEDIA_PARTS = {
    "image_asset_pointer": "image",
    "audio_asset_pointer": "voice",
    "real_time_user_audio_video_asset_pointer": "video",
    "video_container_asset_pointer": "video",
}
PLACEHOLDERS = {"image": "[image]", "voice": "[voice]", "video": "[video]"}


def _is_export_file(path: Path) -> bool:
    if path.suffix.lower() != ".json" or not path.is_file():
        return False
    try:
        with path.open("rb") as handle:
            head, _ = decode(handle.read(HEAD_BYTES), str(path))
    except OSError:
        return False
    return bool(_MAPPING.search(head)) and not _CHAT_MESSAGES.search(head)


def detect(path: Path) -> bool:
    if path.is_dir():
        return _is_export_file(path / EXPORT_FILE)
    return _is_export_file(path)


def read(path: Path) -> ReadResult:
    result = ReadResult(format=NAME)
    path, data = load_export(path, EXPORT_FILE, result.skipped)
    if data is None:
        return result
    conversations = [data] if isinstance(data, dict) else data
    if not isinstance(conversations, list):
        result.skipped.append(Skip(str(path), None, f"expected a list of conversations, got {type(data).__name__}"))
        return result
    mtime = file_time(path)
    for index, raw in enumerate(conversations):
        if not isinstance(raw, dict) or not isinstance(raw.get("mapping"), dict):
            what = f"a {type(raw).__name__}" if not isinstance(raw, dict) else "an object without a mapping"
            result.skipped.append(Skip(str(path), None, f"conversation {index} is {what}; left out"))
            continue
        _Conversation(path, raw, index, mtime, result).read()
    return result


def _time(value: Any) -> datetime | None:
    if value is None:
        return None
    try:
        return parse_time(value, assume_utc=True)
    except (ValueError, TypeError, OverflowError, OSError):
        return None


def _message_time(node: Any) -> float:
    message = node.get("message") if isinstance(node, dict) else None
    moment = _time(message.get("create_time")) if isinstance(message, dict) else None
    return moment.timestamp() if moment else float("-inf")


class _Conversation:
    def __init__(self, path: Path, raw: dict[str, Any], index: int, mtime: datetime, result: ReadResult) -> None:
        self.path = path
        self.raw = raw
        self.mapping: dict[str, Any] = raw["mapping"]
        own = raw.get("conversation_id", raw.get("id"))
        self.ref = own if isinstance(own, str) and own else f"{path.stem}:{index}"
        self.started = _time(raw.get("create_time")) or mtime
        self.result = result
        self.metadata: dict[str, Any] = {}

    def skip(self, reason: str) -> None:
        self.result.skipped.append(Skip(str(self.path), None, f"conversation {self.ref}: {reason}"))

    def _leaf(self) -> str | None:
        current = self.raw.get("current_node")
        if isinstance(current, str) and current in self.mapping:
            return current
        leaves = []
        for position, (node_id, node) in enumerate(self.mapping.items()):
            children = node.get("children") if isinstance(node, dict) else None
            if not isinstance(children, list) or not any(isinstance(c, str) and c in self.mapping for c in children):
                leaves.append((_message_time(node), position, node_id))
        if not leaves:
            return None
        self.metadata["branch"] = "latest leaf (current_node missing)"
        return max(leaves)[2]

    def _branch(self) -> list[str]:
        """Node ids from the root to the kept leaf."""
        node_id = self._leaf()
        path: list[str] = []
        seen: set[str] = set()
        while isinstance(node_id, str) and node_id in self.mapping and node_id not in seen:
            seen.add(node_id)
            path.append(node_id)
            node = self.mapping[node_id]
            node_id = node.get("parent") if isinstance(node, dict) else None
        if isinstance(node_id, str) and node_id in seen:
            self.skip("parent links form a cycle; read up to where it closes")
        path.reverse()
        return path

    def _parts(self, content: dict[str, Any], draft: Draft, where: str) -> list[str]:
        kind = content.get("content_type")
        if kind == "code" or ("parts" not in content and isinstance(content.get("text"), str)):
            text = content.get("text")
            return [text] if isinstance(text, str) else []
        if kind == "tether_quote":
            title = content.get("title") or content.get("domain") or "quote"
            text = content.get("text") if isinstance(content.get("text"), str) else ""
            return [f"[quote: {title}]\n{text}".strip()]
        parts = content.get("parts")
        if not isinstance(parts, list):
            if parts is not None or kind in ("text", "multimodal_text"):
                self.skip(f"{where}: parts is {type(parts).__name__}, not a list; left out")
            else:
                self.result.ignore(f"{kind} content")
            return []
        texts: list[str] = []
        for number, part in enumerate(parts, start=1):
            if isinstance(part, str):
                texts.append(part)
            elif isinstance(part, dict):
                part_kind = part.get("content_type")
                if isinstance(part_kind, str) and part_kind in MEDIA_PARTS:
                    media = MEDIA_PARTS[part_kind]
                    draft.note_media(media)
                    texts.append(PLACEHOLDERS[media])
                elif isinstance(part.get("text"), str):
                    texts.append(part["text"])
                else:
                    self.result.ignore(f"{part_kind} part")
            elif part is not None:
                self.skip(f"{where}: part {number} is {type(part).__name__}; left out")
        return texts

    def read(self) -> None:
        branch = self._branch()
        on_branch = set(branch)
        others = sum(
            1
            for node_id, node in self.mapping.items()
            if node_id not in on_branch and isinstance(node, dict) and node.get("message")
        )
        if others:
            self.result.ignore("other branch", others)
        drafts: list[Draft] = []
        reply: Draft | None = None
        for node_id in branch:
            node = self.mapping[node_id]
            if not isinstance(node, dict):
                self.skip(f"node {node_id} is {type(node).__name__}, not an object; left out")
                continue
            message = node.get("message")
            if message is None:
                continue  # the tree's empty root
            where = f"node {node_id}"
            if not isinstance(message, dict):
                self.skip(f"{where}: message is {type(message).__name__}, not an object; left out")
                continue
            draft_or_none = self._message(message, node_id, reply, where)
            if draft_or_none is None:
                continue
            if draft_or_none is not reply:
                drafts.append(draft_or_none)
            reply = draft_or_none if draft_or_none.role == "assistant" else None
        self._emit(drafts)

    def _message(self, message: dict[str, Any], node_id: str, reply: Draft | None, where: str) -> Draft | None:
        author = message.get("author")
        role = author.get("role") if isinstance(author, dict) else None
        metadata = message.get("metadata") if isinstance(message.get("metadata"), dict) else {}
        content = message.get("content")
        if not isinstance(role, str):
            self.skip(f"{where}: message has no author role; left out")
            return None
        if metadata.get("is_visually_hidden_from_conversation"):
            self.result.ignore("hidden message")
            return None
        if role not in ("user", "assistant"):
            self.result.ignore(f"{role} message")
            return None
        if not isinstance(content, dict):
            self.skip(f"{where}: content is {type(content).__name__}, not an object; left out")
            return None
        kind = content.get("content_type")
        if isinstance(kind, str) and kind in NOT_CONVERSATION:
            self.result.ignore(str(kind))
            return None
        own_id = message.get("id")
        message_id = own_id if isinstance(own_id, str) and own_id else node_id
        raw_time = message.get("create_time")
        sent_at = _time(raw_time)
        if sent_at is None and raw_time is not None:
            self.skip(f"{where}: bad create_time {raw_time!r}; time taken from a neighbour")
        if role == "user":
            draft = Draft(id=message_id, role="user", sent_at=sent_at)
            for text in self._parts(content, draft, where):
                draft.add(text)
            self._attachments(metadata, draft)
            return draft
        if reply is None:
            reply = Draft(id=message_id, role="assistant", sent_at=sent_at)
        else:
            reply.records += 1
            reply.sent_at = reply.sent_at or sent_at
        model = metadata.get("model_slug")
        if isinstance(model, str) and model:
            reply.metadata.setdefault("model", model)
        recipient = message.get("recipient")
        texts = self._parts(content, reply, where)
        if isinstance(recipient, str) and recipient not in ("all", ""):
            # The assistant addressing a tool (python, browser, dalle...): one line in its reply.
            reply.add(tool_line(recipient, "\n".join(texts)))
        else:
            for text in texts:
                reply.add(text)
        return reply

    def _attachments(self, metadata: dict[str, Any], draft: Draft) -> None:
        attachments = metadata.get("attachments")
        if not isinstance(attachments, list):
            return
        names = [a.get("name") for a in attachments if isinstance(a, dict) and isinstance(a.get("name"), str)]
        if names:
            draft.metadata["attachments"] = names
            if "media" not in draft.metadata:
                draft.note_media("file")
            if not draft.parts:
                draft.add("\n".join(f"[file: {name}]" for name in names))

    def _emit(self, drafts: list[Draft]) -> None:
        messages = finish_drafts(drafts, self.ref, self.started, self.result)
        if not messages:
            self.result.ignore("empty conversation")
            return
        self.result.messages.extend(messages)
        for key in ("create_time", "update_time"):
            moment = _time(self.raw.get(key))
            if moment:
                self.metadata[key] = moment.isoformat()
        for key in ("default_model_slug", "gizmo_id"):
            if isinstance(self.raw.get(key), str):
                self.metadata[key] = self.raw[key]
        title = self.raw.get("title")
        title = title if isinstance(title, str) and title else self.ref
        self.result.conversations.append(
            Conversation(ref=self.ref, title=title, kind="assistant", source_format=NAME, metadata=self.metadata)
        )
