"""Threads taken up again after a pause.

The rules close a thread once it has been idle for `idle` (30 min), the learned model once idle for
the gap it was trained to decode with (`ReplyModel.idle`, 2 h): in a busy channel a line half an
hour later is usually a new topic. In a small group people come back to the same problem hours
later ("sensor replaced, oven 2 is back up", 「验真好了 能用了」) with no quote or mention to say so.
What does say so is the evidence: the new thread's first message is a confirmation ("works now",
「好了」), or a statement by someone whose last line in an earlier, closed thread was a wait ("let
me check", 「我看看」) or a promise of a later step (`cues.promises`: 「行 我晚点挪回去试试」, "I'll
keep an eye on the app"), or a question to whoever went to look there (「@客服 小组件那个有消息了吗」
after 「我反馈给研发，有消息告诉你」); it is by one of that thread's people, no other question and
no new report; and it shares a word with that thread that no other thread used in the meantime. Then the new
thread continues the earlier one, within `max_span` of its start. The shared word is not needed
when that wait or promise is the speaker's very last line before: they come back to report ("Got
her, on the way home" five hours after "I'll keep an eye on the app").

In a small group (at most `ThreadSettings.small_group` people among the latest messages: 12 among
40) any statement by one of the thread's people takes it up when it shares `SHARED_WORDS` (3) such words with it
(「早上那个延迟 回头跟报表组说一下」 two hours after the replication-delay alert). In a busy channel
the same person's line hours later is usually a new problem ("hi, still struggling with GFX"), and
one shared word is too little anywhere ("Bins out tonight" is not "it logged me out"). There too,
the very next line after a question or report nobody took up, by someone else, answers it however
late (`_taken_up`: "sorry Priya, the standing order ran twice" 70 minutes after "my rent went out
twice this month??"), unless it asks something new itself; and a confirmation as the very next line
after a thread its speaker took part in confirms it ("much better, full bars in my room"). (Chosen on
the dev corpora: without the size condition IRC dev lost 1.2 exact F; with one shared word the
hand chats lost more than they gained.)
"""

from __future__ import annotations

from collections.abc import Callable
from functools import cache

from threadkeep.model import Message
from threadkeep.text import is_noise, token_set
from threadkeep.threads.cues import asks, asks_you, confirms_fix, is_report, is_wait, promises
from threadkeep.threads.rules import ThreadSettings, small_group_flags

# Words a small group's statement must share with a paused thread, and no other thread used since, to take it up.
# Chosen on held-out small groups (rule R in benchmarks/reply_model_decisions.md).
SHARED_WORDS = 3


def resume_paused(
    messages: list[Message],
    groups: list[list[str]],
    reply_to: dict[str, str],
    settings: ThreadSettings,
) -> tuple[list[list[str]], dict[str, str]]:
    """`groups` with each thread that takes up a paused one merged into it (see the module docstring).
    `messages` are the assigned messages in time order; the opener of a merged thread replies to the
    last message of the thread it continues."""
    position = {message.id: index for index, message in enumerate(messages)}

    @cache
    def words(index: int) -> frozenset[str]:
        text = messages[index].text
        return token_set(text) if text and not is_noise(text) else frozenset()

    threads: list[list[int]] = []  # message positions of each thread, in time order
    thread_of: dict[int, int] = {}
    replies = dict(reply_to)
    previous_own = _previous_own(messages)
    small = small_group_flags([message.sender for message in messages], settings)
    for group in sorted(groups, key=lambda ids: min(position[mid] for mid in ids)):
        members = sorted(position[mid] for mid in group)
        target = _paused_thread(messages, members[0], threads, thread_of, words, previous_own, small, settings)
        if target is None:
            target = len(threads)
            threads.append(members)
        else:
            replies[messages[members[0]].id] = messages[threads[target][-1]].id
            threads[target] = sorted(threads[target] + members)
        thread_of.update(dict.fromkeys(members, target))
    return [[messages[index].id for index in thread] for thread in threads], replies


