"""Rule-based thread assignment: explicit signals first, then lexical overlap.

For each utterance, strongest signal first:
1. a quote joins the quoted message's thread (within the maximum span);
2. an @mention / `nick:` joins the latest active thread of the mentioned person, or the
   speaker's own thread when the speaker asked there and is calling someone in;
3. a reply to whoever just addressed the speaker stays in that thread;
4. a question that resembles no active thread opens a new thread;
5. otherwise the active thread with the highest idf-weighted token overlap (at least
   `min_overlap`) is joined;
6. failing that, a bare reaction ("+1", 收到, 「同问 vivo 也是」) joins the latest active thread;
   a statement continues the speaker's recent thread (or the thread they asked in), or
   answers a fresh unanswered question when the speaker is in no other thread;
   anything else opens a new thread.

A thread is active until it has been idle for `idle` and while it spans less than `max_span`.
The gaps were chosen on the labelled sample corpus and IRC dev (benchmarks/thread_boundaries.py).
"""

from __future__ import annotations

import math
from collections import Counter
from collections.abc import Hashable, Sequence
from dataclasses import dataclass, field
from datetime import datetime, timedelta

from threadkeep.model import Message
from threadkeep.threads.mentions import NameIndex, mentions_of
from threadkeep.threads.utterances import Utterance


@dataclass(frozen=True, slots=True)
class ThreadSettings:
    merge_gap: timedelta = timedelta(seconds=90)
    idle: timedelta = timedelta(minutes=30)
    # A group thread's longest span, chosen on held-out small groups (rule M, benchmarks/reply_model_decisions.md);
    # a direct chat's sessions keep `session_span`.
    max_span: timedelta = timedelta(hours=8)
    session_span: timedelta = timedelta(hours=6)
    min_overlap: float = 0.5
    question_max_overlap: float = 0.6
    recent_utterances: int = 4  # lexical overlap is measured against a thread's latest utterances
    answer_gap: timedelta = timedelta(minutes=5)  # replying to whoever just addressed you
    continue_gap: timedelta = timedelta(minutes=5)  # going on in the thread you just spoke in
    starter_gap: timedelta = timedelta(minutes=30)  # an asker coming back to their own thread
    unanswered_gap: timedelta = timedelta(minutes=2)  # a free speaker answering a fresh question
    reopen_gap: timedelta = timedelta(minutes=1)  # a question this long after one's own "ok" is a new topic
    assigner: str = "learned"  # "learned" (threads/learned.py) or "rules" (this module, the fallback)
    resume_paused: bool = True  # threads/resume.py: a closed thread taken up again after a pause
    # At most this many people among this many messages: a small group (the people chosen on held-out small groups,
    # rule G in benchmarks/reply_model_decisions.md).
    small_group: tuple[int, int] = (12, 40)


def window_speakers(senders: Sequence[Hashable], size: int) -> list[int]:
    """Distinct speakers among each message's last `size` messages (itself included)."""
    counts: Counter = Counter()
    out = []
    for index, sender in enumerate(senders):
        counts[sender] += 1
        if index >= size:
            gone = senders[index - size]
            counts[gone] -= 1
            if not counts[gone]:
                del counts[gone]
        out.append(len(counts))
    return out


def small_group_flags(senders: Sequence[Hashable], settings: ThreadSettings) -> list[bool]:
    """Per message, whether at most `settings.small_group` people wrote the latest messages up to it
    (a team, a family, a support group's quiet hours), not a busy open channel."""
    people, window = settings.small_group
    return [count <= people for count in window_speakers(senders, window)]


def assign_sessions(messages: Sequence[Message], settings: ThreadSettings) -> tuple[list[list[str]], dict[str, str]]:
    """The messages cut into sessions: a new one after `idle` of silence or at `session_span`; each message
    replies to the one before it."""
    groups: list[list[str]] = []
    reply_to: dict[str, str] = {}
    started = previous = None
    for message in messages:
        moment = message.sent_at
        if previous is None or moment - previous.sent_at > settings.idle or moment - started > settings.session_span:
            groups.append([])
            started = moment
        else:
            reply_to[message.id] = previous.id
        groups[-1].append(message.id)
        previous = message
    return groups, reply_to


