"""The one data model every stage passes along.

Readers produce `Conversation`s and `Message`s; thread reconstruction groups
messages into `Thread`s; chunkers turn threads and documents into `Chunk`s,
which the stores keep and search returns as `Hit`s.
"""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass, field, fields
from datetime import datetime
from typing import Any, Literal

MessageKind = Literal["text", "image", "video", "voice", "file", "link", "system"]
MEDIA_KINDS: frozenset[str] = frozenset({"image", "video", "voice", "file"})
MESSAGE_KINDS: frozenset[str] = frozenset({"text", "image", "video", "voice", "file", "link", "system"})

ConversationKind = Literal["group", "direct", "assistant"]
CONVERSATION_KINDS: frozenset[str] = frozenset({"group", "direct", "assistant"})

# Who is speaking: a member of a group or direct chat, the human or the AI in an
# assistant chat, or the platform itself (joins, renames, pins...).
Role = Literal["member", "user", "assistant", "system"]

# Message metadata key: what full text indexes of an assistant message but its transcript does not
# show (tool calls before the reply's first words, excerpts of tool output).
TOOL_TEXT_KEY = "tool_text"

SourceType = Literal["document", "chat"]
ResolutionState = Literal["resolved", "workaround", "open"]


@dataclass(frozen=True, slots=True)
class Conversation:
    ref: str
    title: str = ""
    kind: str = "group"
    source_format: str = ""
    metadata: dict[str, Any] = field(default_factory=dict)

    @property
    def project(self) -> str | None:
        """The folder a coding assistant's session ran in, when it recorded one."""
        return self.metadata.get("cwd") if self.kind == "assistant" else None

    @property
    def display_title(self) -> str:
        """How the conversation is named wherever it is shown: its title, and for a coding assistant's
        session (titled by its first question) also the project folder it ran in."""
        title = self.title or self.ref
        return f"{title} (in {self.project})" if self.project else title


@dataclass(frozen=True, slots=True)
class Message:
    id: str
    conversation: str
    sender: str
    sent_at: datetime  # always timezone-aware
    text: str = ""
    kind: str = "text"
    role: str = "member"
    sender_name: str = ""
    reply_to: str | None = None  # quoted / replied-to message id
    mentions: tuple[str, ...] = ()  # sender refs mentioned with @
    recalled: bool = False
    edited_at: datetime | None = None
    platform_thread: str | None = None  # a thread the platform itself recorded (Slack thread_ts...)
    metadata: dict[str, Any] = field(default_factory=dict)

    @property
    def display_name(self) -> str:
        return self.sender_name or self.sender

    @property
    def is_system(self) -> bool:
        return self.kind == "system" or self.role == "system"

    @property
    def is_media(self) -> bool:
        return self.kind in MEDIA_KINDS

    def to_dict(self) -> dict[str, Any]:
        """The one JSON shape of a normalized message (every field, times as ISO strings)."""
        return {
            "id": self.id,
            "conversation": self.conversation,
            "sender": self.sender,
            "sent_at": self.sent_at.isoformat(),
            "text": self.text,
            "kind": self.kind,
            "role": self.role,
            "sender_name": self.sender_name,
            "reply_to": self.reply_to,
            "mentions": list(self.mentions),
            "recalled": self.recalled,
            "edited_at": _iso(self.edited_at),
            "platform_thread": self.platform_thread,
            "metadata": self.metadata,
        }


@dataclass(frozen=True, slots=True)
class Skip:
    """A piece of input a reader could not use, and why. Never dropped silently."""

    file: str
    line: int | None
    reason: str

    def __str__(self) -> str:
        where = f"{self.file}:{self.line}" if self.line is not None else self.file
        return f"{where}: {self.reason}"

    def to_dict(self) -> dict[str, Any]:
        return {"file": self.file, "line": self.line, "reason": self.reason}


