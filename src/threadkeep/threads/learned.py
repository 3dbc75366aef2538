"""Learned reply-link assignment: score earlier messages as each message's parent.

Every message picks one parent among the previous `WINDOW` messages (and far addressees),
or itself, which starts a thread (a self-link, as in Kummerfeld et al. 2019); threads
are the connected components of the chosen links. The model (`reply_model.json`, trained
by `benchmarks/train_reply_model.py` on the Ubuntu IRC disentanglement train split) is a
cascade evaluated with numpy only:

1. an additive model (one lookup table per static feature) scores every candidate and
   keeps the best `prune` of them per message;
2. each following stage is a gradient-boosted tree ensemble over the static features,
   the thread features of the previous stage's decoding (thread size, age, speakers...,
   see `features.DYNAMIC`) and the previous stage's scores; its own decoding feeds the
   next stage.

Decoding runs left to right: a quote always links to the quoted message (within
`max_span` of its thread's start), and so does a 接龙 copy to the entry it extends
(`chain_copies`); otherwise the best-scoring candidate whose thread is
still open (idle no longer than the model's `idle`, spanning no more than `max_span`) wins, and the
message starts a thread when no candidate beats the self-link (scored with the model's
`self_bias`, chosen on IRC dev). Acknowledgements and "me too"s never start a thread while
an open one can take them (in IRC train 5 % of them start one), and a "me too" within
`answer_gap` of someone else's new question joins that question: the model, taught by IRC
where "me too" is rare, followed word overlap to an older report instead. An addressed message
joins its addressee's open thread when the scores chose one the addressee is not in, and a
question to nobody stays out of an open conversation between others it shares no word with
(`addressed_join`, `fresh_apart`; see `decode`).
"""

from __future__ import annotations

import json
import threading
from collections.abc import Sequence
from dataclasses import dataclass, replace
from datetime import timedelta
from pathlib import Path

import numpy as np

from threadkeep.model import Message
from threadkeep.threads import features as F
from threadkeep.threads import interleave
from threadkeep.threads.decoding import Decoding, Structure
from threadkeep.threads.mentions import NameIndex
from threadkeep.threads.rules import ThreadSettings, assign_threads, small_group_flags
from threadkeep.threads.utterances import merge_utterances

MODEL_PATH = Path(__file__).with_name("reply_model.json")
_NEG = -np.inf


@dataclass(frozen=True, slots=True)
class Additive:
    """Sum of per-feature step functions: a value per interval between a feature's split points."""

    columns: tuple[int, ...]
    thresholds: tuple[np.ndarray, ...]
    tables: tuple[np.ndarray, ...]
    bias: float

    @classmethod
    def from_json(cls, data: dict) -> Additive:
        return cls(
            tuple(data["columns"]),
            tuple(np.asarray(t, dtype=np.float64) for t in data["thresholds"]),
            tuple(np.asarray(t, dtype=np.float64) for t in data["tables"]),
            float(data["bias"]),
        )

    def predict(self, x: np.ndarray) -> np.ndarray:
        score = np.full(x.shape[0], self.bias)
        for column, thresholds, table in zip(self.columns, self.thresholds, self.tables, strict=True):
            score += table[np.searchsorted(thresholds, x[:, column], side="left")]
        return score


