"""Features for the learned reply-link scorer (`threads/learned.py`).

Every message `i` of a conversation is paired with candidate parents: itself (the
"starts a new thread" option, a self-link as in Kummerfeld et al. 2019), the previous
`window` messages, and the latest message of each person it addresses when that one is
further back. Pairs live in an `(n, slots)` grid: slot 0 is the message itself, slot `d`
(1..window) the message `d` positions earlier, the last slots the far addressees; unused
slots hold -1.

Static features (`STATIC`) depend only on the messages and are computed for the whole
grid at once with numpy; dynamic features (`DYNAMIC`) describe the threads a left-to-right
decoding has built so far (`ThreadState`). Nothing here depends on a language: tokens come
from `text.content_tokens` (Chinese segmented, English stemmed), lengths are counted in
tokens, names come from `NameIndex`, questions / noise / "me too" from `text`.
"""

from __future__ import annotations

import math
import re
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from threadkeep.model import Message
from threadkeep.text import is_me_too, is_noise, token_set
from threadkeep.threads.cues import asks, is_ack, is_confirmation, is_report, is_wait, opens_topic, promises
from threadkeep.threads.mentions import NameIndex
from threadkeep.threads.rules import window_speakers

WINDOW = 50  # earlier messages offered as parents
FAR_SLOTS = 2  # addressees' latest messages further back than the window
RATE_WINDOW = 200  # messages over which `address_rate` is measured
RATE_PRIOR = (0.3, 20.0)  # ... smoothed towards this share, with this weight in messages
RECENT_MESSAGES = 20  # messages over which `recent_speakers` counts people
BUSY_MESSAGES = 100  # ... and `window_speakers`
RECENT_SECONDS = 600.0  # `log_recent_messages`: traffic in the last ten minutes
ANSWER_SECONDS = 600.0  # a reply to someone's question within this counts towards the answerer role
ROLE_PRIOR = (0.25, 4.0)  # answerer / asker shares smoothed towards this share, with this weight

_URL = re.compile(r"https?://|www\.|\.(?:com|org|net|io|cn)\b", re.IGNORECASE)
_WORD = re.compile(r"[^\s,，:：;；.。!！?？()（）\"'“”<>@]+")