@dataclass(slots=True)
class _Open:
    started: datetime
    last: datetime
    starter: str = ""
    unanswered: bool = False  # a question nobody else has spoken to yet
    message_ids: list[str] = field(default_factory=list)
    recent_tokens: list[frozenset[str]] = field(default_factory=list)
    words: frozenset[str] = frozenset()  # the recent utterances' tokens together
    weight: float = 0.0  # ... and their idf weight: kept, as every later utterance is compared with them

    def accepts(self, moment: datetime, settings: ThreadSettings) -> bool:
        return moment - self.last <= settings.idle and moment - self.started <= settings.max_span

    def remember(self, tokens: frozenset[str], keep: int, idf: dict[str, float]) -> None:
        """Add an utterance's tokens to the `keep` latest the thread is compared by."""
        self.recent_tokens = [*self.recent_tokens[-(keep - 1) :], tokens]
        self.words = frozenset().union(*self.recent_tokens)
        self.weight = math.fsum(idf.get(token, 1.0) for token in self.words)


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


def _overlap(tokens: frozenset[str], weight: float, thread: _Open, idf: dict[str, float]) -> float:
    """Weighted share of the smaller side's tokens that both sides use (overlap coefficient);
    `weight` is the idf weight of `tokens`."""
    shared = tokens & thread.words
    if not shared:
        return 0.0
    # fsum: a plain sum over a set depends on hash order, and so would the threads.
    return math.fsum(idf[token] for token in shared) / min(weight, thread.weight)


def _weak_signal(
    utterance: Utterance, own: _Turn | None, active: list[_Open], settings: ThreadSettings
) -> tuple[_Open | None, str | None]:
    """Where a statement with no explicit or lexical signal most likely belongs."""
    moment = utterance.start
    if own is not None:
        if moment - own.at <= settings.continue_gap:
            return own.thread, own.message_id
        if own.thread.starter == utterance.sender and moment - own.at <= settings.starter_gap:
            return own.thread, own.message_id
        return None, None
    fresh = [thread for thread in active if thread.unanswered and moment - thread.last <= settings.unanswered_gap]
    return (fresh[-1], None) if fresh else (None, None)


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
        own = last_turn.get(utterance.sender)
        own_active = own if own is not None and own.thread.accepts(moment, settings) else None
        caller = addressed.get(utterance.sender)
        mentioned = mentions_of(utterance.messages, names) - {utterance.sender}

        for quoted in utterance.quoted_ids:
            quoted_thread = thread_of.get(quoted)
            if quoted_thread is not None and moment - quoted_thread.started <= settings.max_span:
                target, parent = quoted_thread, quoted
                break

        if target is None and mentioned:
            turns = [last_turn[ref] for ref in sorted(mentioned) if ref in last_turn]
            turns = [turn for turn in turns if turn.thread.accepts(moment, settings)]
            # An asker calling someone in ("@客服 在吗") brings them to the asker's own thread.
            asker = own_active is not None and own_active.thread.starter == utterance.sender
            if asker and moment - own_active.at <= settings.idle:
                if not turns or max(turns, key=lambda turn: turn.at).thread is not own_active.thread:
                    turns = [own_active]
            elif not turns and own_active is not None:
                turns = [own_active]
            if turns:
                latest = max(turns, key=lambda turn: turn.at)
                target, parent = latest.thread, latest.message_id

        if target is None and not mentioned and usable(caller, moment, settings.answer_gap):
            target, parent = caller.thread, caller.message_id

        if target is None:
            active = [thread for thread in threads[-64:] if thread.accepts(moment, settings)]
            best_score, best = 0.0, None
            weight = math.fsum(idf[token] for token in utterance.tokens)
            for thread in active:
                score = _overlap(utterance.tokens, weight, thread, idf)
                if score > best_score:
                    best_score, best = score, thread
            if utterance.question and best_score < settings.question_max_overlap:
                pass
            elif best is not None and best_score >= settings.min_overlap:
                target = best
            elif utterance.me_too and (others := [t for t in active if t.starter != utterance.sender]):
                target = max(others, key=lambda thread: thread.last)
            elif utterance.noise and active and not usable(own, moment, settings.idle):
                target = max(active, key=lambda thread: thread.last)
            elif not mentioned and not utterance.question:
                target, parent = _weak_signal(utterance, own_active, active, settings)
            if target is not None and parent is None:
                parent = target.message_ids[-1]

        if target is None:
            target = _Open(started=moment, last=moment, starter=utterance.sender, unanswered=utterance.question)
            threads.append(target)
        elif utterance.sender != target.starter:
            target.unanswered = False

        previous_id = parent
        for message in utterance.messages:
            if previous_id is not None:
                reply_to[message.id] = previous_id
            previous_id = message.id
            target.message_ids.append(message.id)
            thread_of[message.id] = target
        target.last = max(target.last, utterance.end)
        if not utterance.noise:
            target.remember(utterance.tokens, settings.recent_utterances, idf)
        turn = _Turn(utterance.messages[-1].id, target, utterance.end)
        last_turn[utterance.sender] = turn
        for ref in mentioned:
            addressed[ref] = turn

    return [thread.message_ids for thread in threads], reply_to