@dataclass(frozen=True, slots=True)
class Trees:
    """A tree ensemble in flat arrays; leaves loop to themselves so every row takes `depth` steps.

    A row goes left when `x[feature] <= threshold` (LightGBM's numerical splits, no missing values).
    The arrays are indexed by *slot*, two per node (2 × node + 0 for left, + 1 for right; a node's
    facts in both of its slots): a step goes from a node's first slot to its chosen one by adding
    the branch taken, and from there to the child's first slot by one lookup.
    """

    feature: np.ndarray  # per slot, the node's feature
    threshold: np.ndarray  # per slot, the node's threshold
    threshold32: np.ndarray  # per slot, the largest float32 <= threshold (see `predict`)
    child: np.ndarray  # per slot, the first slot of the child it leads to
    value: np.ndarray  # per slot, the node's leaf value (0 for inner nodes)
    roots: np.ndarray  # each tree's root's first slot
    depth: int
    bias: float

    @classmethod
    def from_json(cls, data: dict) -> Trees:
        threshold = np.asarray(data["threshold"], dtype=np.float64)

        def per_slot(values: np.ndarray) -> np.ndarray:
            return np.repeat(values, 2)

        # Native-size indices: numpy converts any other index array to them on every gather.
        return cls(
            per_slot(np.asarray(data["feature"], dtype=np.intp)),
            per_slot(threshold),
            per_slot(float32_below(threshold)),
            2 * np.asarray(data["child"], dtype=np.intp),  # the JSON's children are 2 per node already
            per_slot(np.asarray(data["value"], dtype=np.float64)),
            2 * np.asarray(data["roots"], dtype=np.intp),
            int(data["depth"]),
            float(data.get("bias", 0.0)),
        )

    def predict(self, x: np.ndarray, chunk: int = 256) -> np.ndarray:
        # float32 rows (what `stage_rows` makes) are compared in float32 against `threshold32`,
        # which takes exactly the same branches as float64 (see `float32_below`) with half the
        # memory; anything else is compared in float64.
        if x.dtype == np.float32:
            threshold = self.threshold32
        else:
            x, threshold = np.asarray(x, dtype=np.float64), self.threshold
        out = np.empty(x.shape[0])
        trees = self.roots.size
        for start in range(0, x.shape[0], chunk):
            # Blocks of a few hundred rows keep each step's (rows, trees) arrays in the CPU cache,
            # and every step writes into the same arrays (`np.take(..., out=)`: no allocation).
            block = x[start : start + chunk]
            size = block.shape[0]
            columns = np.ascontiguousarray(block.T).ravel()  # feature-major: one feature's values side by side
            row = np.arange(size, dtype=np.intp)[:, None]
            column_start = self.feature * size
            slot = np.broadcast_to(self.roots, (size, trees)).copy()
            at = np.empty((size, trees), dtype=np.intp)
            value = np.empty((size, trees), dtype=x.dtype)
            bound = np.empty((size, trees), dtype=x.dtype)
            right = np.empty((size, trees), dtype=bool)
            for _ in range(self.depth):
                np.take(column_start, slot, out=at, mode="clip")
                at += row
                np.take(columns, at, out=value, mode="clip")
                np.take(threshold, slot, out=bound, mode="clip")
                np.greater(value, bound, out=right)
                slot += right
                np.take(self.child, slot, out=slot, mode="clip")
            out[start : start + size] = self.value[slot].sum(axis=1)
        return out + self.bias


def float32_below(threshold: np.ndarray) -> np.ndarray:
    """The largest float32 at or below each float64 threshold.

    For a float32 `x` and f = float32_below(t): x > t exactly when x > f (x > t implies x > f, as
    f <= t; and a float32 above f is at least the next float32 after f, which is above t unless
    t == f), so float32 rows take the branches they would in float64.
    """
    with np.errstate(over="ignore"):  # beyond float32's range: inf, then stepped back below
        below = threshold.astype(np.float32)
    over = below.astype(np.float64) > threshold
    below[over] = np.nextafter(below[over], np.float32(-np.inf))
    return below


def decoding_settings(settings: ThreadSettings, idle: float | None) -> ThreadSettings:
    """`settings` with threads kept open `idle` seconds after their last message (None: as they are)."""
    return settings if idle is None else replace(settings, idle=timedelta(seconds=idle))


