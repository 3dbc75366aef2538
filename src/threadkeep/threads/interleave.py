"""Decoding rules for interleaved topics in small groups, applied after `learned.small_group_choice`.

In a small group two or three topics run at once, people answer an older question after someone
else has asked a new one, and a new question follows a thread that has just ended. The reply
model, trained on IRC, mostly follows recency there. These rules read the structure instead:

- a new topic: an unaddressed question that calls on the group or marks a change of subject
  (`cues.opens_topic`: "does anyone know…", "also…", 「有人知道…」, 「另外问下」) and shares no
  word with the thread the scores chose starts a thread.

Each rule was kept only when, on the dev corpora, it fixed more links than it broke and broke
(almost) none on IRC dev; see `benchmarks/README.md` for the counts.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass

from threadkeep.model import Message
from threadkeep.threads.cues import opens_topic, points_back


@dataclass(frozen=True, slots=True)
class Topics:
    """Per-message facts the rules read, from the message text."""

    opener: list[bool]  # a question that opens a topic (`cues.opens_topic`)
    anaphora: list[bool]  # points back ("that thing", 「这个」): it continues something


def topics_of(messages: Sequence[Message]) -> Topics:
    texts = [message.text or "" for message in messages]
    return Topics([opens_topic(text) for text in texts], [points_back(text) for text in texts])


@dataclass(frozen=True, slots=True)
class State:
    """What decoding knows when it reaches message `index` (lists are per message or per thread)."""

    index: int
    addressed: bool
    slight: Sequence[bool]  # per message: a reaction, sticker or picture (`learned.Structure.slight`)
    speakers: Sequence[int]
    tokens: Sequence[frozenset[str]]
    thread_of: Sequence[int]
    members: Sequence[set[int]]
    words: Sequence[set[str]]
    tails: Sequence[int]
    open_threads: Sequence[int]


def new_topic(choice: int, state: State, topics: Topics) -> int:
    """A topic-opening question sharing no word with the scored thread starts a thread."""
    index = state.index
    if choice < 0 or not topics.opener[index]:
        return choice
    if state.tokens[index] & state.words[state.thread_of[choice]]:
        return choice
    # "anyone?" after one's own report calls for help with it ("can anybody help", 「有人知道吗」):
    # only a question after one's own reaction or sticker leaves one's own turn.
    if state.speakers[choice] == state.speakers[index] and not state.slight[choice]:
        return choice
    if topics.anaphora[index]:
        return choice
    return -1


Rule = Callable[[int, State, Topics], int]
RULES: tuple[Rule, ...] = (new_topic,)


def interleave_choice(choice: int, state: State, topics: Topics) -> int:
    """The parent after the rules (-1 = a new thread), given the choice so far; addressed messages keep it."""
    if state.addressed:
        return choice
    for rule in RULES:
        choice = rule(choice, state, topics)
    return choice
