"""Decoding with hand-set scores: the scored choice of every message is known, so a test sees what the
decoding rules make of it."""

from __future__ import annotations

import numpy as np

from threadkeep.model import Message
from threadkeep.threads import interleave
from threadkeep.threads import learned as L
from threadkeep.threads.mentions import NameIndex
from threadkeep.threads.rules import ThreadSettings

SETTINGS = ThreadSettings()


def decode_picks(
    messages: list[Message],
    picks: dict[str, str | None],
    *,
    small_group_rules: bool = True,
    interleave_rules: bool = False,
) -> dict[str, str | None]:
    """Parents decoded when the scores pick `picks[id]` (None = a new thread; default: the previous message)."""
    prepared = L.prepare_conversation(messages, NameIndex(messages), SETTINGS)
    position = {message.id: index for index, message in enumerate(messages)}
    n, slots = prepared.candidates.shape
    scores = np.full((n, slots), -np.inf)
    for index, message in enumerate(messages):
        scores[index, 0] = 0.0  # the self-link is always offered
        wanted = picks.get(message.id, messages[index - 1].id if index else None)
        if wanted is not None:
            slot = int(np.flatnonzero(prepared.candidates[index] == position[wanted])[0])
            scores[index, slot] = 1.0  # beats the self-link
    kept = np.broadcast_to(np.arange(slots), (n, slots))
    structure = L.structure_of(prepared, SETTINGS) if small_group_rules else None
    topics = interleave.topics_of(messages) if interleave_rules else None
    parents = L.decode(prepared, [-1] * n, kept, scores, SETTINGS, structure=structure, topics=topics)
    return {message.id: (messages[p].id if p >= 0 else None) for message, p in zip(messages, parents, strict=True)}
