"""Assistant chats are not reconstructed: each user turn and the reply it got is one exchange."""

from __future__ import annotations

from collections.abc import Sequence

from threadkeep.model import Message, Thread


def split_exchanges(messages: Sequence[Message]) -> list[Thread]:
    """One thread per exchange: consecutive user messages, then the replies until the next user turn."""
    threads: list[Thread] = []
    current: list[str] = []
    replying = False
    for message in messages:
        if message.is_system:
            threads.append(Thread(message.conversation, (message.id,)))
            continue
        from_user = message.role != "assistant"
        if current and from_user and replying:
            threads.append(Thread(messages[0].conversation, tuple(current), _chain(current)))
            current, replying = [], False
        current.append(message.id)
        replying = replying or not from_user
    if current:
        threads.append(Thread(messages[0].conversation, tuple(current), _chain(current)))
    return threads


def _chain(message_ids: list[str]) -> dict[str, str]:
    return dict(zip(message_ids[1:], message_ids[:-1], strict=False))
