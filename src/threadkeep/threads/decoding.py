"""What the learned decoder knows when it reaches a message: the per-message facts the small-group
rules read (`Structure`) and the threads built so far (`Decoding`). The rules of
`learned.small_group_choice` and `interleave.interleave_choice` read both, so each fact is kept once."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field


@dataclass(frozen=True, slots=True)
class Structure:
    """Per-message facts read by the small-group decoding rules (`learned.small_group_choice`)."""

    reaction: list[bool]  # an acknowledgement, "me too" or noise (「收到」, 「+1」, "ok thanks", 👍)
    slight: list[bool]  # a reaction, confirmation, sticker or picture: no thread needs it to go on
    wait: list[bool]  # 「我看看」, "let me check"
    asks: list[bool]  # a question, the bare Chinese clarifying ones included (「安卓还是苹果」)
    addressed: list[bool]  # names whom it answers: the addressee rules decide
    previous_own: list[int]  # this speaker's previous message (-1: none)
    me_too: list[bool]  # 「+1 我也是」, "same here"
    confirm: list[bool]  # 「我也好了」, "works now", not a question
    pause: list[bool]  # comes more than `merge_gap` after the message before it
    report: list[bool]  # something is broken (`cues.is_report`)
    closing: list[bool]  # an acknowledgement or "me too" (「ok」, 「🙏」, "+1"), not a link or code
    times: list[float]  # seconds
    reopen_gap: float  # `ThreadSettings.reopen_gap` in seconds


@dataclass(slots=True)
class Decoding:
    """The threads decoded so far, left to right: per message (its speaker, tokens, thread and
    parent) and per thread (indexed by `thread_of`)."""

    speakers: list[int]
    tokens: Sequence[frozenset[str]]
    idle: float  # `ThreadSettings.idle` in seconds
    max_span: float  # `ThreadSettings.max_span` in seconds
    thread_of: list[int] = field(init=False)  # -1 until decoded
    parents: list[int] = field(init=False)  # -1: starts a thread
    started: list[float] = field(init=False, default_factory=list)
    last: list[float] = field(init=False, default_factory=list)
    members: list[set[int]] = field(init=False, default_factory=list)  # speakers of each thread
    starters: list[int] = field(init=False, default_factory=list)  # who started each thread
    words: list[set[str]] = field(init=False, default_factory=list)  # content tokens of each thread
    tails: list[int] = field(init=False, default_factory=list)  # latest message of each thread
    content: list[bool] = field(init=False, default_factory=list)  # it has a message that is more than a reaction
    asked: list[bool] = field(init=False, default_factory=list)  # the thread has a question
    reported: list[bool] = field(init=False, default_factory=list)  # the thread has a report (`cues.is_report`)
    # Its starter confirmed it works (「装了 3.2.1 好了」) and has raised nothing since.
    settled: list[bool] = field(init=False, default_factory=list)
    open_threads: list[int] = field(init=False, default_factory=list)  # the current message may join them (`find_open`)

    def __post_init__(self) -> None:
        n = len(self.speakers)
        self.thread_of = [-1] * n
        self.parents = [-1] * n

    def is_open(self, thread: int, now: float) -> bool:
        """Idle no longer than `idle` and spanning no more than `max_span` at `now`."""
        return now - self.last[thread] <= self.idle and now - self.started[thread] <= self.max_span

    def find_open(self, index: int, now: float, candidates: Sequence[int]) -> None:
        """Keep as `open_threads` the open threads of the (earlier) candidates of message `index`."""
        self.open_threads = [
            thread
            for thread in dict.fromkeys(self.thread_of[c] for c in candidates if 0 <= c < index)
            if self.is_open(thread, now)
        ]

    def start(self, index: int, now: float, structure: Structure | None) -> None:
        """Message `index` starts a thread."""
        self.thread_of[index] = len(self.started)
        self.started.append(now)
        self.last.append(now)
        self.members.append({self.speakers[index]})
        self.starters.append(self.speakers[index])
        self.words.append(set(self.tokens[index]))
        self.tails.append(index)
        self.content.append(structure is None or not structure.slight[index])
        self.asked.append(structure is not None and structure.asks[index])
        self.reported.append(structure is not None and structure.report[index])
        self.settled.append(False)

    def join(self, index: int, parent: int, now: float, structure: Structure | None) -> None:
        """Message `index` replies to `parent`, in its thread."""
        thread = self.thread_of[parent]
        self.thread_of[index] = thread
        self.last[thread] = max(self.last[thread], now)
        self.members[thread].add(self.speakers[index])
        self.words[thread].update(self.tokens[index])
        self.tails[thread] = index
        self.content[thread] = self.content[thread] or structure is None or not structure.slight[index]
        self.asked[thread] = self.asked[thread] or (structure is not None and structure.asks[index])
        self.reported[thread] = self.reported[thread] or (structure is not None and structure.report[index])
        if structure is not None and self.speakers[index] == self.starters[thread]:
            if structure.confirm[index]:
                self.settled[thread] = True
            elif structure.report[index] or structure.asks[index] or structure.wait[index]:
                self.settled[thread] = False
        self.parents[index] = parent
