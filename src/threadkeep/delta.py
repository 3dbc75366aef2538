"""Incremental updates from a bundle's `delta.jsonl` (see docs/export-bundle.md).

`upsert` inserts or replaces a message and `recalled` withdraws one; every conversation
either touches is re-threaded and re-chunked as a whole, and no other conversation is
written. `missing` only flags the message for review: it never deletes anything.

A delta is applied all or nothing per conversation: the whole file is checked first, and a
conversation named by a line that cannot be used (a field missing or of the wrong type, an
unknown operation) is left exactly as it was; so is every conversation when a bad line names
none (not JSON, no `item.conversationRef`). Each such line is in `rejected`, with its file,
line and field. A `recalled` for a message the conversation does not hold has nothing to
withdraw: it is counted in `skipped` and does not stop the rest.
"""

from __future__ import annotations

import dataclasses
from collections import defaultdict
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from threadkeep.embed import Embedder
from threadkeep.errors import DeltaLineError
from threadkeep.ingest import IngestReport, merge_messages, update_conversation
from threadkeep.model import SKIPS_SHOWN, Conversation, Message, Skip, summarize_skips
from threadkeep.readers._io import iter_json_lines
from threadkeep.readers.bundle import parse_message, read_members
from threadkeep.store import ConversationRecord, Store
from threadkeep.threads import ThreadSettings

OPERATIONS = ("upsert", "recalled", "missing")


@dataclasses.dataclass(slots=True)
class DeltaReport(IngestReport):
    upserted: int = 0
    recalled: int = 0
    flagged_missing: int = 0
    # Lines that could not be used; their conversations (or all, see `refused_all`) were not touched.
    rejected: list[Skip] = dataclasses.field(default_factory=list)
    refused: list[str] = dataclasses.field(default_factory=list)
    refused_all: bool = False

    def to_dict(self, skips_shown: int | None = SKIPS_SHOWN) -> dict:
        data = IngestReport.to_dict(self, skips_shown)
        data["rejected"] = summarize_skips(self.rejected, skips_shown)
        return data


def _conversation_ref(raw: dict[str, Any]) -> str:
    item = raw.get("item")
    ref = item.get("conversationRef") if isinstance(item, dict) else None
    if not isinstance(ref, str) or not ref:
        raise DeltaLineError("item.conversationRef must be a non-empty string")
    return ref


def _message_id(raw: dict[str, Any]) -> str:
    message_id = raw.get("messageId")
    if not isinstance(message_id, str) or not message_id:
        raise DeltaLineError("messageId must be a non-empty string")
    return message_id


def _named_conversation(raw: Any) -> str | None:
    """The conversation a line names, if it names one, even when the line is unusable."""
    item = raw.get("item") if isinstance(raw, dict) else None
    ref = item.get("conversationRef") if isinstance(item, dict) else None
    return ref if isinstance(ref, str) and ref else None


def _upserted_message(raw: dict[str, Any], names: dict[str, str]) -> Message:
    item = raw.get("item")
    if not isinstance(item, dict):
        raise DeltaLineError(f"item must be a message object, got {type(item).__name__}")
    try:
        return parse_message(item, names)
    except ValueError as error:
        raise DeltaLineError(f"item.{error}") from error


def delta_file(path: Path) -> Path:
    return path / "delta.jsonl" if path.is_dir() else path


@dataclasses.dataclass(slots=True)
class _Operations:
    upserts: dict[str, list[Message]] = dataclasses.field(default_factory=lambda: defaultdict(list))
    recalls: dict[str, list[tuple[int, str]]] = dataclasses.field(default_factory=lambda: defaultdict(list))
    missing: list[tuple[str, str]] = dataclasses.field(default_factory=list)