@dataclass(frozen=True, slots=True)
class ReplyModel:
    window: int
    far_slots: int
    prune: int
    features: tuple[str, ...]
    additive: Additive
    stages: tuple[Trees, ...]
    self_bias: float  # added to the self-link score of the last stage (0: as trained)
    reactions_join: bool  # acknowledgements / "me too"s join an open thread rather than start one
    addressed_join: bool = True  # an addressed message joins its addressee's thread (see `decode`)
    fresh_apart: bool = True  # a question to nobody stays out of others' conversations (see `decode`)
    small_groups: bool = True  # the structural rules of `small_group_choice`
    idle: float | None = None  # seconds a thread stays open while decoding (None: `ThreadSettings.idle`)
    # Added to `self_bias` where the group is small (`rules.small_group_flags`): chosen on held-out small
    # groups the training never saw, which the dev-chosen `self_bias` over-splits (rule B of
    # `benchmarks/reply_model_decisions.md`).
    small_self_bias: float = 0.0

    @classmethod
    def from_json(cls, data: dict) -> ReplyModel:
        return cls(
            int(data["window"]),
            int(data["far_slots"]),
            int(data["prune"]),
            tuple(data["features"]),
            Additive.from_json(data["additive"]),
            tuple(Trees.from_json(stage) for stage in data["stages"]),
            float(data.get("self_bias", 0.0)),
            bool(data.get("reactions_join", True)),
            bool(data.get("addressed_join", True)),
            bool(data.get("fresh_apart", True)),
            bool(data.get("small_groups", True)),
            None if data.get("idle") is None else float(data["idle"]),
            float(data.get("small_self_bias", 0.0)),
        )

    def decoding(self, settings: ThreadSettings) -> ThreadSettings:
        """`settings` with the idle gap the model was trained to decode with."""
        return decoding_settings(settings, self.idle)

    @classmethod
    def load(cls, path: Path = MODEL_PATH) -> ReplyModel:
        model = cls.from_json(json.loads(path.read_text(encoding="utf-8")))
        if model.features != F.FEATURES + SCORE_FEATURES:
            raise ValueError(f"{path} was trained on other features; retrain with benchmarks/train_reply_model.py")
        if (model.window, model.far_slots) != (F.WINDOW, F.FAR_SLOTS):
            raise ValueError(f"{path} was trained with another candidate window")
        return model


# Features a stage gets from the stage before it.
SCORE_FEATURES: tuple[str, ...] = ("prev_score", "prev_rank", "prev_margin", "prev_self_score")

_lock = threading.Lock()
_model: ReplyModel | None = None


def reply_model() -> ReplyModel:
    """The packaged model, loaded once."""
    global _model
    if _model is None:
        with _lock:
            if _model is None:
                _model = ReplyModel.load()
    return _model


def prune(scores: np.ndarray, keep: int) -> np.ndarray:
    """Slots of the self-link and the `keep` best other candidates per message (-1 = none)."""
    ranked = scores.copy()
    ranked[:, 0] = np.inf
    order = np.argsort(-ranked, axis=1, kind="stable")[:, : keep + 1]
    present = np.take_along_axis(scores, order, axis=1) > _NEG
    return np.where(present, order, -1)


def score_features(scores: np.ndarray, slots: np.ndarray) -> np.ndarray:
    """Per kept candidate: the previous stage's score, its rank, its gap to the best, the self-link's score."""
    present = slots >= 0
    s = np.where(present, scores, _NEG)
    best = s.max(axis=1, keepdims=True)
    rank = F.descending_ranks(s)
    finite = np.isfinite(s)
    out = np.zeros((*s.shape, len(SCORE_FEATURES)), dtype=np.float32)
    out[..., 0] = np.where(finite, s, 0.0)
    out[..., 1] = rank
    out[..., 2] = np.where(finite, s - best, 0.0)
    out[..., 3] = np.where(np.isfinite(s[:, :1]), s[:, :1], 0.0)
    out[~present] = 0.0
    return out


def trajectory_features(prepared: F.Prepared, slots: np.ndarray, parents: Sequence[int]) -> np.ndarray:
    """Thread features of the kept candidates as a decoding that chose `parents` saw them."""
    state = F.ThreadState(prepared)
    kept = slots >= 0
    safe = np.maximum(slots, 0)
    candidates = np.take_along_axis(prepared.candidates, safe, axis=1)
    overlaps = np.take_along_axis(prepared.static[:, :, F.STATIC.index("overlap")], safe, axis=1)
    rows: list[tuple] = []
    for index, (row_kept, row_candidates, row_overlaps) in enumerate(
        zip(kept.tolist(), candidates.tolist(), overlaps.tolist(), strict=True)
    ):
        if all(row_kept):
            rows += state.features(index, row_candidates, row_overlaps)
        else:
            chosen = [k for k, keep in enumerate(row_kept) if keep]
            rows += state.features(index, [row_candidates[k] for k in chosen], [row_overlaps[k] for k in chosen])
        state.add(index, parents[index])
    out = np.zeros((*slots.shape, len(F.DYNAMIC)), dtype=np.float32)
    if rows:
        out[kept] = np.array(rows, dtype=np.float32)
    return out


