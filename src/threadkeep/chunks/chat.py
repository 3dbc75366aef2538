"""Chat chunks: one chunk per reconstructed thread.

`text` is the transcript people read (every message, noise included);
`embedding_input` leaves out noise, system lines, recalled messages and bare
media placeholders, so none of them ever counts towards a score.
"""

from __future__ import annotations

from collections.abc import Mapping

from threadkeep.chunks import chunk_id
from threadkeep.model import Chunk, Message, Thread
from threadkeep.text import is_noise
from threadkeep.threads.resolution import resolution_state


def transcript_line(message: Message) -> str:
    when = message.sent_at.strftime("%Y-%m-%d %H:%M")
    return f"[{when}] {message.display_name}: {message.text}"


def chunk_thread(thread: Thread, messages: Mapping[str, Message]) -> Chunk | None:
    """The chunk of one thread, or None when nothing in it was said by a person."""
    thread_messages = [messages[mid] for mid in thread.message_ids]
    spoken = [m for m in thread_messages if not m.is_system and not m.recalled]
    if not spoken:
        return None
    text = "\n".join(transcript_line(m) for m in spoken)
    embedding_input = "\n".join(f"{m.display_name}: {m.text}" for m in spoken if not is_noise(m.text))
    return Chunk(
        id=chunk_id("chat", thread.conversation, *thread.message_ids),
        source_type="chat",
        source_ref=thread.conversation,
        text=text,
        embedding_input=embedding_input,
        occurred_at=spoken[-1].sent_at,
        started_at=spoken[0].sent_at,
        evidence_ids=tuple(m.id for m in spoken),
        resolution_state=resolution_state(spoken),
        has_unresolved_media=any(m.is_media for m in spoken),
    )