# Message-level features repeat on every row of the message: they let the model weigh
# the self-link ("new thread") against the best earlier candidate.
STATIC: tuple[str, ...] = (
    "is_self",
    "far",  # a far addressee slot
    "log_dist",
    "log_gap",
    "same_speaker",
    "i_addresses_j",  # this message addresses the candidate's speaker (@name, `name:`, structured mention)
    "i_names_j",  # ... or names them anywhere in the text
    "j_addresses_i",
    "j_names_i",
    "i_addresses_other",  # this message addresses someone, not the candidate's speaker
    "j_addresses_any",
    "j_own_previous",  # the candidate is this speaker's previous message
    "j_speaker_latest",  # the candidate's speaker has not spoken since
    "log_j_next_own",  # messages until the candidate's speaker spoke again
    "i_spoke_since",  # this speaker spoke between the candidate and now
    "j_latest_to_i",  # the latest message that addressed this speaker
    "j_question",
    "j_noise",
    "j_log_tokens",  # content tokens, not characters: comparable across languages
    "j_url",
    "j_media",
    "overlap",  # idf-weighted shared tokens
    "overlap_i",  # ... as a share of this message's token weight
    "overlap_j",
    "overlap_count",
    "overlap_rank",  # 0 for the candidate with the most overlap
    "overlap_rel",  # overlap / the best candidate's overlap
    "candidate_rank",  # 0 for the previous message, 1 for the one before... (self = 0)
    "i_question",
    "i_noise",
    "i_log_tokens",
    "i_url",
    "i_media",
    "i_addresses_any",
    "i_log_gap_previous",  # minutes since the previous message
    "i_addressed_recently",  # someone addressed this speaker within the window
    "i_max_overlap",
    "i_me_too",  # 「+1 我也是」, "same here": joining someone else's report
    "address_rate",  # share of recent messages that address someone: how much this chat relies on names
    # Small-group signals: who is talking, the roles people play, and what short turns do.
    "speakers_between",  # distinct speakers from the candidate to this message: 2 = a two-person stretch
    "recent_speakers",  # distinct speakers among the last RECENT_MESSAGES messages
    "window_speakers",  # ... among the last BUSY_MESSAGES: a small team chat or a busy open channel
    "log_recent_messages",  # messages in the last ten minutes
    "j_last_other",  # the candidate is the latest message by someone other than this speaker
    "j_open_question",  # the candidate asks, and nobody but its asker has spoken since
    "j_latest_question",  # the latest question by someone other than this speaker
    "i_answerer",  # this speaker's share of messages that answer someone else's question
    "j_answerer",
    "i_asker",  # this speaker's share of questions
    "j_asker",
    "i_share",  # this speaker's share of the conversation's messages (staff accounts talk a lot)
    "j_share",
    "i_wait",  # 「我看看」, 「稍等」, "let me check"
    "j_wait",
    "i_after_own_wait",  # this speaker's previous message was a wait: this may be the conclusion
    "i_confirm",  # 「好了」, 「我也好了」, "works now"
    "j_confirm",
    "i_ack",  # 「收到」, "ok thanks"
    "j_promise",  # 「我晚点挪回去试试」, "I'll send it tonight": the report back comes after a pause
    "i_after_own_promise",  # this speaker's previous message was a promise: this may be the report back
    "i_report",  # something is broken: a problem of its own, unless it adds to the speaker's own
    "i_opens_topic",  # a question to the whole group or after a change of subject
    "rule_parent",  # the rule-based assigner links this message to the candidate
    "rule_same_thread",  # ... or puts both in one thread
    "rule_new_thread",  # ... or starts a thread with this message
)

DYNAMIC: tuple[str, ...] = (
    "t_log_size",  # the candidate's thread so far
    "t_log_age",
    "t_log_idle",
    "t_speakers",
    "t_has_i",  # this speaker already spoke in the candidate's thread
    "t_started_by_i",
    "t_addresses_i",  # someone in the thread addressed this speaker
    "t_i_own_thread",  # the thread of this speaker's previous message
    "t_j_last",  # the candidate is the latest message of its thread
    "t_j_children",  # replies the candidate received
    "t_max_overlap",  # best overlap with any candidate of the same thread
    "t_recency_rank",  # 0 for the most recently active thread among the candidates
    "t_active",  # active threads among the candidates (on the self row too)
)

FEATURES: tuple[str, ...] = STATIC + DYNAMIC


@dataclass(slots=True)
class Prepared:
    """Per-message facts of one conversation, and the candidate grid."""

    ids: list[str]
    times: np.ndarray  # seconds since the first message
    speakers: np.ndarray  # int speaker ids
    addresses: list[frozenset[int]]  # speakers each message addresses (start / @ / structured)
    names: list[frozenset[int]]  # speakers each message names anywhere
    tokens: list[frozenset[str]]
    candidates: np.ndarray  # (n, slots) message indices, -1 = none; slot 0 = the message itself
    static: np.ndarray  # (n, slots, len(STATIC)) float32


def descending_ranks(values: np.ndarray) -> np.ndarray:
    """Per row, each value's rank from the largest (0), ties in column order."""
    order = np.argsort(-values, axis=1, kind="stable")
    ranks = np.empty_like(order)
    # The ranks are the inverse of the sorting permutation: no second sort needed.
    np.put_along_axis(ranks, order, np.arange(order.shape[1])[None, :], axis=1)
    return ranks


def _log(values: np.ndarray | float) -> np.ndarray:
    return np.log1p(np.maximum(values, 0.0))


def _speaker_names(text: str, names: NameIndex) -> set[str]:
    found: set[str] = set()
    for word in _WORD.findall(text):
        if len(word) >= 3:
            ref = names.resolve(word)
            if ref is not None:
                found.add(ref)
    return found