def stage_rows(prepared: F.Prepared, slots: np.ndarray, dynamic: np.ndarray, previous: np.ndarray) -> np.ndarray:
    """The (n, kept, features) input of a tree stage."""
    static = np.take_along_axis(prepared.static, np.maximum(slots, 0)[:, :, None], axis=1)
    rows = np.concatenate([static, dynamic, score_features(previous, slots)], axis=-1)
    rows[slots < 0] = 0.0
    return rows


def decode(
    prepared: F.Prepared,
    quoted: Sequence[int],
    slots: np.ndarray,
    scores: np.ndarray,
    settings: ThreadSettings,
    joiners: Sequence[bool] | None = None,
    joins_question: Sequence[bool] | None = None,
    addressed: Sequence[int] | None = None,
    fresh: Sequence[bool] | None = None,
    structure: Structure | None = None,
    topics: interleave.Topics | None = None,
) -> list[int]:
    """Each message's parent index (-1 = starts a thread), left to right under the hard constraints.

    A message flagged in `joiners` starts a thread only when no open thread can take it; with
    `structure`, the small-group rules of `small_group_choice` may change a scored choice.
    """
    times = prepared.times.tolist()
    candidates = prepared.candidates
    speakers = prepared.speakers.tolist()
    tokens = prepared.tokens
    state = Decoding(speakers, tokens, settings.idle.total_seconds(), settings.max_span.total_seconds())
    # Local names for the lists the candidate loop reads (the same objects as `state`'s).
    thread_of, parents, members, words = state.thread_of, state.parents, state.members, state.words
    is_open = state.is_open
    order = np.argsort(-scores, axis=1, kind="stable")
    for index in range(len(prepared.ids)):
        now = times[index]
        choice = -1
        target = quoted[index]
        if target >= 0 and now - state.started[thread_of[target]] <= state.max_span:
            choice = target
        elif joins_question is not None and joins_question[index] and parents[index - 1] < 0:
            choice = index - 1
        else:
            row_slots = slots[index]
            row_scores = scores[index]
            for rank in order[index].tolist():
                if row_scores[rank] == _NEG:
                    break
                candidate = int(candidates[index, row_slots[rank]])
                if candidate == index:
                    if joiners is not None and joiners[index]:
                        continue
                    break
                thread = thread_of[candidate]
                if is_open(thread, now):
                    if (
                        fresh is not None
                        and fresh[index]
                        and len(members[thread]) >= 2
                        and speakers[index] not in members[thread]
                        and not (tokens[index] & words[thread])
                    ):
                        # A question by someone new to a conversation between others, sharing
                        # nothing with it, is a new topic (a clarifying question comes right
                        # after a report, while only its author has spoken).
                        continue
                    choice = candidate
                    break
            if addressed is not None and addressed[index] >= 0:
                # Whom a message names is who it answers: when the scores pick a thread the
                # addressee is not in, the addressee's own latest (open) thread wins.
                target = addressed[index]
                if (choice < 0 or speakers[target] not in members[thread_of[choice]]) and is_open(
                    thread_of[target], now
                ):
                    choice = target
            if structure is not None:
                # The threads of the candidates: the ones this message could still join.
                state.find_open(index, now, candidates[index].tolist())
                choice = small_group_choice(index, choice, state, structure)
                if topics is not None:
                    choice = interleave.interleave_choice(index, choice, state, structure, topics)
        if choice < 0:
            state.start(index, now, structure)
        else:
            state.join(index, choice, now, structure)
    return parents


def structure_of(prepared: F.Prepared, settings: ThreadSettings) -> Structure:
    def flag(name: str) -> np.ndarray:
        return prepared.static[:, 0, F.STATIC.index(name)] > 0

    reaction = flag("i_ack") | flag("i_noise") | flag("i_me_too")
    slight = reaction | flag("i_confirm") | flag("i_media")
    addressed = [bool(refs) for refs in prepared.addresses]
    previous_own: list[int] = []
    last_by: dict[int, int] = {}
    for index, speaker in enumerate(prepared.speakers.tolist()):
        previous_own.append(last_by.get(speaker, -1))
        last_by[speaker] = index
    return Structure(
        reaction.tolist(),
        slight.tolist(),
        flag("i_wait").tolist(),
        flag("i_question").tolist(),
        addressed,
        previous_own,
        flag("i_me_too").tolist(),
        (flag("i_confirm") & ~flag("i_question")).tolist(),
        (np.diff(prepared.times, prepend=-np.inf) > settings.merge_gap.total_seconds()).tolist(),
        flag("i_report").tolist(),
        (flag("i_ack") | flag("i_me_too")).tolist(),
        prepared.times.tolist(),
        settings.reopen_gap.total_seconds(),
    )


