"""Rule-based thread assignment: explicit signals first, then lexical overlap.

For each utterance, strongest signal first:
1. a quote joins the quoted message's thread (within the maximum span);
2. an @mention / `nick:` joins the latest active thread the mentioned person took part in;
3. a question that resembles no active thread opens a new thread;
4. otherwise the active thread with the highest idf-weighted token overlap (at least
   `min_overlap`) is joined;
5. failing that, a bare reaction ("+1", 收到) joins the latest active thread, a reply to
   whoever just addressed the speaker, or the speaker going on with the thread they were
   just in, stays in that thread; anything else opens a new one.

A thread is active until it has been idle for `idle` and while it spans less than `max_span`.
"""

from __future__ import annotations

import math
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass, field
from datetime import datetime, timedelta

from threadkeep.threads.mentions import NameIndex, mentions_of
from threadkeep.threads.utterances import Utterance


@dataclass(frozen=True, slots=True)
class ThreadSettings:
    merge_gap: timedelta = timedelta(seconds=90)
    idle: timedelta = timedelta(minutes=30)
    max_span: timedelta = timedelta(hours=6)
    min_overlap: float = 0.5
    question_max_overlap: float = 0.6
    recent_utterances: int = 4  # lexical overlap is measured against a thread's latest utterances
    answer_gap: timedelta = timedelta(minutes=5)
    continue_gap: timedelta = timedelta(minutes=5)


@dataclass(slots=True)
class _Open:
    started: datetime
    last: datetime
    message_ids: list[str] = field(default_factory=list)
    recent_tokens: list[frozenset[str]] = field(default_factory=list)

    def accepts(self, moment: datetime, settings: ThreadSettings) -> bool:
        return moment - self.last <= settings.idle and moment - self.started <= settings.max_span

    def tokens(self) -> set[str]:
        return set().union(*self.recent_tokens) if self.recent_tokens else set()


@dataclass(slots=True)
class _Turn:
    """Where a speaker last spoke, or who last addressed them."""

    message_id: str
    thread: _Open
    at: datetime


def _idf(utterances: Sequence[Utterance]) -> dict[str, float]:
    frequency = Counter(token for utterance in utterances for token in utterance.tokens)
    total = len(utterances) + 1
    return {token: math.log(total / (count + 0.5)) + 1.0 for token, count in frequency.items()}


def _overlap(tokens: frozenset[str], thread_tokens: set[str], idf: dict[str, float]) -> float:
    """Weighted share of the smaller side's tokens that both sides use (overlap coefficient)."""
    if not tokens or not thread_tokens:
        return 0.0
    shared = sum(idf[token] for token in tokens if token in thread_tokens)
    smaller = min(sum(idf[token] for token in tokens), sum(idf.get(token, 1.0) for token in thread_tokens))
    return shared / smaller


def assign_threads(
    utterances: Sequence[Utterance], names: NameIndex, settings: ThreadSettings
) -> tuple[list[list[str]], dict[str, str]]:
    """Group utterances of one conversation into threads.

    Returns the threads (message ids in time order) and the reply links found
    (message id -> the earlier message it answers).
    """
    idf = _idf(utterances)
    threads: list[_Open] = []
    thread_of: dict[str, _Open] = {}
    reply_to: dict[str, str] = {}
    last_turn: dict[str, _Turn] = {}  # sender -> their latest utterance
    addressed: dict[str, _Turn] = {}  # sender -> the latest utterance that addressed them

    def usable(turn: _Turn | None, moment: datetime, window: timedelta) -> bool:
        return turn is not None and moment - turn.at <= window and turn.thread.accepts(moment, settings)

    for utterance in utterances:
        moment = utterance.start
        target: _Open | None = None
        parent: str | None = None

        for quoted in utterance.quoted_ids:
            quoted_thread = thread_of.get(quoted)
            if quoted_thread is not None and moment - quoted_thread.started <= settings.max_span:
                target, parent = quoted_thread, quoted
                break

        mentioned = mentions_of(utterance.messages, names) - {utterance.sender}
        if target is None and mentioned:
            turns = [last_turn[ref] for ref in mentioned if ref in last_turn]
            turns = [turn for turn in turns if turn.thread.accepts(moment, settings)]
            if turns:
                latest = max(turns, key=lambda turn: turn.at)
                target, parent = latest.thread, latest.message_id

        if target is None:
            active = [thread for thread in threads[-64:] if thread.accepts(moment, settings)]
            best_score, best = 0.0, None
            for thread in active:
                score = _overlap(utterance.tokens, thread.tokens(), idf)
                if score > best_score:
                    best_score, best = score, thread
            if utterance.question and best_score < settings.question_max_overlap:
                pass
            elif best is not None and best_score >= settings.min_overlap:
                target = best
            elif utterance.noise and active and not usable(last_turn.get(utterance.sender), moment, settings.idle):
                target = max(active, key=lambda thread: thread.last)
            elif not mentioned:
                caller = addressed.get(utterance.sender)
                own = last_turn.get(utterance.sender)
                if usable(caller, moment, settings.answer_gap):
                    target, parent = caller.thread, caller.message_id
                elif not utterance.question and usable(own, moment, settings.continue_gap):
                    target, parent = own.thread, own.message_id
            if target is not None and parent is None:
                parent = target.message_ids[-1]

        if target is None:
            target = _Open(started=moment, last=moment)
            threads.append(target)

        previous_id = parent
        for message in utterance.messages:
            if previous_id is not None:
                reply_to[message.id] = previous_id
            previous_id = message.id
            target.message_ids.append(message.id)
            thread_of[message.id] = target
        target.last = max(target.last, utterance.end)
        if not utterance.noise:
            target.recent_tokens = [*target.recent_tokens[-(settings.recent_utterances - 1) :], utterance.tokens]
        turn = _Turn(utterance.messages[-1].id, target, utterance.end)
        last_turn[utterance.sender] = turn
        for ref in mentioned:
            addressed[ref] = turn

    return [thread.message_ids for thread in threads], reply_to