def prepare(
    messages: Sequence[Message],
    names: NameIndex,
    rule_threads: Sequence[Sequence[str]] | None = None,
    rule_links: dict[str, str] | None = None,
    tokens: Sequence[frozenset[str] | None] | None = None,
    window: int = WINDOW,
) -> Prepared:
    """Facts and static pair features of one conversation's messages (time order, no system lines).

    `rule_threads` / `rule_links` are the rule-based assigner's decisions (features of their own);
    `tokens` may give messages' `content_tokens` already computed (None where not).
    """
    n = len(messages)
    ids = [message.id for message in messages]
    start = messages[0].sent_at if messages else None
    times = np.array([(message.sent_at - start).total_seconds() for message in messages], dtype=np.float64)
    speaker_of: dict[str, int] = {}
    speakers = np.array([speaker_of.setdefault(m.sender, len(speaker_of)) for m in messages], dtype=np.int64)

    def speaker_ids(refs: set[str] | tuple[str, ...]) -> frozenset[int]:
        return frozenset(speaker_of[ref] for ref in refs if ref in speaker_of)

    addresses: list[frozenset[int]] = []
    named: list[frozenset[int]] = []
    token_sets: list[frozenset[str]] = []
    question = np.zeros(n, dtype=bool)
    wait = np.zeros(n, dtype=bool)
    confirm = np.zeros(n, dtype=bool)
    ack = np.zeros(n, dtype=bool)
    promise = np.zeros(n, dtype=bool)
    report = np.zeros(n, dtype=bool)
    opens = np.zeros(n, dtype=bool)
    me_too = np.zeros(n, dtype=bool)
    noise = np.zeros(n, dtype=bool)
    url = np.zeros(n, dtype=bool)
    media = np.zeros(n, dtype=bool)
    length = np.zeros(n, dtype=np.float64)
    for index, message in enumerate(messages):
        text = message.text or ""
        own = int(speakers[index])
        refs = names.mentioned_in(text) if text else set()
        refs.update(message.mentions)
        addressed = speaker_ids(refs) - {own}
        addresses.append(addressed)
        named.append((speaker_ids(_speaker_names(text, names)) | addressed) - {own})
        known = tokens[index] if tokens is not None else None
        token_sets.append(known if known is not None else token_set(text) if text else frozenset())
        question[index] = asks(text)
        wait[index] = is_wait(text)
        confirm[index] = is_confirmation(text)
        ack[index] = is_ack(text)
        promise[index] = promises(text)
        report[index] = is_report(text)
        opens[index] = opens_topic(text)
        me_too[index] = is_me_too(text)
        noise[index] = is_noise(text) and not message.is_media
        url[index] = bool(_URL.search(text))
        media[index] = message.is_media
        length[index] = len(token_sets[index])

    # Inverse document frequency within the conversation (as the rule-based assigner does).
    tokens = token_sets
    frequency: dict[str, int] = {}
    for found in tokens:
        for token in found:
            frequency[token] = frequency.get(token, 0) + 1
    # Weights on a 1/1024 grid: sums are then exact whatever order a set yields its tokens in
    # (string hashing, hence set order, changes from one process to the next).
    idf = {token: round((math.log((n + 1) / (count + 0.5)) + 1.0) * 1024) / 1024 for token, count in frequency.items()}
    weight = np.array([sum(idf[token] for token in found) for found in tokens], dtype=np.float64)

    # Who spoke before / after, who addressed whom most recently.
    previous_own = np.full(n, -1, dtype=np.int64)
    next_own = np.full(n, n + window, dtype=np.int64)
    latest_to = np.full(n, -1, dtype=np.int64)  # the latest earlier message addressing this speaker
    last_by: dict[int, int] = {}
    last_to: dict[int, int] = {}
    for index in range(n):
        own = int(speakers[index])
        before = last_by.get(own)
        if before is not None:
            previous_own[index] = before
            next_own[before] = index
        latest_to[index] = last_to.get(own, -1)
        last_by[own] = index
        for ref in addresses[index]:
            last_to[ref] = index

    roles = _roles(speakers, times, question, len(speaker_of))

    # The candidate grid.
    slots = 1 + window + FAR_SLOTS
    rows = np.arange(n, dtype=np.int64)
    candidates = np.full((n, slots), -1, dtype=np.int64)
    candidates[:, 0] = rows
    distance = np.arange(1, window + 1, dtype=np.int64)
    near = rows[:, None] - distance[None, :]
    candidates[:, 1 : window + 1] = np.where(near >= 0, near, -1)
    far_rows: list[int] = []
    if FAR_SLOTS:
        last_by.clear()
        for index in range(n):
            extra = 0
            for ref in sorted(addresses[index]):
                latest = last_by.get(ref)
                if latest is not None and index - latest > window and extra < FAR_SLOTS:
                    candidates[index, window + 1 + extra] = latest
                    extra += 1
            if extra:
                far_rows.append(index)
            last_by[int(speakers[index])] = index

    valid = candidates >= 0
    j = np.where(valid, candidates, 0)
    i = np.broadcast_to(rows[:, None], j.shape)
    is_self = np.zeros(j.shape, dtype=bool)
    is_self[:, 0] = True
    far = np.zeros(j.shape, dtype=bool)
    far[:, window + 1 :] = valid[:, window + 1 :]

    # Lexical overlap through an inverted index: only pairs sharing a token cost anything.
    overlap = np.zeros(j.shape, dtype=np.float64)
    shared_count = np.zeros(j.shape, dtype=np.float64)
    postings: dict[str, list[int]] = {}
    for index, found in enumerate(tokens):
        # Summed in Python floats, in the same order as into the array (an array element costs
        # several times more to add to), and written once per row.
        row_overlap = [0.0] * (window + 1)
        row_count = [0] * (window + 1)
        for token in found:
            seen = postings.setdefault(token, [])
            w = idf[token]
            for earlier in reversed(seen):
                d = index - earlier
                if d > window:
                    break
                row_overlap[d] += w
                row_count[d] += 1
            seen.append(index)
        if any(row_count):
            overlap[index, : window + 1] = row_overlap
            shared_count[index, : window + 1] = row_count
    for index in far_rows:
        for slot in range(window + 1, slots):
            earlier = candidates[index, slot]
            if earlier >= 0:
                common = tokens[index] & tokens[earlier]
                overlap[index, slot] = sum(idf[token] for token in common)
                shared_count[index, slot] = len(common)
    overlap[~valid] = 0.0
    overlap[:, 0] = 0.0
    shared_count[:, 0] = 0.0

    n_speakers = len(speaker_of) + 1
    address_keys = np.array(
        sorted(index * n_speakers + ref for index, refs in enumerate(addresses) for ref in refs), dtype=np.int64
    )
    name_keys = np.array(
        sorted(index * n_speakers + ref for index, refs in enumerate(named) for ref in refs), dtype=np.int64
    )
    si = speakers[i]
    sj = speakers[j]
    real = valid & ~is_self

    def addressed_pairs(keys: np.ndarray, who: np.ndarray, whom: np.ndarray) -> np.ndarray:
        return np.isin(who * n_speakers + whom, keys) & real

    i_addresses_j = addressed_pairs(address_keys, i, sj)
    i_names_j = addressed_pairs(name_keys, i, sj)
    j_addresses_i = addressed_pairs(address_keys, j, si)
    j_names_i = addressed_pairs(name_keys, j, si)
    addresses_any = np.array([bool(refs) for refs in addresses], dtype=bool)

    gap = (times[i] - times[j]) / 60.0
    overlap_rank = descending_ranks(np.where(real, overlap, -1.0))
    max_overlap = overlap.max(axis=1)
    overlap_rel = np.where(max_overlap[:, None] > 0, overlap / np.maximum(max_overlap[:, None], 1e-9), 0.0)
    gap_previous = np.concatenate([[1e4], np.diff(times) / 60.0]) if n else np.zeros(0)
    addressed_recently = (latest_to >= 0) & (rows - latest_to <= window)
    addressing = np.concatenate([[0], np.cumsum(addresses_any)])
    recent = np.minimum(rows + 1, RATE_WINDOW)
    share, prior_weight = RATE_PRIOR
    address_count = addressing[rows + 1] - addressing[rows + 1 - recent]
    address_rate = (address_count + share * prior_weight) / (recent + prior_weight)
    rank = np.zeros(j.shape, dtype=np.float64)
    rank[:, 1 : window + 1] = distance - 1
    rank[:, window + 1 :] = window

    # Distinct speakers from candidate j to message i: the messages k in [j, i] whose speaker
    # does not speak again before i.
    last_before_i = np.where(valid, next_own[j] > i, False)
    speakers_between = np.cumsum(last_before_i, axis=1, dtype=np.float64)
    speakers_between[:, window + 1 :] = 0.0
    for index in far_rows:
        for slot in range(window + 1, slots):
            earlier = candidates[index, slot]
            if earlier >= 0:
                speakers_between[index, slot] = len(set(speakers[earlier : index + 1].tolist()))
    recent_speakers = speakers_between[:, min(RECENT_MESSAGES, window + 1) - 1] if n else np.zeros(0)
    recent_count = rows - np.searchsorted(times, times - RECENT_SECONDS, side="left")
    last_other, next_other, latest_question = _turn_taking(speakers, question)

    rule_parent = np.zeros(j.shape, dtype=bool)
    rule_same = np.zeros(j.shape, dtype=bool)
    rule_new = np.zeros(n, dtype=bool)
    if rule_threads is not None:
        position = {message_id: index for index, message_id in enumerate(ids)}
        thread_of = np.full(n, -1, dtype=np.int64)
        for number, thread in enumerate(rule_threads):
            members = [position[message_id] for message_id in thread if message_id in position]
            thread_of[members] = number
            if members:
                rule_new[members[0]] = True
        rule_same = (thread_of[i] == thread_of[j]) & real & (thread_of[i] >= 0)
        parent = np.full(n, -1, dtype=np.int64)
        for child, target in (rule_links or {}).items():
            if child in position and target in position:
                parent[position[child]] = position[target]
        rule_parent = (parent[i] == j) & real

    columns = {
        "is_self": is_self,
        "far": far,
        "log_dist": np.where(real, _log((i - j).astype(np.float64)), 0.0),
        "log_gap": np.where(real, _log(gap), 0.0),
        "same_speaker": (si == sj) & real,
        "i_addresses_j": i_addresses_j,
        "i_names_j": i_names_j,
        "j_addresses_i": j_addresses_i,
        "j_names_i": j_names_i,
        "i_addresses_other": addresses_any[i] & ~i_addresses_j & real,
        "j_addresses_any": addresses_any[j] & real,
        "j_own_previous": (previous_own[i] == j) & real,
        "j_speaker_latest": (next_own[j] >= i) & real,
        "log_j_next_own": np.where(real, _log(np.minimum(next_own[j], i) - j), 0.0),
        "i_spoke_since": (previous_own[i] > j) & real,
        "j_latest_to_i": (latest_to[i] == j) & real,
        "j_question": question[j] & real,
        "j_noise": noise[j] & real,
        "j_log_tokens": np.where(real, _log(length[j]), 0.0),
        "j_url": url[j] & real,
        "j_media": media[j] & real,
        "overlap": overlap,
        "overlap_i": np.where(weight[i] > 0, overlap / np.maximum(weight[i], 1e-9), 0.0),
        "overlap_j": np.where(weight[j] > 0, overlap / np.maximum(weight[j], 1e-9), 0.0) * real,
        "overlap_count": shared_count,
        "overlap_rank": np.where(real, overlap_rank, window + FAR_SLOTS),
        "overlap_rel": overlap_rel,
        "candidate_rank": rank,
        "i_question": question[:, None],
        "i_noise": noise[:, None],
        "i_log_tokens": _log(length)[:, None],
        "i_url": url[:, None],
        "i_media": media[:, None],
        "i_addresses_any": addresses_any[:, None],
        "i_log_gap_previous": _log(gap_previous)[:, None],
        "i_addressed_recently": addressed_recently[:, None],
        "i_max_overlap": max_overlap[:, None],
        "i_me_too": me_too[:, None],
        "address_rate": address_rate[:, None],
        "speakers_between": np.where(real, speakers_between, 0.0),
        "recent_speakers": recent_speakers[:, None],
        "window_speakers": np.array(window_speakers(speakers.tolist(), BUSY_MESSAGES), dtype=np.float64)[:, None],
        "log_recent_messages": _log(recent_count.astype(np.float64))[:, None],
        "j_last_other": (last_other[i] == j) & real,
        "j_open_question": question[j] & (sj != si) & (next_other[j] >= i) & real,
        "j_latest_question": (latest_question[i] == j) & real,
        "i_answerer": roles.answerer[speakers][:, None],
        "j_answerer": roles.answerer[sj] * real,
        "i_asker": roles.asker[speakers][:, None],
        "j_asker": roles.asker[sj] * real,
        "i_share": roles.share[speakers][:, None],
        "j_share": roles.share[sj] * real,
        "i_wait": wait[:, None],
        "j_wait": wait[j] & real,
        "i_after_own_wait": ((previous_own >= 0) & wait[np.maximum(previous_own, 0)])[:, None],
        "i_confirm": confirm[:, None],
        "j_confirm": confirm[j] & real,
        "i_ack": ack[:, None],
        "j_promise": promise[j] & real,
        "i_after_own_promise": ((previous_own >= 0) & promise[np.maximum(previous_own, 0)])[:, None],
        "i_report": report[:, None],
        "i_opens_topic": opens[:, None],
        "rule_parent": rule_parent,
        "rule_same_thread": rule_same,
        "rule_new_thread": rule_new[:, None],
    }
    # Written a feature at a time where each is contiguous, then turned once into the (n, slots,
    # feature) layout the models read: writing into that layout directly strides through memory.
    # A feature of the message alone is an (n, 1) column, spread over its slots as it is written.
    by_feature = np.empty((len(STATIC), n, slots), dtype=np.float32)
    for column, name in enumerate(STATIC):
        by_feature[column] = columns[name]
    static = np.ascontiguousarray(by_feature.transpose(1, 2, 0))
    static[~valid] = 0.0
    return Prepared(ids, times, speakers, addresses, named, tokens, candidates, static)