# How many skips a report lists one by one unless asked for all of them; the rest are counted by reason.
SKIPS_SHOWN = 20
# Distinct reasons a summary counts separately; rarer ones are added up as "other reasons".
REASONS_SHOWN = 50
_VARYING = re.compile(r"'[^']*'|\"[^\"]*\"|\d+(?:[.,:]\d+)*")


def reason_kind(reason: str) -> str:
    """A skip's reason with its particulars (numbers, quoted values) blanked, so like skips count together."""
    return _VARYING.sub("…", reason)


def summarize_skips(skips: Sequence[Skip], shown: int | None = SKIPS_SHOWN) -> dict[str, Any]:
    """A bounded account of skips: the total, counts by kind of reason, and the first `shown` (None: all).

    CLI, HTTP and MCP all report skips through this, so 300,000 bad lines stay a few kilobytes.
    """
    kinds = Counter(reason_kind(skip.reason) for skip in skips)
    common = kinds.most_common(REASONS_SHOWN)
    by_reason = [{"reason": kind, "count": count} for kind, count in common]
    rest = sum(kinds.values()) - sum(count for _, count in common)
    if rest:
        by_reason.append({"reason": "other reasons", "count": rest})
    listed = list(skips) if shown is None else list(skips[:shown])
    return {
        "count": len(skips),
        "by_reason": by_reason,
        "first": [skip.to_dict() for skip in listed],
        "complete": len(listed) == len(skips),
    }


@dataclass(slots=True)
class ReadResult:
    format: str
    conversations: list[Conversation] = field(default_factory=list)
    messages: list[Message] = field(default_factory=list)
    skipped: list[Skip] = field(default_factory=list)
    # Records left out on purpose because they are not conversation text
    # (progress lines, tool results, joins...), counted by kind for the report.
    ignored: dict[str, int] = field(default_factory=dict)
    # Whole files no reader took (binary, media, unknown formats), each with why; damaged
    # files a reader would have read are in `skipped`.
    not_read: list[Skip] = field(default_factory=list)

    def ignore(self, kind: str, count: int = 1) -> None:
        self.ignored[kind] = self.ignored.get(kind, 0) + count


@dataclass(frozen=True, slots=True)
class Thread:
    """A group of messages of one conversation about one topic, in time order.

    `reply_to` maps a message id to the earlier message it answers, when the
    assigner knows (quotes, mentions, learned links); thread starters are absent.
    """

    conversation: str
    message_ids: tuple[str, ...]
    reply_to: dict[str, str] = field(default_factory=dict)

    def to_dict(self, label: str) -> dict[str, Any]:
        """The thread as JSON, named `label` (threads carry no id until a store keeps them)."""
        return {
            "thread": label,
            "conversation": self.conversation,
            "message_ids": list(self.message_ids),
            "reply_to": self.reply_to,
        }

    def links(self, label: str) -> list[dict[str, Any]]:
        """One record per message: its id, the thread it is in, and the message it answers."""
        return [{"id": mid, "thread": label, "reply_to": self.reply_to.get(mid)} for mid in self.message_ids]


@dataclass(frozen=True, slots=True)
class Chunk:
    id: str
    source_type: str  # "document" | "chat"
    source_ref: str  # conversation ref for chat, document id for documents
    text: str  # what people read
    embedding_input: str  # what is embedded and full-text indexed ("" = not indexed)
    occurred_at: datetime
    title: str = ""
    heading_path: tuple[str, ...] | None = None
    evidence_ids: tuple[str, ...] | None = None
    resolution_state: str | None = None
    has_unresolved_media: bool = False
    started_at: datetime | None = None
    lexical_input: str = ""  # full-text indexed instead, when longer than what the embedding model reads

    @property
    def indexed_text(self) -> str:
        """What full text indexes: `lexical_input` when set, else the embedding input."""
        return self.lexical_input or self.embedding_input

    def to_dict(self) -> dict[str, Any]:
        """The one JSON shape of a chunk: what people read and where it comes from (not what is indexed)."""
        return {
            "chunk_id": self.id,
            "source_type": self.source_type,
            "source_ref": self.source_ref,
            "title": self.title,
            "text": self.text,
            "evidence_ids": _list(self.evidence_ids),
            "occurred_at": self.occurred_at.isoformat(),
            "resolution_state": self.resolution_state,
            "has_unresolved_media": self.has_unresolved_media,
            "heading_path": _list(self.heading_path),
        }


