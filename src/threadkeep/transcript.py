"""The transcript lingua franca.

A transcript is plain text: each user turn's lines start with `> ` (every line
of a multi-line turn, so the turn survives copy-paste), the reply follows, and a
blank line separates exchanges::

    > why does the build fail on CI?
    > it passes locally
    The cache key ignores the lock file.

    > thanks
    You're welcome.

`to_transcript` writes it and `parse_transcript` reads it back; they round-trip.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from threadkeep.model import Message

# Reply lines that start like a user turn are escaped with one backslash on
# write (and lines already starting with backslashes before `>` get one more),
# so a quoted line in an answer cannot turn into a user turn on re-read.
_NEEDS_ESCAPE = re.compile(r"^\\*>")
_ESCAPED = re.compile(r"^\\+>")


@dataclass(frozen=True, slots=True)
class Turn:
    role: str  # "user" | "assistant"
    text: str


def to_transcript(messages: list[Message]) -> str:
    """Write messages as a transcript; user messages become `>` turns, everything else replies."""
    blocks: list[list[str]] = []
    current: list[str] | None = None
    for message in messages:
        text = message.text.replace("\r\n", "\n").replace("\r", "\n").strip("\n")
        if not text.strip():
            continue
        if message.role == "user":
            current = [f"> {line}" if line else ">" for line in text.split("\n")]
            blocks.append(current)
            continue
        lines = ["\\" + line if _NEEDS_ESCAPE.match(line) else line for line in text.split("\n")]
        if current is None:
            # A reply before any user turn: an exchange of its own.
            current = []
            blocks.append(current)
        elif current and not current[-1].startswith(">"):
            # Two replies in a row read back as one; a blank line keeps them apart in the text.
            current.append("")
        current.extend(lines)
    return "\n\n".join("\n".join(block) for block in blocks) + ("\n" if blocks else "")


def is_turn_line(line: str) -> bool:
    return line.startswith(">")


def parse_transcript(text: str) -> list[Turn]:
    """Read a transcript back into turns (the inverse of `to_transcript`)."""
    lines = text.replace("\r\n", "\n").replace("\r", "\n").split("\n")
    turns: list[Turn] = []
    user: list[str] = []
    reply: list[str] = []

    def flush_reply() -> None:
        body = "\n".join(reply).strip("\n")
        if body.strip():
            turns.append(Turn("assistant", body))
        reply.clear()

    def flush_user() -> None:
        if user:
            body = "\n".join(user).strip("\n")
            if body.strip():
                turns.append(Turn("user", body))
            user.clear()

    for line in lines:
        if is_turn_line(line):
            if reply or not user:
                flush_user()
                flush_reply()
            content = line[1:]
            user.append(content[1:] if content.startswith(" ") else content)
        else:
            flush_user()
            reply.append(line[1:] if _ESCAPED.match(line) else line)
    flush_user()
    flush_reply()
    return turns