def small_group_choice(index: int, choice: int, state: Decoding, structure: Structure) -> int:
    """The parent after the small-group rules, given the scored `choice` (-1 = a new thread).

    The rules of `_small_group_rules`, then four on their result (unaddressed messages only):

    - an asker stays in their own conversation: see `_asker_stays`;
    - a wait the scores would start a thread with (「各位稍等，我们在排查登录问题」, 「收到，何经理稍等，
      我找技术同事看一下」) answers a report: it joins the latest open thread with a report by
      others, one the speaker has not spoken in (a wait by the reporter's own side is theirs);
    - a question or report that would join the speaker's own acknowledgement or "me too"
      (「ok」, 「🙏」, "+1"), more than `reopen_gap` after it and sharing no word with its thread,
      opens a new topic: the speaker closed that exchange themselves (「公会战匹配不到人」 …
      「ok」 … 20 min … 「周年庆皮肤什么时候返场」). Within the gap it is a follow-up (「好的谢谢」
      … 「那附近有什么景点？」, a link then "can someone help me with this?");
    - an acknowledgement by someone who asked a question last (「作业提交截止时间是几号」), put
      by the scores into a thread they are not in, thanks whoever answered that question: it
      joins the answer, the latest message of the asker's own open thread when someone else
      wrote it (「收到」 to 「每周日晚12点」, not to another user's 「可以看了 谢谢」). A
      reaction to a question ("sure") is an answer and stays.
    """
    choice = _small_group_rules(index, choice, state, structure)
    if structure.addressed[index]:
        return choice
    me = state.speakers[index]
    if choice >= 0:
        mine = _asker_stays(index, choice, state, structure)
        if mine >= 0:
            return state.tails[mine]
    if choice < 0:
        if not structure.wait[index]:
            return choice
        waiting = [t for t in state.open_threads if state.reported[t] and me not in state.members[t]]
        return state.tails[max(waiting, key=state.tails.__getitem__)] if waiting else choice
    if (
        (structure.asks[index] or structure.report[index])
        and state.speakers[choice] == me
        and structure.closing[choice]
        and structure.times[index] - structure.times[choice] > structure.reopen_gap
        and not (state.tokens[index] & state.words[state.thread_of[choice]])
    ):
        return -1
    own = structure.previous_own[index]
    if (
        structure.reaction[index]
        and not structure.me_too[index]
        and not structure.asks[choice]
        and own >= 0
        and structure.asks[own]
        and me not in state.members[state.thread_of[choice]]
        and state.thread_of[own] in state.open_threads
    ):
        answer = state.tails[state.thread_of[own]]
        if state.speakers[answer] != me and not structure.slight[answer]:
            return answer
    return choice


def _asker_stays(index: int, choice: int, state: Decoding, structure: Structure) -> int:
    """The open thread the speaker started, when their message should go on there rather than in
    the thread of `choice` (-1: no such thread).

    Whoever brought a problem or request talks about it until it is settled: their next line,
    put by the scores into a conversation between others that it shares no more words with than
    with their own, belongs to their own (a support group where staff serve several people at once,
    each asker's 「那附近有酒店吗」 after staff's answer to someone else). When the line the scores
    chose is by someone in the asker's own thread too (the staff serving both), shared words decide
    nothing: both conversations are about the same hotels and products. It does not apply to an
    answer to a question there, which does join other people's threads (a confirmation such as
    "hot water is back" answers nobody's question), nor to a reaction (「收到」, "+1"): which line
    it answers is for the acknowledgement rule below."""
    me = state.speakers[index]
    own = structure.previous_own[index]
    chosen = state.thread_of[choice]
    answers = structure.asks[choice] and not structure.confirm[index]
    if own < 0 or me in state.members[chosen] or answers or structure.reaction[index]:
        return -1
    mine = state.thread_of[own]
    if state.starters[mine] != me or mine not in state.open_threads:
        return -1
    if state.speakers[choice] in state.members[mine]:
        return mine
    words = state.tokens[index]
    return mine if len(words & state.words[mine]) >= len(words & state.words[chosen]) else -1


