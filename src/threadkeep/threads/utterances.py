"""Utterances: a speaker's quick successive messages read as one turn."""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass, field
from datetime import datetime, timedelta

from threadkeep.model import Message
from threadkeep.text import is_me_too, is_noise, is_question, token_set

_ADDRESSES = re.compile(r"^\s*@")


@dataclass(slots=True)
class Utterance:
    messages: list[Message]
    tokens: frozenset[str] = frozenset()
    question: bool = False
    noise: bool = False
    me_too: bool = False  # 「+1 我也是 华为 mate60」: adds detail to someone else's report
    mentions: set[str] = field(default_factory=set)

    @property
    def sender(self) -> str:
        return self.messages[0].sender

    @property
    def start(self) -> datetime:
        return self.messages[0].sent_at

    @property
    def end(self) -> datetime:
        return self.messages[-1].sent_at

    @property
    def text(self) -> str:
        return "\n".join(message.text for message in self.messages if message.text)

    @property
    def quoted_ids(self) -> list[str]:
        return [message.reply_to for message in self.messages if message.reply_to]


def merge_utterances(messages: Iterable[Message], max_gap: timedelta) -> list[Utterance]:
    """Join consecutive messages of one sender sent within `max_gap` of each other.

    `messages` must be in time order and contain no system lines. A message that
    quotes or @mentions someone starts a new utterance: it says itself where it belongs.
    """
    utterances: list[Utterance] = []
    for message in messages:
        last = utterances[-1] if utterances else None
        if (
            last is not None
            and last.sender == message.sender
            and message.sent_at - last.end <= max_gap
            and not message.reply_to
            and not message.mentions
            and not _ADDRESSES.match(message.text)
        ):
            last.messages.append(message)
        else:
            utterances.append(Utterance([message]))
    for utterance in utterances:
        text = utterance.text
        utterance.tokens = token_set(text)
        utterance.question = is_question(text)
        utterance.noise = all(is_noise(message.text) for message in utterance.messages)
        utterance.me_too = is_me_too(text)
    return utterances
