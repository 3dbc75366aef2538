"""Assistant chats: one chunk per exchange (a user turn and the reply it got).

An exchange longer than `max_tokens` is still one chunk: its embedding input is
the user's turn and at most `REPLY_START_TOKENS` of the reply, while full text
indexes the whole exchange (`Chunk.lexical_input`). Replies run seven times longer
than the questions that asked for them (LongMemEval): embedding every window of
them would take about four times the model time, and on LongMemEval this short
input found more than a longer reply start (session any@5 .979 vs .957; benchmarks/README.md).
Tool calls and tool output the readers kept as searchable text (`TOOL_TEXT_KEY`) are
full-text indexed too, never embedded nor shown.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import replace

from threadkeep.chunks.chat import chunk_thread
from threadkeep.chunks.windows import truncate_to_tokens
from threadkeep.model import TOOL_TEXT_KEY, Chunk, Message, Thread
from threadkeep.text import is_noise

CountTokens = Callable[[str], int]
# Of a long reply only the opening is embedded: later questions ask about what the user
# said far more often than about the reply's detail, which full text still finds.
REPLY_START_TOKENS = 64
CUT_MARK = " …"


def chunk_exchange(
    thread: Thread, messages: Mapping[str, Message], count_tokens: CountTokens, max_tokens: int
) -> list[Chunk]:
    whole = chunk_thread(thread, messages)
    if whole is None:
        return []
    tool_texts = (messages[mid].metadata.get(TOOL_TEXT_KEY) for mid in thread.message_ids)
    tool_text = "\n".join(text for text in tool_texts if isinstance(text, str) and text)
    if count_tokens(whole.embedding_input) <= max_tokens:
        if tool_text and whole.embedding_input:
            return [replace(whole, lexical_input=f"{whole.embedding_input}\n{tool_text}")]
        return [whole]
    spoken = [
        messages[mid]
        for mid in thread.message_ids
        if not messages[mid].is_system and not messages[mid].recalled and not is_noise(messages[mid].text)
    ]
    asked = [m for m in spoken if m.role != "assistant"]
    replies = [m for m in spoken if m.role == "assistant"]
    question = "\n".join(f"{m.display_name}: {m.text}" for m in asked)
    reply = "\n".join(f"{m.display_name}: {m.text}" for m in replies)
    if not reply:
        embedding_input = truncate_to_tokens(question, count_tokens, max_tokens - count_tokens(CUT_MARK)) + CUT_MARK
    else:
        question_budget = max_tokens - REPLY_START_TOKENS - count_tokens(CUT_MARK)
        if question and count_tokens(question) > question_budget:
            question = truncate_to_tokens(question, count_tokens, question_budget) + CUT_MARK
        left = max_tokens - (count_tokens(question) if question else 0)
        reply_start = truncate_to_tokens(reply, count_tokens, min(REPLY_START_TOKENS, left) - count_tokens(CUT_MARK))
        if reply_start != reply:
            reply_start += CUT_MARK
        embedding_input = "\n".join(part for part in (question, reply_start) if part)
    lexical_input = f"{whole.embedding_input}\n{tool_text}" if tool_text else whole.embedding_input
    return [replace(whole, embedding_input=embedding_input, lexical_input=lexical_input)]