@dataclass(frozen=True, slots=True)
class Roles:
    """Per speaker: share of messages answering someone's question, of questions, of all messages."""

    answerer: np.ndarray
    asker: np.ndarray
    share: np.ndarray


def _roles(speakers: np.ndarray, times: np.ndarray, question: np.ndarray, count: int) -> Roles:
    """What each speaker does across the conversation.

    A message answers when the other person's turn just before it (their run of consecutive
    messages) holds a question, asked at most `ANSWER_SECONDS` earlier.
    """
    n = len(speakers)
    answers = np.zeros(count + 1)
    questions = np.zeros(count + 1)
    messages = np.zeros(count + 1)
    spoken = speakers.tolist()
    run_asks = False  # the current run of one speaker's consecutive messages holds a question
    for index in range(n):
        own = spoken[index]
        if index and spoken[index - 1] != own:
            if run_asks and times[index] - times[index - 1] <= ANSWER_SECONDS:
                answers[own] += 1
            run_asks = False
        run_asks = run_asks or bool(question[index])
        questions[own] += question[index]
        messages[own] += 1
    share, weight = ROLE_PRIOR
    return Roles(
        (answers + share * weight) / (messages + weight),
        (questions + share * weight) / (messages + weight),
        messages / max(n, 1),
    )