def _read_operations(source: Path, names: dict[str, str], report: DeltaReport) -> _Operations:
    """Every usable line as an operation; every other line rejected, naming its conversation."""
    operations = _Operations()
    refused: dict[str, None] = {}
    unread: list[Skip] = []
    read_lines: set[int] = set()
    for item in iter_json_lines(source):
        if isinstance(item, Skip):
            unread.append(item)
            continue
        number, raw = item
        read_lines.add(number)
        try:
            if not isinstance(raw, dict):
                raise DeltaLineError(f"line must be a JSON object, got {type(raw).__name__}")
            operation = raw.get("operation")
            if operation not in OPERATIONS:
                raise DeltaLineError(f"operation must be one of {', '.join(OPERATIONS)}, got {operation!r}")
            if operation == "upsert":
                message = _upserted_message(raw, names)
                operations.upserts[message.conversation].append(message)
            elif operation == "recalled":
                operations.recalls[_conversation_ref(raw)].append((number, _message_id(raw)))
            else:
                operations.missing.append((_conversation_ref(raw), _message_id(raw)))
        except DeltaLineError as error:
            report.rejected.append(Skip(str(source), number, str(error)))
            ref = _named_conversation(raw)
            if ref is None:
                report.refused_all = True
            else:
                refused[ref] = None
    for skip in unread:
        # A line that was read despite the note (bytes replaced with U+FFFD) is applied; one that was not
        # (not JSON, too long) could belong to any conversation.
        if skip.line in read_lines:
            report.skipped.append(skip)
        else:
            report.rejected.append(skip)
            report.refused_all = True
    report.rejected.sort(key=lambda skip: skip.line or 0)
    report.refused = list(refused)
    return operations


@dataclasses.dataclass(slots=True)
class _Revision:
    """What a delta does to one stored conversation; remembers what its latest run found (the one
    written: a run redone after another writer's commit starts afresh)."""

    ref: str
    source: Path
    upserts: list[Message]
    recalls: list[tuple[int, str]]
    unmatched: list[Skip] = dataclasses.field(default_factory=list)
    recalled: int = 0

    def __call__(self, record: ConversationRecord | None, stored: list[Message]) -> tuple[Conversation, list[Message]]:
        ref = self.ref
        messages = merge_messages(stored, self.upserts)
        position = {message.id: index for index, message in enumerate(messages)}
        self.unmatched, self.recalled = [], 0
        for number, message_id in self.recalls:
            if message_id not in position:
                reason = f"recalled message {message_id!r} is not in {ref}: nothing to withdraw"
                self.unmatched.append(Skip(str(self.source), number, reason))
                continue
            messages[position[message_id]] = dataclasses.replace(messages[position[message_id]], recalled=True)
            self.recalled += 1
        return (record.conversation if record else Conversation(ref, ref, "group", "bundle")), messages


def apply_delta(
    store: Store, path: str | Path, embedder: Embedder, settings: ThreadSettings | None = None
) -> DeltaReport:
    """Apply a delta file (or the `delta.jsonl` of a bundle folder) to the store, all or nothing per conversation."""
    settings = settings or ThreadSettings()
    store.bind_embedder(embedder.name, embedder.dim)
    source = delta_file(Path(path))
    if not source.is_file():
        raise FileNotFoundError(f"{source}: no such delta file")
    report = DeltaReport(format="delta")
    names = read_members(source.parent, report.skipped)
    operations = _read_operations(source, names, report)
    if report.refused_all:
        return report
    refused = set(report.refused)
    upserts = {ref: items for ref, items in operations.upserts.items() if ref not in refused}
    recalls = {ref: items for ref, items in operations.recalls.items() if ref not in refused}
    report.messages_read = sum(map(len, upserts.values()))

    for ref in dict.fromkeys([*upserts, *recalls]):
        revision = _Revision(ref, source, upserts.get(ref, []), recalls.get(ref, []))
        update_conversation(store, ref, revision, embedder, settings, report)
        report.skipped.extend(revision.unmatched)
        report.recalled += revision.recalled
        report.upserted += len(upserts.get(ref, []))
        report.conversations += 1

    flagged_at = datetime.now(UTC)
    for ref, message_id in operations.missing:
        if ref in refused:
            continue
        store.flag_for_review(ref, message_id, "missing from the latest export", flagged_at)
        report.flagged_missing += 1
    return report
