"""Chat chunks: one chunk per reconstructed thread.

`text` is the transcript people read (every message, noise included);
`embedding_input` leaves out noise, system lines, recalled messages and bare
media placeholders, so none of them ever counts towards a score.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import replace

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


def chunk_thread_windows(
    thread: Thread, messages: Mapping[str, Message], count_tokens: Callable[[str], int], max_tokens: int
) -> list[Chunk]:
    """One chunk per thread; a thread longer than `max_tokens` becomes overlapping windows of its messages.

    Each window repeats the last message of the one before, so an answer is never cut
    from the line it answers; windows keep the whole thread's resolution and media flags.
    """
    whole = chunk_thread(thread, messages)
    if whole is None or count_tokens(whole.embedding_input) <= max_tokens:
        return [whole] if whole is not None else []
    spoken = [messages[mid] for mid in thread.message_ids if not messages[mid].is_system and not messages[mid].recalled]
    windows: list[list[Message]] = [[]]
    used = 0
    for message in spoken:
        cost = 0 if is_noise(message.text) else count_tokens(f"{message.display_name}: {message.text}")
        if windows[-1] and used + cost > max_tokens:
            carried = windows[-1][-1]
            windows.append([carried])
            used = 0 if is_noise(carried.text) else count_tokens(f"{carried.display_name}: {carried.text}")
        windows[-1].append(message)
        used += cost
    chunks = []
    for window in windows:
        embedding_input = "\n".join(f"{m.display_name}: {m.text}" for m in window if not is_noise(m.text))
        chunks.append(
            replace(
                whole,
                id=chunk_id("chat", thread.conversation, *(m.id for m in window)),
                text="\n".join(transcript_line(m) for m in window),
                embedding_input=embedding_input,
                occurred_at=window[-1].sent_at,
                started_at=window[0].sent_at,
                evidence_ids=tuple(m.id for m in window),
            )
        )
    return chunks