def _paused_thread(
    messages: list[Message],
    opener: int,
    threads: list[list[int]],
    thread_of: dict[int, int],
    words: Callable[[int], frozenset[str]],
    previous_own: list[int],
    small: list[bool],
    settings: ThreadSettings,
) -> int | None:
    """The thread that the message at `opener` takes up again, if the evidence says so."""
    message = messages[opener]
    text = message.text or ""
    if not text or is_report(text):
        return None
    # A question takes a thread up only when it asks whoever went to look there; any other is a new topic.
    chasing = set(message.mentions) if asks(text) else None
    if chasing is not None and not chasing:
        return _taken_up(messages, opener, threads, thread_of, small[opener], settings)
    confirms = chasing is None and confirms_fix(text)
    talked = chasing is None and small[opener]
    now = message.sent_at
    # Threads are listed in the order they started: the first one too old ends the search.
    for number in range(len(threads) - 1, -1, -1):
        thread = threads[number]
        if now - messages[thread[0]].sent_at > settings.max_span:
            break
        if now - messages[thread[-1]].sent_at <= settings.idle:
            continue
        own = [index for index in thread if messages[index].sender == message.sender]
        if not own:
            continue
        evidenced = False
        if chasing is not None:
            waited = [index for index in thread if messages[index].sender in chasing]
            if not waited or not is_wait(messages[waited[-1]].text or ""):
                continue
        else:
            evidenced = confirms or _pauses(messages[own[-1]].text or "")
            if not (evidenced or talked):
                continue
        shared = words(opener) & frozenset().union(*map(words, thread))
        for index in range(thread[0], opener):
            if not shared:
                break
            if thread_of[index] != number:
                shared -= words(index)
        if shared and (chasing is not None or evidenced or len(shared) >= SHARED_WORDS):
            return number
    # Back from one's own wait or promise with nothing said in between ("I'll keep an eye on the
    # app" … five hours … "Got her, on the way home"): the report back needs no shared word, when no
    # thread has one.
    last = previous_own[opener]
    if chasing is None and last >= 0 and _pauses(messages[last].text or ""):
        number = thread_of[last]
        started, ended = messages[threads[number][0]].sent_at, messages[threads[number][-1]].sent_at
        if now - started <= settings.max_span and now - ended > settings.idle:
            return number
    return _taken_up(messages, opener, threads, thread_of, small[opener], settings)


def _taken_up(
    messages: list[Message],
    opener: int,
    threads: list[list[int]],
    thread_of: dict[int, int],
    small: bool,
    settings: ThreadSettings,
) -> int | None:
    """The thread that ends with the line just before `opener`, however long ago, in a small group,
    when nothing else was said in between and:

    - that thread is a question or report nobody took up and `opener`, by someone else, answers it
      ("sorry Priya, the standing order ran twice" 70 minutes after "my rent went out twice this
      month??") or asks the asker to clarify (「你什么版本」 40 minutes after 「点图标没反应」);
    - or `opener` confirms a fix and its speaker is one of that thread's people ("much better, full
      bars in my room" 40 minutes after "moved the extender…, try now")."""
    previous = opener - 1
    if not small or previous < 0 or previous not in thread_of:
        return None
    message = messages[opener]
    text = message.text or ""
    thread = threads[thread_of[previous]]
    if thread[-1] != previous or message.sent_at - messages[thread[0]].sent_at > settings.max_span:
        return None
    people = {messages[index].sender for index in thread}
    if message.sender in people:
        return thread_of[previous] if confirms_fix(text) else None
    asker = messages[previous].sender
    if people != {asker} or (message.mentions and asker not in message.mentions):
        return None
    if asks(text) and not asks_you(text):
        return None
    texts = [messages[index].text or "" for index in thread]
    return thread_of[previous] if any(asks(line) or is_report(line) for line in texts) else None


def _pauses(text: str) -> bool:
    """The speaker went to look (「我看看」) or said they would do something later (「我晚点挪回去试试」)."""
    return is_wait(text) or promises(text)


def _previous_own(messages: list[Message]) -> list[int]:
    """Per message, the position of its speaker's message before it, -1 if none."""
    last_by: dict[str, int] = {}
    out = []
    for index, message in enumerate(messages):
        out.append(last_by.get(message.sender, -1))
        last_by[message.sender] = index
    return out
