"""Thread reconstruction: a pure function from a conversation's messages to threads."""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterable

from threadkeep.model import Message, Thread
from threadkeep.threads.exchanges import mark_turn_roles, split_exchanges
from threadkeep.threads.interleave import asked_again, confirmed_fix
from threadkeep.threads.learned import assign_learned
from threadkeep.threads.mentions import NameIndex
from threadkeep.threads.resume import resume_paused
from threadkeep.threads.rules import ThreadSettings, assign_sessions, assign_threads
from threadkeep.threads.utterances import merge_utterances

__all__ = ["ThreadSettings", "build_threads", "reconstruct", "reconstruct_conversation"]


def reconstruct_conversation(
    messages: list[Message], settings: ThreadSettings | None = None, kind: str = "group"
) -> list[Thread]:
    """Threads of one conversation. `messages` must be in time order.

    System lines each stand alone (they never join a thread's text); messages the
    platform already threaded (Slack `thread_ts`) keep the platform's threads; the
    rest go through the assigner. A direct conversation is two people talking in turn, one
    conversation at a time: it is cut into sessions by idle gap and maximum span only.
    """
    settings = settings or ThreadSettings()
    if not messages:
        return []
    conversation = messages[0].conversation
    threads: list[Thread] = []
    platform: dict[str, list[str]] = defaultdict(list)
    free: list[Message] = []
    for message in messages:
        if message.is_system:
            threads.append(Thread(conversation, (message.id,)))
        elif message.platform_thread:
            platform[message.platform_thread].append(message.id)
        else:
            free.append(message)
    for message_ids in platform.values():
        links = dict(zip(message_ids[1:], message_ids[:-1], strict=False))
        threads.append(Thread(conversation, tuple(message_ids), links))
    if kind == "direct":
        groups, reply_to = assign_sessions(free, settings)
    elif settings.assigner == "learned":
        groups, reply_to = assign_learned(free, NameIndex(messages), settings)
    elif settings.assigner == "rules":
        groups, reply_to = assign_threads(merge_utterances(free, settings.merge_gap), NameIndex(messages), settings)
    else:
        raise ValueError(f"unknown thread assigner {settings.assigner!r} (learned or rules)")
    if settings.resume_paused and kind != "direct":
        groups, reply_to = resume_paused(free, groups, reply_to, settings)
        groups, reply_to = asked_again(free, groups, reply_to, settings)
        groups, reply_to = confirmed_fix(free, groups, reply_to, settings)
    for message_ids in groups:
        links = {mid: reply_to[mid] for mid in message_ids if mid in reply_to}
        threads.append(Thread(conversation, tuple(message_ids), links))
    order = {message.id: index for index, message in enumerate(messages)}
    threads.sort(key=lambda thread: order[thread.message_ids[0]])
    return threads


def reconstruct(messages: Iterable[Message], settings: ThreadSettings | None = None) -> list[Thread]:
    """Threads of every conversation in `messages` (which must be in time order)."""
    by_conversation: dict[str, list[Message]] = defaultdict(list)
    for message in messages:
        by_conversation[message.conversation].append(message)
    threads: list[Thread] = []
    for conversation_messages in by_conversation.values():
        threads.extend(reconstruct_conversation(conversation_messages, settings))
    return threads


def build_threads(kind: str, messages: list[Message], settings: ThreadSettings | None = None) -> list[Thread]:
    """Threads of one conversation of the given kind: exchanges for assistant chats, reconstruction otherwise."""
    if kind == "assistant":
        return split_exchanges(mark_turn_roles(messages))
    return reconstruct_conversation(messages, settings, kind)
