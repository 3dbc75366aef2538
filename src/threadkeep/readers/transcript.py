"""Plain-text transcripts of a chat with an assistant (`>` lines are the user).

A text file is a transcript when at least three of its lines start with `>`;
any other text file belongs to the document pipeline, not here. The format has
no times, so messages get the file's modification time plus one second each.
"""

from __future__ import annotations

from datetime import UTC, datetime
from pathlib import Path

from threadkeep.model import Conversation, Message, ReadResult, Skip
from threadkeep.readers._assistant import synthetic_times
from threadkeep.readers._io import decode, read_text
from threadkeep.transcript import is_turn_line, parse_transcript

NAME = "transcript"
HEAD_BYTES = 256 * 1024
MIN_TURN_LINES = 3
# Binary files can hold `>` bytes at line starts too; real text has no NULs once decoded.
_BINARY_MARK = "\0"


def detect(path: Path) -> bool:
    if not path.is_file():
        return False
    try:
        with path.open("rb") as handle:
            head = handle.read(HEAD_BYTES)
    except OSError:
        return False
    text, _ = decode(head, str(path))
    if _BINARY_MARK in text:
        return False
    lines = text.replace("\r\n", "\n").replace("\r", "\n").split("\n")
    return sum(1 for line in lines if is_turn_line(line)) >= MIN_TURN_LINES


def read(path: Path) -> ReadResult:
    result = ReadResult(format=NAME)
    try:
        text, problems = read_text(path)
        modified = datetime.fromtimestamp(path.stat().st_mtime, tz=UTC)
    except OSError as error:
        result.skipped.append(Skip(str(path), None, f"cannot read: {error.strerror or error}"))
        return result
    result.skipped.extend(problems)
    if not text.strip():
        result.skipped.append(Skip(str(path), None, "file is empty"))
        return result
    turns = parse_transcript(text)
    ref = path.stem or path.name
    result.conversations.append(
        Conversation(ref=ref, title=ref, kind="assistant", source_format=NAME, metadata={"synthetic_times": True})
    )
    previous_user: str | None = None
    for index, (turn, sent_at) in enumerate(zip(turns, synthetic_times(modified, len(turns)), strict=True)):
        message_id = f"{ref}:{index}"
        result.messages.append(
            Message(
                id=message_id,
                conversation=ref,
                sender=turn.role,
                sent_at=sent_at,
                text=turn.text,
                role=turn.role,
                reply_to=previous_user if turn.role == "assistant" else None,
                metadata={"time_derived": "file modification time + 1 s per message"},
            )
        )
        if turn.role == "user":
            previous_user = message_id
    return result
