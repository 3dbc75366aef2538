"""Interleaved topics in small groups: decoding rules after `learned.small_group_choice`, and two passes.

In a small group two or three topics run at once, people answer an older question after someone
else has asked a new one, a new question follows a thread that has just ended, and people come
back hours later. The reply model, trained on IRC, mostly follows recency there. These rules read
the structure instead (unaddressed messages only; whom a message names decides otherwise):

- `new_topic`: a question that calls on the group or marks a change of subject
  (`cues.opens_topic`: "also who's collecting…", 「有人知道…」, 「另外问下」) and shares no word
  with the scored thread starts a thread, and so does a greeting to the group (`cues.greets`:
  「大家早」, "morning all"), unless it follows the speaker's own line ("can anybody help" after
  one's own report);
- `own_picture`: a picture goes with its sender's own latest line while that thread is open;
- `own_aside`: the speaker's statement right after their own new topic goes back to their thread;
- `answers_open_question`: an answer of the type the latest open question asks for joins it;
- `takes_up_unanswered`: after pausing one's own thread, one takes up the latest question or
  report nobody has answered;
- after either assigner (and `resume.resume_paused`): `asked_again` joins a question asked again
  to the first asking, `confirmed_fix` moves a stray confirmation to the fix it confirms.

Each rule was kept only when, on the dev corpora, it fixed more links than it broke and broke
none on IRC dev; see `benchmarks/README.md` for the counts and what was dropped.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from datetime import timedelta

from threadkeep.model import Message
from threadkeep.text import is_noise, token_set
from threadkeep.threads.cues import (
    asks,
    asks_how_long,
    asks_when,
    asks_who,
    asks_you,
    calls_for_answer,
    confirms_fix,
    greets,
    is_ack,
    is_report,
    opens_topic,
    points_back,
    tells_duration,
    tells_time,
    volunteers,
)
from threadkeep.threads.decoding import Decoding, Structure
from threadkeep.threads.rules import ThreadSettings


@dataclass(frozen=True, slots=True)
class Topics:
    """Per-message facts the rules read, from the message text."""

    opener: list[bool]  # a question that opens a topic (`cues.opens_topic`)
    anaphora: list[bool]  # points back ("that thing", 「这个」): it continues something
    question: list[bool]  # asks something (`cues.asks`, or a 「谁」 / "who" in it)
    asks_who: list[bool]  # asks who will do something (「谁值班」, "who's collecting Nana")
    asks_when: list[bool]  # asks for a time (「几点到」, "what time is everyone landing")
    volunteers: list[bool]  # a first-person offer (「我」, 「我也在」, "I can if I get the car")
    tells_time: list[bool]  # names a time of day (「下午两点半」, "10:40 from gatwick")
    report: list[bool]  # something is broken (`cues.is_report`)
    greeting: list[bool]  # a greeting to the group and nothing else (`cues.greets`)
    media: list[bool]  # a picture, file or video with no text of its own
    asks_how_long: list[bool]  # asks for a duration (「电池能用多久」, "how long does it take")
    tells_duration: list[bool]  # names a duration (「大概8个月」, "two weeks")
    asks_you: list[bool]  # a question to someone there (`cues.asks_you`: "did you try…", 「你什么版本」)


def topics_of(messages: Sequence[Message]) -> Topics:
    texts = [message.text or "" for message in messages]
    return Topics(
        [opens_topic(text) for text in texts],
        [points_back(text) for text in texts],
        [asks(text) or asks_who(text) for text in texts],
        [asks_who(text) for text in texts],
        [asks_when(text) for text in texts],
        [volunteers(text) for text in texts],
        [tells_time(text) for text in texts],
        [is_report(text) for text in texts],
        [greets(text) for text in texts],
        [message.is_media for message in messages],
        [asks_how_long(text) for text in texts],
        [tells_duration(text) for text in texts],
        [asks_you(text) for text in texts],
    )


def new_topic(index: int, choice: int, state: Decoding, structure: Structure, topics: Topics) -> int:
    """A topic-opening question, or a greeting to the group, sharing no word with the scored thread
    starts a thread."""
    if choice < 0 or not (topics.opener[index] or topics.greeting[index]):
        return choice
    if _telling(state.tokens[index]) & state.words[state.thread_of[choice]]:
        return choice
    # "anyone?" after one's own report calls for help with it ("can anybody help", 「有人知道吗」):
    # only a question after one's own reaction or sticker leaves one's own turn.
    if state.speakers[choice] == state.speakers[index] and not structure.slight[choice]:
        return choice
    if topics.anaphora[index]:
        return choice
    return -1


def own_aside(index: int, choice: int, state: Decoding, structure: Structure, topics: Topics) -> int:
    """A statement right after one's own new topic, sharing no word with it, goes back to the thread
    one was in before: "Also who's collecting Nana tomorrow" (a thread of its own) then "Check his
    paw first" (the dog's limp, where the speaker's previous line was).

    Only when the scores chose the speaker's question just before, a topic opener
    (`cues.opens_topic`) that nobody has answered, and the speaker's line before it is in an open
    thread with someone else in it.
    """
    if choice < 0 or choice != index - 1:
        return choice
    me = state.speakers[index]
    if state.speakers[choice] != me or topics.question[index] or structure.slight[index] or not topics.opener[choice]:
        return choice
    chosen = state.thread_of[choice]
    if state.members[chosen] != {me} or state.tails[chosen] != choice:
        return choice
    if _telling(state.tokens[index]) & state.tokens[choice]:
        return choice
    for own in range(choice - 1, max(choice - _OPEN_LOOK_BACK, 0) - 1, -1):
        if state.speakers[own] != me:
            continue
        thread = state.thread_of[own]
        if thread == chosen or thread not in state.open_threads or len(state.members[thread]) < 2:
            return choice
        return state.tails[thread]
    return choice


def _telling(tokens: frozenset[str]) -> frozenset[str]:
    """Tokens that can tie a message to a topic: a single Chinese character (谁, 吃, 点) is too common."""
    return frozenset(token for token in tokens if len(token) > 1 or token.isascii())


_OPEN_LOOK_BACK = 12  # messages searched back for an open question: a bounded loop per message


def answers_open_question(index: int, choice: int, state: Decoding, structure: Structure, topics: Topics) -> int:
    """An answer of the type an open question asks for joins it: a first-person offer answers a
    "who" (「我」, "I can if I get the car"), a time answers a "when" ("10:40 from gatwick"), a
    duration a "how long" (「正常用大概8个月左右」 to 「门锁电池一般能用多久？」).

    Only the latest question by someone else in the last `_OPEN_LOOK_BACK` messages counts, unless
    the scores chose the speaker's own message that says more than a wait, a reaction or a
    question (going on with what one was saying).
    """
    if topics.question[index] or structure.slight[index]:
        return choice
    me = state.speakers[index]
    # One's own question just asked does not hold one's answer to someone else's ("does the car
    # hire include insurance" … "14:05 from manchester" answers "what time is everyone landing").
    own = choice >= 0 and state.speakers[choice] == me
    if own and not (structure.slight[choice] or structure.wait[choice] or topics.question[choice]):
        return choice
    chosen = state.thread_of[choice] if choice >= 0 else -1
    for earlier in range(index - 1, max(index - _OPEN_LOOK_BACK, 0) - 1, -1):
        if state.speakers[earlier] == me or not topics.question[earlier]:
            continue
        thread = state.thread_of[earlier]
        typed = (
            (topics.asks_who[earlier] and topics.volunteers[index])
            or (topics.asks_when[earlier] and topics.tells_time[index])
            or (topics.asks_how_long[earlier] and topics.tells_duration[index])
        )
        if not typed or thread == chosen or thread not in state.open_threads:
            return choice
        return state.tails[thread]
    return choice


def takes_up_unanswered(index: int, choice: int, state: Decoding, structure: Structure, topics: Topics) -> int:
    """After pausing one's own thread, one takes up the question or report others left unanswered.

    When the scores chose a thread that ends in this speaker's own wait or reaction (「收到 我问下
    售后工程师」) and shares no word with the message, and someone else has since asked a question
    or reported a problem that nobody has answered (its thread has only its author), the message
    takes it up if the two make a pair: a statement answers the question, a question asks about
    the report (staff's 「刘工您是安卓还是苹果」 to 「我家的地图突然没了」 three messages before).
    The latest such message in the last `_OPEN_LOOK_BACK` counts.
    """
    if choice < 0 or structure.slight[index]:
        return choice
    me = state.speakers[index]
    chosen = state.thread_of[choice]
    tail = state.tails[chosen]
    if state.speakers[tail] != me or not (structure.slight[tail] or structure.wait[tail]):
        return choice
    if _telling(state.tokens[index]) & state.words[chosen]:
        return choice
    for earlier in range(index - 1, max(index - _OPEN_LOOK_BACK, tail) - 1, -1):
        thread = state.thread_of[earlier]
        author = state.speakers[earlier]
        if author == me:
            return choice
        if thread == chosen or thread not in state.open_threads or state.members[thread] != {author}:
            continue
        pair = topics.report[earlier] if topics.question[index] else topics.question[earlier]
        return state.tails[thread] if pair else choice
    return choice


def own_picture(index: int, choice: int, state: Decoding, structure: Structure, topics: Topics) -> int:
    """A picture goes with its sender's own latest line, while that thread is open ("Airbnb is booked!!"
    then, after someone else's question, "[image]"): it shows what they were saying, not what someone
    else said in between."""
    if not topics.media[index]:
        return choice
    me = state.speakers[index]
    for own in range(index - 1, max(index - _OPEN_LOOK_BACK, 0) - 1, -1):
        if state.speakers[own] != me:
            continue
        thread = state.thread_of[own]
        if thread not in state.open_threads or (choice >= 0 and state.thread_of[choice] == thread):
            return choice
        return own
    return choice


Rule = Callable[[int, int, Decoding, Structure, Topics], int]
RULES: tuple[Rule, ...] = (own_picture, new_topic, own_aside, answers_open_question, takes_up_unanswered)


def interleave_choice(index: int, choice: int, state: Decoding, structure: Structure, topics: Topics) -> int:
    """The parent after the rules (-1 = a new thread), given the choice so far; addressed messages keep it."""
    if structure.addressed[index]:
        return choice
    for rule in RULES:
        choice = rule(index, choice, state, structure, topics)
    return choice


def asked_again(
    messages: Sequence[Message],
    groups: list[list[str]],
    reply_to: dict[str, str],
    settings: ThreadSettings,
) -> tuple[list[list[str]], dict[str, str]]:
    """`groups` with each thread opened by a question asked again merged into the first asking.

    A thread's first message asks again when it is a question by someone whose own latest earlier
    question or report (within `max_span` and `_LOOK_BACK` messages, in another thread) it
    continues: it is a short call for an answer (`cues.calls_for_answer`: 「有人吗」, 「crontab的事
    有人知道吗」, "anyone? the flash thing"), or, within `_SHARED_WITHIN`, it shares a word with it
    that nobody else used since and nobody else said more than an acknowledgement in that thread
    since ("Can somebody help me with my disappearing sound?" after "Sound stopped working").
    The opener then replies to that earlier message.
    """
    position = {message.id: index for index, message in enumerate(messages)}
    words = _Words(messages)
    thread_of: dict[int, int] = {}
    threads: list[list[int]] = []
    for group in sorted(groups, key=lambda ids: min(position[mid] for mid in ids)):
        members = sorted(position[mid] for mid in group)
        threads.append(members)
        thread_of.update(dict.fromkeys(members, len(threads) - 1))
    merged = list(range(len(threads)))  # each thread's final thread (earlier ones first)
    replies = dict(reply_to)
    for number, members in enumerate(threads):
        opener = members[0]
        earlier = _asked_before(messages, opener, words, thread_of, settings)
        if earlier is None:
            continue
        merged[number] = merged[thread_of[earlier]]
        replies[messages[opener].id] = messages[earlier].id
    out: dict[int, list[int]] = {}
    for number, members in enumerate(threads):
        out.setdefault(merged[number], []).extend(members)
    return [[messages[index].id for index in sorted(members)] for members in out.values()], replies


_LOOK_BACK = 40  # messages searched back for the earlier asking: a bounded loop per opener
# A question sharing a word with one's own unanswered one asks it again within the hour; hours
# later it is more often a new problem with the same program (Gitter dev: 4 of 4 beyond 1 h 9 min).
_SHARED_WITHIN = timedelta(hours=1)


class _Words:
    """Content tokens of the messages, each segmented once and only when a rule looks at it."""

    def __init__(self, messages: Sequence[Message]) -> None:
        self.messages = messages
        self.known: dict[int, frozenset[str]] = {}

    def __getitem__(self, index: int) -> frozenset[str]:
        found = self.known.get(index)
        if found is None:
            text = self.messages[index].text or ""
            found = token_set(text) if text and not is_noise(text) else frozenset()
            self.known[index] = found
        return found


def _asked_before(
    messages: Sequence[Message],
    opener: int,
    words: _Words,
    thread_of: dict[int, int],
    settings: ThreadSettings,
) -> int | None:
    message = messages[opener]
    text = message.text or ""
    if not asks(text):
        return None
    calls = calls_for_answer(text)
    seen: set[str] = set()  # words of other people's messages since
    answered: set[int] = set()  # threads someone else said more than a reaction in since
    for index in range(opener - 1, max(opener - _LOOK_BACK, 0) - 1, -1):
        earlier = messages[index]
        if message.sent_at - earlier.sent_at > settings.max_span:
            return None
        if earlier.sender != message.sender or thread_of[index] == thread_of[opener]:
            seen |= words[index]
            if earlier.sender != message.sender and words[index] and not is_ack(earlier.text or ""):
                answered.add(thread_of[index])
            continue
        earlier_text = earlier.text or ""
        if not (asks(earlier_text) or is_report(earlier_text)):
            continue
        # Sharing a word is evidence only for a question nobody took up: someone who got an answer
        # and asks about the same program again is usually on to a new problem.
        shared = (
            message.sent_at - earlier.sent_at <= _SHARED_WITHIN
            and thread_of[index] not in answered
            and (words[opener] & words[index]) - seen
        )
        return index if shared or calls else None
    return None


_CONFIRM_LOOK_BACK = 80  # messages searched back for the fix a confirmation confirms
_FILLERS = frozenset({"now", "too", "again", "also", "still", "thank", "thanks"})


def confirmed_fix(
    messages: Sequence[Message],
    groups: list[list[str]],
    reply_to: dict[str, str],
    settings: ThreadSettings,
) -> tuple[list[list[str]], dict[str, str]]:
    """`groups` with each stray confirmation moved to the thread of the fix it confirms.

    A confirmation ("Acme confirmed exports work now 👍" two hours later) that decoding put in a
    thread it shares no word with (the lunch chat that happened to be last) goes to the latest
    earlier thread its speaker spoke in that shares a word with it that no other thread used in
    between, within `max_span`; it replies to that thread's latest message before it.
    """
    position = {message.id: index for index, message in enumerate(messages)}
    words = _Words(messages)
    thread_of: dict[int, int] = {}
    threads = [sorted(position[mid] for mid in group) for group in groups]
    for number, members in enumerate(threads):
        thread_of.update(dict.fromkeys(members, number))
    replies = dict(reply_to)
    moved = False
    for index, message in enumerate(messages):
        text = message.text or ""
        if not confirms_fix(text) or is_report(text) or not words[index]:  # "not working" is no confirmation
            continue
        own = thread_of[index]
        if any(words[index] & words[other] for other in threads[own] if other != index):
            continue
        target = _confirmed(messages, index, words, thread_of, settings)
        if target is None:
            continue
        threads[own].remove(index)
        threads[thread_of[target]].append(index)
        thread_of[index] = thread_of[target]
        replies[message.id] = messages[max(i for i in threads[thread_of[target]] if i < index)].id
        for other in threads[own]:  # whatever replied to it stays where it was
            if replies.get(messages[other].id) == message.id:
                replies[messages[other].id] = messages[max([i for i in threads[own] if i < other] or [other])].id
        moved = True
    if not moved:
        return groups, reply_to
    for mid, parent in list(replies.items()):
        if parent == mid:
            del replies[mid]
    return [[messages[index].id for index in sorted(members)] for members in threads if members], replies


def _confirmed(
    messages: Sequence[Message],
    index: int,
    words: _Words,
    thread_of: dict[int, int],
    settings: ThreadSettings,
) -> int | None:
    message = messages[index]
    # The confirmation's own words ("works", "fixed", 「好了」) say nothing about what it confirms.
    mine = frozenset(t for t in _telling(words[index]) if not (confirms_fix(t) or is_report(t) or t in _FILLERS))
    seen: set[str] = set()  # words of other threads since
    for earlier in range(index - 1, max(index - _CONFIRM_LOOK_BACK, 0) - 1, -1):
        if message.sent_at - messages[earlier].sent_at > settings.max_span:
            return None
        if thread_of[earlier] == thread_of[index]:
            continue
        shared = mine & words[earlier]
        if shared - seen and messages[earlier].sender == message.sender:
            return earlier
        if shared - seen:
            # The speaker must have spoken in that thread: look for it, then decide.
            thread = thread_of[earlier]
            if any(messages[i].sender == message.sender and thread_of[i] == thread for i in range(earlier, index)):
                return earlier
        seen |= words[earlier]
    return None