def _small_group_rules(index: int, choice: int, state: Decoding, structure: Structure) -> int:
    """The parent after the rules below, given the scored `choice` (-1 = a new thread).

    Only for unaddressed messages (whom a message names decides, see `decode`):

    - back after a wait: a statement the scores would start a thread with, by someone whose
      previous message was a wait (「我看看」, "let me check") in a thread still open, is the
      conclusion of that wait: it joins it (「找到了，是证书的问题」 after 「我看看」); a question
      is a new topic ("i'll check the man" … "how hard is it to recover files?");
    - no orphan confirmation: a confirmation the scores would start a thread with joins the
      speaker's own open thread (「升级了 没再报了 👍」);
    - an answer after a pause: a statement the scores would start a thread with, coming more
      than `merge_gap` after an unanswered question by someone else (nobody but its asker has
      spoken in its thread), answers it (a question and its answer two minutes later); a reply
      typed in the same minute in a busy channel is more often someone's other conversation;
    - a "me too" joins the open thread it shares most words with, when that is more than it
      shares with the thread the scores chose (「+1 我也一直转圈」 to 「一直转圈同步失败」, not to
      the exchange just before it; 「我也老报 E1024」 to the E1024 report, not to its speaker's
      earlier "me too" in another one);
    - a report after the fix: a report by someone who has not spoken in the thread the scores
      chose, once that thread's starter has confirmed it works and raised nothing since, starts
      a thread even when it shares words (「安装 3.2.1 报 0x80070005」 after 「装了 3.2.1 好了」 … 「谢谢小云」);
    - a new report: a report (`cues.is_report`: 「充值没到账」, "the app crashes") that shares
      no word with the thread the scores chose, by someone who has not spoken in it, starts a
      thread, unless it comes right after someone else's question (「应该不行吧」 answers it);
    - an answer to the unanswered: when the thread the scores chose shares no word with the
      message and ended in this speaker's own reaction or wait (they closed or paused it
      themselves: 「👍」, 「稍等」), and the message just before is by someone else, in a thread
      only its author has spoken in, the message takes that thread up if the two make a pair:
      an answer to a question, or a question about a report (staff's 「安卓还是苹果」
      after a second user's report, not after its own 「稍等」 to the first;
      「每周日晚12点」 after 「作业提交截止时间是几号」, not after its own 「我看看」).

    All of them were kept because on the dev corpora (IRC, Gitter, synthetic groups, hand-written
    chats, the sample) they fixed links and broke none; rules that started a thread after a
    closed exchange or for a newcomer's statement, or moved a confirmation to the thread it
    shares words with, broke more than they fixed (see `benchmarks/README.md`).
    """
    if structure.addressed[index]:
        return choice
    if choice < 0:
        own = structure.previous_own[index]
        own_open = own >= 0 and state.thread_of[own] in state.open_threads
        if own_open and structure.wait[own] and not structure.asks[index]:
            return own
        if structure.confirm[index] and own_open:
            return state.tails[state.thread_of[own]]
        previous = index - 1
        if structure.pause[index] and previous >= 0 and state.speakers[previous] != state.speakers[index]:
            opener = state.thread_of[previous]
            if (
                opener in state.open_threads
                and state.members[opener] == {state.speakers[previous]}
                and state.asked[opener]
                and not structure.asks[index]
                and not structure.slight[index]
            ):
                return previous
        return choice
    chosen = state.thread_of[choice]
    if structure.me_too[index]:
        mine = state.tokens[index]
        shared = [(len(mine & state.words[t]), state.tails[t]) for t in state.open_threads if t != chosen]
        best = max(shared, default=(0, -1))
        return best[1] if best[0] > len(mine & state.words[chosen]) else choice
    me = state.speakers[index]
    settled = state.settled[chosen] and me not in state.members[chosen]
    if settled and structure.report[index] and not structure.asks[index]:
        return -1
    if state.tokens[index] & state.words[chosen]:
        return choice
    if structure.slight[index]:
        return choice
    if (
        structure.report[index]
        and not structure.asks[index]
        and not (index > 0 and structure.asks[index - 1] and state.speakers[index - 1] != me)
        and me not in state.members[chosen]
    ):
        return -1
    tail = state.tails[chosen]
    if state.speakers[tail] != me or not (structure.reaction[tail] or structure.wait[tail]):
        return choice
    previous = index - 1
    opener = state.thread_of[previous]
    if (
        state.speakers[previous] != me
        and opener != chosen
        and opener in state.open_threads
        and state.members[opener] == {state.speakers[previous]}
        and state.content[opener]
        and state.asked[opener] != structure.asks[index]
    ):
        return previous
    return choice


