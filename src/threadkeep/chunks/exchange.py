"""Assistant chats: one chunk per exchange (a user turn and the reply it got).

A reply longer than the embedding model reads is split on paragraph and sentence
boundaries into overlapping windows; every window keeps the user's question in
front so it is found by the question as well as by its own words.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping

from threadkeep.chunks import chunk_id
from threadkeep.chunks.chat import chunk_thread, transcript_line
from threadkeep.chunks.document import markdown_blocks
from threadkeep.chunks.windows import split_into_windows, truncate_to_tokens
from threadkeep.model import Chunk, Message, Thread

CountTokens = Callable[[str], int]
QUESTION_SHARE = 3  # a question keeps at most a third of a window's tokens
OVERLAP_TOKENS = 48


def chunk_exchange(
    thread: Thread, messages: Mapping[str, Message], count_tokens: CountTokens, max_tokens: int
) -> list[Chunk]:
    whole = chunk_thread(thread, messages)
    if whole is None or count_tokens(whole.embedding_input) <= max_tokens:
        return [whole] if whole is not None else []
    spoken = [messages[mid] for mid in thread.message_ids if not messages[mid].is_system and not messages[mid].recalled]
    asked = [m for m in spoken if m.role != "assistant"]
    replies = [m for m in spoken if m.role == "assistant"]
    # The windowed body is the reply; a turn nobody answered is windowed itself.
    head_messages, body_messages = (asked, replies) if replies else ([], asked)
    head = truncate_to_tokens(
        "\n".join(f"{m.display_name}: {m.text}" for m in head_messages), count_tokens, max_tokens // QUESTION_SHARE
    )
    budget = max_tokens - (count_tokens(head) if head else 0) - 8
    speaker, started = body_messages[0].display_name, body_messages[0].sent_at
    body = "\n\n".join(m.text for m in body_messages)
    windows = split_into_windows(markdown_blocks(body), count_tokens, budget, OVERLAP_TOKENS)
    chunks = []
    for index, window in enumerate(windows):
        before = "… " if index else ""
        after = " …" if index < len(windows) - 1 else ""
        lines = [transcript_line(m) for m in head_messages]
        lines.append(f"[{started:%Y-%m-%d %H:%M}] {speaker}: {before}{window}{after}")
        chunks.append(
            Chunk(
                id=chunk_id("chat", thread.conversation, *thread.message_ids, str(index)),
                source_type="chat",
                source_ref=thread.conversation,
                text="\n".join(lines),
                embedding_input="\n".join(part for part in (head, f"{speaker}: {window}") if part),
                occurred_at=whole.occurred_at,
                started_at=whole.started_at,
                evidence_ids=whole.evidence_ids,
                resolution_state=whole.resolution_state,
                has_unresolved_media=whole.has_unresolved_media,
            )
        )
    return chunks
