"""Incremental updates from a bundle's `delta.jsonl` (see docs/export-bundle.md).

`upsert` inserts or replaces a message and `recalled` withdraws one; every conversation
either touches is re-threaded and re-chunked as a whole, and no other conversation is
written. `missing` only flags the message for review: it never deletes anything.
"""

from __future__ import annotations

import dataclasses
from collections import defaultdict
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from threadkeep.embed import Embedder
from threadkeep.ingest import IngestReport, merge_messages, rebuild_conversation
from threadkeep.model import Conversation, Message, Skip
from threadkeep.readers._io import iter_json_lines
from threadkeep.readers.bundle import parse_message, read_members
from threadkeep.store import Store
from threadkeep.threads import ThreadSettings

OPERATIONS = ("upsert", "recalled", "missing")


@dataclasses.dataclass(slots=True)
class DeltaReport(IngestReport):
    upserted: int = 0
    recalled: int = 0
    flagged_missing: int = 0


def _conversation_ref(raw: dict[str, Any]) -> str:
    item = raw.get("item")
    ref = item.get("conversationRef") if isinstance(item, dict) else None
    if not isinstance(ref, str) or not ref:
        raise ValueError("item.conversationRef must be a non-empty string")
    return ref


def _message_id(raw: dict[str, Any]) -> str:
    message_id = raw.get("messageId")
    if not isinstance(message_id, str) or not message_id:
        raise ValueError("messageId must be a non-empty string")
    return message_id


def delta_file(path: Path) -> Path:
    return path / "delta.jsonl" if path.is_dir() else path


def apply_delta(
    store: Store, path: str | Path, embedder: Embedder, settings: ThreadSettings | None = None
) -> DeltaReport:
    """Apply a delta file (or the `delta.jsonl` of a bundle folder) to the store."""
    settings = settings or ThreadSettings()
    store.bind_embedder(embedder.name, embedder.dim)
    source = delta_file(Path(path))
    if not source.is_file():
        raise FileNotFoundError(f"{source}: no such delta file")
    report = DeltaReport(format="delta")
    names = read_members(source.parent, report.skipped)
    upserts: dict[str, list[Message]] = defaultdict(list)
    recalls: dict[str, list[tuple[int, str]]] = defaultdict(list)
    missing: list[tuple[str, str]] = []
    for item in iter_json_lines(source):
        if isinstance(item, Skip):
            report.skipped.append(item)
            continue
        number, raw = item
        try:
            if not isinstance(raw, dict) or raw.get("operation") not in OPERATIONS:
                raise ValueError(f"operation must be one of {', '.join(OPERATIONS)}")
            if raw["operation"] == "upsert":
                message = parse_message(raw.get("item"), names)
                upserts[message.conversation].append(message)
            elif raw["operation"] == "recalled":
                recalls[_conversation_ref(raw)].append((number, _message_id(raw)))
            else:
                missing.append((_conversation_ref(raw), _message_id(raw)))
        except ValueError as error:
            report.skipped.append(Skip(str(source), number, str(error)))
    report.messages_read = sum(map(len, upserts.values()))

    for ref in dict.fromkeys([*upserts, *recalls]):
        record = store.conversation_record(ref)
        stored = store.load_messages(ref) if record else []
        messages = merge_messages(stored, upserts.get(ref, []))
        by_id = {message.id: index for index, message in enumerate(messages)}
        for number, message_id in recalls.get(ref, []):
            if message_id not in by_id:
                report.skipped.append(Skip(str(source), number, f"recalled message {message_id!r} is not in {ref}"))
                continue
            messages[by_id[message_id]] = dataclasses.replace(messages[by_id[message_id]], recalled=True)
            report.recalled += 1
        report.upserted += len(upserts.get(ref, []))
        conversation = record.conversation if record else Conversation(ref, ref, "group", "bundle")
        report.conversations += 1
        rebuild_conversation(store, conversation, messages, embedder, settings, report)

    flagged_at = datetime.now(UTC)
    for ref, message_id in missing:
        store.flag_for_review(ref, message_id, "missing from the latest export", flagged_at)
        report.flagged_missing += 1
    return report