@dataclass(frozen=True, slots=True)
class Hit:
    chunk: Chunk
    score: float
    dense_score: float | None = None  # cosine similarity, when the chunk was a dense candidate
    lexical_rank: int | None = None
    dense_rank: int | None = None

    def to_dict(self) -> dict[str, Any]:
        """The one JSON shape of a search hit: its chunk and the fused score."""
        return {**self.chunk.to_dict(), "score": self.score}


@dataclass(frozen=True, slots=True)
class Section:
    """A document section: the text under one heading, before its first sub-heading."""

    heading_path: tuple[str, ...]
    text: str


@dataclass(frozen=True, slots=True)
class Document:
    id: str  # as stored: the path relative to the first folder it was ingested from (see ingest.known_document)
    title: str
    updated_at: datetime
    path: str
    sections: tuple[Section, ...]
    content_hash: str


# --- listings: what a store lists, each with its one JSON shape -----------------------------------
# Times are the ISO text as stored, with the UTC offset each was given.


class _Listed:
    """A listing whose JSON is every field it holds, in order."""

    __slots__ = ()

    def to_dict(self) -> dict[str, Any]:
        return {item.name: getattr(self, item.name) for item in fields(self)}


@dataclass(frozen=True, slots=True)
class ConversationSummary:
    """A conversation as listed: what it is, how many messages it holds, its earliest and latest
    message in real time (not by their text)."""

    ref: str
    title: str
    kind: str
    source_format: str
    messages: int
    first_message_at: str | None
    last_message_at: str | None
    metadata: dict[str, Any] = field(default_factory=dict)

    @property
    def conversation(self) -> Conversation:
        return Conversation(self.ref, self.title, self.kind, self.source_format, self.metadata)

    def to_dict(self) -> dict[str, Any]:
        """Named as shown everywhere (`display_title`); of the metadata only the project folder."""
        conversation = self.conversation
        return {
            "ref": self.ref,
            "title": conversation.display_title,
            "kind": self.kind,
            "source_format": self.source_format,
            "messages": self.messages,
            "first_message_at": self.first_message_at,
            "last_message_at": self.last_message_at,
            "project": conversation.project,
        }


@dataclass(frozen=True, slots=True)
class DocumentSummary(_Listed):
    """A document as listed: its id (for `remove`), title, file and last update."""

    id: str
    title: str
    path: str
    updated_at: str


@dataclass(frozen=True, slots=True)
class ForgottenConversation(_Listed):
    """What the store keeps of a conversation forgotten on request: never its messages."""

    conversation: str
    title: str
    source_format: str
    messages: int
    forgotten_at: str


FORGOTTEN_REASON = "forgotten on request"


@dataclass(frozen=True, slots=True)
class ReviewItem(_Listed):
    """Something a person may want to look at: a flagged message (with what the store holds of it,
    None when it holds nothing), or a conversation forgotten on request (`message_id` None, with the
    conversation's title and message count)."""

    conversation: str
    message_id: str | None
    reason: str
    flagged_at: str
    sender_name: str | None = None
    sender: str | None = None
    sent_at: str | None = None
    text: str | None = None
    title: str | None = None
    messages: int | None = None

    @classmethod
    def forgotten(cls, record: ForgottenConversation) -> ReviewItem:
        return cls(
            record.conversation,
            None,
            FORGOTTEN_REASON,
            record.forgotten_at,
            title=record.title,
            messages=record.messages,
        )


def _iso(moment: datetime | None) -> str | None:
    return moment.isoformat() if moment is not None else None


def _list(values: tuple[str, ...] | None) -> list[str] | None:
    return list(values) if values is not None else None