def addressee_latest(prepared: F.Prepared) -> list[int]:
    """Per message, the latest earlier message of the person it addresses (-1: addresses nobody who spoke)."""
    last_by: dict[int, int] = {}
    out = []
    for index, (speaker, addressed) in enumerate(zip(prepared.speakers.tolist(), prepared.addresses, strict=True)):
        found = [last_by[ref] for ref in addressed if ref in last_by]
        out.append(max(found) if found else -1)
        last_by[speaker] = index
    return out


def me_too_after_question(prepared: F.Prepared, settings: ThreadSettings) -> list[bool]:
    """A "me too" right after someone else's new question joins that question."""
    me_too = prepared.static[:, 0, F.STATIC.index("i_me_too")] > 0
    question = prepared.static[:, 0, F.STATIC.index("i_question")] > 0
    gap = settings.answer_gap.total_seconds()
    return [
        index > 0
        and bool(me_too[index] and question[index - 1])
        and prepared.speakers[index] != prepared.speakers[index - 1]
        and prepared.times[index] - prepared.times[index - 1] <= gap
        for index in range(len(prepared.ids))
    ]


def fresh_questions(prepared: F.Prepared, topics: interleave.Topics | None = None) -> list[bool]:
    """Questions that address nobody: not by name, nor, with `topics`, as "you" ("did you try the
    reset button?" after a report asks someone there)."""
    question = prepared.static[:, 0, F.STATIC.index("i_question")] > 0
    to_you = topics.asks_you if topics is not None else [False] * len(prepared.ids)
    return [
        bool(q) and not addressed and not you
        for q, addressed, you in zip(question.tolist(), prepared.addresses, to_you, strict=True)
    ]


REACTION_CUES: tuple[str, ...] = ("i_noise", "i_me_too")


def reactions(prepared: F.Prepared) -> list[bool]:
    """Acknowledgements and "me too"s: in IRC train 5 % of them start a thread (0 of 26 "me too"s)."""
    flags = np.zeros(len(prepared.ids), dtype=bool)
    for name in REACTION_CUES:
        flags |= prepared.static[:, 0, F.STATIC.index(name)] > 0
    return flags.tolist()


def quoted_indices(messages: Sequence[Message], prepared: F.Prepared) -> list[int]:
    """Per message, the earlier message it quotes, else the 接龙 entry it copies (`chain_copies`), else -1."""
    position = {message_id: index for index, message_id in enumerate(prepared.ids)}
    quoted = []
    for index, (message, copied) in enumerate(zip(messages, chain_copies(messages), strict=True)):
        target = position.get(message.reply_to, -1) if message.reply_to else -1
        quoted.append(target if 0 <= target < index else copied)
    return quoted


CHAIN_HEAD = 20  # characters an entry needs (a bare "nick:" or "name, yes" is no chain entry)


def chain_copies(messages: Sequence[Message], window: int = 50) -> list[int]:
    """Per message, the latest of the previous `window` messages whose whole text it begins with
    and extends, -1 if none. A 接龙 sign-up in Chinese groups is passed on that way (「周六下午
    打球 接龙 1.老K 2.小舟」 → 「... 3.萍萍」), often after other topics or an hour later: the copy
    answers the entry it copies as a quote would."""
    texts = [(message.text or "").strip() for message in messages]
    by_head: dict[str, list[int]] = {}
    out = []
    for index, text in enumerate(texts):
        found = -1
        if len(text) > CHAIN_HEAD:
            earlier = by_head.setdefault(text[:CHAIN_HEAD], [])
            for prior in reversed(earlier):
                if index - prior > window:
                    break
                if len(texts[prior]) < len(text) and text.startswith(texts[prior]):
                    found = prior
                    break
            earlier.append(index)
        out.append(found)
    return out


