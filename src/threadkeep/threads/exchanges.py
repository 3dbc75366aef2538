"""Assistant chats are not reconstructed: each user turn and the reply it got is one exchange."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import replace

from threadkeep.model import Message, Thread

# Sender ids and names that mean the AI side of an assistant chat.
ASSISTANT_NAMES = frozenset({"assistant", "ai", "bot", "model", "chatgpt", "gpt", "claude", "gemini", "copilot"})


def mark_turn_roles(messages: Sequence[Message]) -> list[Message]:
    """Messages of an assistant chat, each person's turn marked "user" and each AI turn "assistant".

    The assistant-export readers know the roles; a bundle (`kind: assistant`) only has
    sender ids. Its AI is the sender already marked "assistant" elsewhere in the chat, or
    named like one ("assistant", "bot", "chatgpt"...), or else whoever did not speak first.
    """
    spoken = [m for m in messages if not m.is_system]
    if not spoken:
        return list(messages)
    assistants = {m.sender for m in spoken if m.role == "assistant"}
    assistants |= {
        m.sender for m in spoken if m.sender.lower() in ASSISTANT_NAMES or m.sender_name.lower() in ASSISTANT_NAMES
    }
    if not assistants:
        assistants = {m.sender for m in spoken} - {spoken[0].sender}
    return [
        replace(m, role="assistant" if m.sender in assistants else "user") if m.role == "member" else m
        for m in messages
    ]


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