def _turn_taking(speakers: np.ndarray, question: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Per message: the latest earlier message by someone else, the next later message by someone
    else (n when none) and the latest earlier question by someone else (-1 when none)."""
    n = len(speakers)
    spoken = speakers.tolist()
    last_other = np.full(n, -1, dtype=np.int64)
    next_other = np.full(n, n, dtype=np.int64)
    latest_question = np.full(n, -1, dtype=np.int64)
    for index in range(1, n):
        last_other[index] = index - 1 if spoken[index - 1] != spoken[index] else last_other[index - 1]
    for index in range(n - 2, -1, -1):
        next_other[index] = index + 1 if spoken[index + 1] != spoken[index] else next_other[index + 1]
    newest = second = -1  # the latest question, and the latest one asked by someone else than its asker
    for index in range(n):
        if newest >= 0:
            latest_question[index] = newest if spoken[newest] != spoken[index] else second
        if question[index]:
            if newest >= 0 and spoken[newest] != spoken[index]:
                second = newest
            newest = index
    return last_other, next_other, latest_question


class ThreadState:
    """The threads a left-to-right decoding has built so far, for the dynamic features."""

    def __init__(self, prepared: Prepared) -> None:
        n = len(prepared.ids)
        self.times: list[float] = prepared.times.tolist()
        self.speaker_of: list[int] = prepared.speakers.tolist()
        self.addresses = prepared.addresses
        self.thread_of = [-1] * n
        self.children = [0] * n
        self.size: list[int] = []
        self.started: list[float] = []
        self.last: list[float] = []
        self.last_message: list[int] = []
        self.starter: list[int] = []
        self.speakers: list[set[int]] = []
        self.addressed: list[set[int]] = []  # speakers addressed inside the thread
        self.own_thread: dict[int, int] = {}  # speaker -> thread of their latest message

    def features(self, index: int, candidates: list[int], overlaps: list[float]) -> list[tuple]:
        """`DYNAMIC` rows of message `index` against its (earlier, or itself) candidates."""
        now = self.times[index]
        speaker = self.speaker_of[index]
        own = self.own_thread.get(speaker, -1)
        thread_of = self.thread_of
        best: dict[int, float] = {}
        for candidate, overlap in zip(candidates, overlaps, strict=True):
            if candidate != index:
                thread = thread_of[candidate]
                if overlap > best.get(thread, -1.0):
                    best[thread] = overlap
        recency = sorted(best, key=self.last.__getitem__, reverse=True)
        active = len(recency)
        # Candidates share threads (a few threads among a window of candidates): the thread's
        # part of a row is made once per thread, the candidate's own two values per candidate.
        log1p = math.log1p
        before: dict[int, tuple] = {}
        after: dict[int, tuple] = {}
        for rank, thread in enumerate(recency):
            speakers = self.speakers[thread]
            before[thread] = (
                log1p(self.size[thread]),
                log1p(max(now - self.started[thread], 0.0) / 60.0),
                log1p(max(now - self.last[thread], 0.0) / 60.0),
                len(speakers),
                speaker in speakers,
                self.starter[thread] == speaker,
                speaker in self.addressed[thread],
                thread == own,
            )
            after[thread] = (best[thread], rank, active)
        last_message, children = self.last_message, self.children
        rows = []
        for candidate in candidates:
            if candidate == index:
                rows.append((0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, active))
                continue
            thread = thread_of[candidate]
            rows.append((*before[thread], last_message[thread] == candidate, children[candidate], *after[thread]))
        return rows

    def add(self, index: int, parent: int) -> None:
        """Record the decision for message `index`: its parent, or -1 for a new thread."""
        now = self.times[index]
        speaker = self.speaker_of[index]
        if parent < 0:
            thread = len(self.size)
            self.size.append(0)
            self.started.append(now)
            self.last.append(now)
            self.last_message.append(index)
            self.starter.append(speaker)
            self.speakers.append(set())
            self.addressed.append(set())
        else:
            thread = self.thread_of[parent]
            self.children[parent] += 1
        self.thread_of[index] = thread
        self.size[thread] += 1
        if now > self.last[thread]:
            self.last[thread] = now
        self.last_message[thread] = index
        self.speakers[thread].add(speaker)
        self.addressed[thread].update(self.addresses[index])
        self.own_thread[speaker] = thread