def prepare_conversation(messages: Sequence[Message], names: NameIndex, settings: ThreadSettings) -> F.Prepared:
    """Static features of one conversation, with the rule-based assigner's decisions among them."""
    utterances = merge_utterances(messages, settings.merge_gap)
    rule_threads, rule_links = assign_threads(utterances, names, settings)
    # A one-message utterance's tokens are that message's: no need to segment the text twice.
    known: dict[str, frozenset[str]] = {u.messages[0].id: u.tokens for u in utterances if len(u.messages) == 1}
    tokens = [known.get(message.id) for message in messages]
    return F.prepare(messages, names, rule_threads, rule_links, tokens)


def run_cascade(
    prepared: F.Prepared,
    quoted: Sequence[int],
    model: ReplyModel,
    settings: ThreadSettings,
    stages: int | None = None,
    topics: interleave.Topics | None = None,
) -> tuple[list[int], np.ndarray, np.ndarray]:
    """Parents chosen by the cascade (its first `stages` tree stages), the kept slots and the last scores."""
    valid = prepared.candidates >= 0
    scores = np.full(valid.shape, _NEG)
    scores[valid] = model.additive.predict(prepared.static[valid])
    slots = prune(scores, model.prune)
    scores = np.where(slots >= 0, np.take_along_axis(scores, np.maximum(slots, 0), axis=1), _NEG)
    decoding = model.decoding(settings)
    parents = decode(prepared, quoted, slots, scores, decoding)
    chosen = model.stages if stages is None else model.stages[:stages]
    for number, trees in enumerate(chosen):
        rows = stage_rows(prepared, slots, trajectory_features(prepared, slots, parents), scores)
        kept = slots >= 0
        scores = np.full(kept.shape, _NEG)
        scores[kept] = trees.predict(rows[kept])
        joiners = addressed = fresh = structure = None
        if number == len(model.stages) - 1:
            # Decoding rules of the last stage only: the stages were trained on plain decodings.
            scores[:, 0] += model.self_bias
            if model.small_self_bias:
                speakers = prepared.speakers.tolist()
                scores[:, 0] += np.where(small_group_flags(speakers, settings), model.small_self_bias, 0.0)
            joiners = reactions(prepared) if model.reactions_join else None
            addressed = addressee_latest(prepared) if model.addressed_join else None
            fresh = fresh_questions(prepared, topics) if model.fresh_apart else None
            structure = structure_of(prepared, settings) if model.small_groups else None
        parents = decode(
            prepared,
            quoted,
            slots,
            scores,
            decoding,
            joiners,
            me_too_after_question(prepared, settings),
            addressed,
            fresh,
            structure,
            topics if structure is not None else None,
        )
    return parents, slots, scores


def assign_learned(
    messages: Sequence[Message], names: NameIndex, settings: ThreadSettings, model: ReplyModel | None = None
) -> tuple[list[list[str]], dict[str, str]]:
    """Group one conversation's messages (time order, no system lines) into threads with the learned scorer.

    Returns the threads (message ids in time order) and the reply links chosen
    (message id -> the earlier message it answers); thread starters have no link.
    """
    if not messages:
        return [], {}
    model = model or reply_model()
    prepared = prepare_conversation(messages, names, settings)
    topics = interleave.topics_of(messages)
    parents, _, _ = run_cascade(prepared, quoted_indices(messages, prepared), model, settings, topics=topics)
    return threads_of(prepared.ids, parents)


def threads_of(ids: Sequence[str], parents: Sequence[int]) -> tuple[list[list[str]], dict[str, str]]:
    root = list(range(len(ids)))
    groups: dict[int, list[str]] = {}
    links: dict[str, str] = {}
    for index, parent in enumerate(parents):
        if parent >= 0:
            root[index] = root[parent]
            links[ids[index]] = ids[parent]
        groups.setdefault(root[index], []).append(ids[index])
    return list(groups.values()), links
