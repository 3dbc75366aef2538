"""Chat chunks: one chunk per reconstructed thread.

`text` is the transcript people read (every message, noise included);
`embedding_input` leaves out noise, system lines, recalled messages and bare
media placeholders, so none of them ever counts towards a score.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import replace

from threadkeep.chunks import chunk_id
from threadkeep.model import Chunk, Message, Thread
from threadkeep.text import is_noise
from threadkeep.threads.resolution import conclusion, opens_with_a_problem, resolution_state


def transcript_line(message: Message) -> str:
    when = message.sent_at.strftime("%Y-%m-%d %H:%M")
    return f"[{when}] {message.display_name}: {message.text}"


def _line(message: Message) -> str:
    return f"{message.display_name}: {message.text}"


def _spoken(thread: Thread, messages: Mapping[str, Message]) -> list[Message]:
    """The thread's messages a person said (no system lines, nothing recalled), in order."""
    found = (messages[mid] for mid in thread.message_ids)
    return [m for m in found if not m.is_system and not m.recalled]


class _Lines:
    """Each spoken message's transcript line, embedded line (None for noise) and token cost, made once:
    a long thread's windows repeat its messages (one window's last line opens the next)."""

    def __init__(self, spoken: Sequence[Message]) -> None:
        self.transcript = [transcript_line(m) for m in spoken]
        self.said = [None if is_noise(m.text) else _line(m) for m in spoken]

    def chunk_text(self, picked: Iterable[int]) -> tuple[str, str]:
        """The `text` and `embedding_input` of the messages at these positions."""
        picked = list(picked)
        said = (self.said[k] for k in picked)
        return "\n".join(self.transcript[k] for k in picked), "\n".join(line for line in said if line is not None)


def _whole(thread: Thread, spoken: Sequence[Message], lines: _Lines) -> Chunk:
    text, embedding_input = lines.chunk_text(range(len(spoken)))
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


def chunk_thread(thread: Thread, messages: Mapping[str, Message]) -> Chunk | None:
    """The chunk of one thread, or None when nothing in it was said by a person."""
    spoken = _spoken(thread, messages)
    return _whole(thread, spoken, _Lines(spoken)) if spoken else None


# The lines every window of a long thread holds (its first line, the answer taken and its
# confirmation) take at most this share of a window, so the answer, often the longest line (a
# numbered procedure), still fits beside the report; what would exceed it is not held.
HELD_SHARE = 2 / 3
# A count may be off by this much when a thread's is summed from its lines' (a line that starts with
# a space, say); closer than this to the limit, the thread is counted whole, so windows are as exact.
SUM_SLACK = 2


def chunk_thread_windows(
    thread: Thread,
    messages: Mapping[str, Message],
    count_tokens: Callable[[str], int],
    max_tokens: int,
    topical: bool = True,
) -> list[Chunk]:
    """One chunk per thread; a thread longer than `max_tokens` becomes overlapping windows of its messages.

    Each window repeats the last message of the one before, so an answer is never cut from the
    line it answers. A `topical` thread (one topic, as group-chat threads are; a direct chat's
    sessions are cut by time) that opens with a problem has every window hold its first line (the
    report) and its conclusion (the answer taken, the confirmation: `resolution.conclusion`), so
    whichever window a question finds shows the report with its fix. Windows keep the whole
    thread's resolution and media flags.

    The model tokenizes every input again when it embeds it, so this tokenizes as little as it can:
    nothing when the text has fewer characters than the limit (a token holds at least one, but for
    the rare character the model's normalization expands, like a ligature), else
    each line once. The tokenizer splits at whitespace, so a thread's count is its lines' counts
    without their fixed cost (prefix, special tokens) plus one per line break.
    """
    spoken = _spoken(thread, messages)
    if not spoken:
        return []
    lines = _Lines(spoken)
    whole = _whole(thread, spoken, lines)
    fixed = count_tokens("")
    if len(whole.embedding_input) + fixed + 1 <= max_tokens:
        return [whole]
    costs = [0 if line is None else count_tokens(line) for line in lines.said]
    said = [cost for cost, line in zip(costs, lines.said, strict=True) if line is not None]
    summed = fixed + sum(cost - fixed for cost in said) + max(len(said) - 1, 0)
    if summed <= max_tokens - SUM_SLACK or (
        summed <= max_tokens + SUM_SLACK and count_tokens(whole.embedding_input) <= max_tokens
    ):
        return [whole]
    held = _held_in_every_window(spoken, lines, costs, max_tokens) if topical else set()
    budget = max_tokens - sum(costs[k] for k in held)
    windows: list[list[int]] = [[]]  # positions in `spoken`, without the held ones
    used = 0
    for position, cost in enumerate(costs):
        if position in held:
            continue
        if windows[-1] and used + cost > budget:
            carried = windows[-1][-1]
            windows.append([carried])
            used = costs[carried]
        windows[-1].append(position)
        used += cost
    windows = [sorted({*window, *held}) for window in windows]
    chunks = []
    for window in windows:
        text, embedding_input = lines.chunk_text(window)
        chunks.append(
            replace(
                whole,
                id=chunk_id("chat", thread.conversation, *(spoken[k].id for k in window)),
                text=text,
                embedding_input=embedding_input,
                occurred_at=spoken[window[-1]].sent_at,
                started_at=spoken[window[0]].sent_at,
                evidence_ids=tuple(spoken[k].id for k in window),
            )
        )
    return chunks


def _held_in_every_window(spoken: Sequence[Message], lines: _Lines, costs: Sequence[int], max_tokens: int) -> set[int]:
    """Positions of the opening line and the conclusion's lines, as many as fit in `HELD_SHARE` of a window;
    none unless the thread opens with a problem (a report, an error code, a how-to): a long chat about
    many things has no one report its windows are about, and the same lines in all would make them alike."""
    if not opens_with_a_problem(spoken):
        return set()
    opener = next((k for k, line in enumerate(lines.said) if line is not None), None)
    settling = {message.id for message in conclusion(spoken)}
    wanted = [] if opener is None else [opener]
    wanted += [k for k, message in enumerate(spoken) if message.id in settling and k != opener]
    held: set[int] = set()
    room = int(max_tokens * HELD_SHARE)
    for position in wanted:
        if costs[position] > room:
            continue
        held.add(position)
        room -= costs[position]
    return held
