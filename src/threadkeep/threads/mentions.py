"""Finding who an utterance addresses: structured @mentions, `@name` in text, IRC `nick:`."""

from __future__ import annotations

import re
from collections.abc import Iterable

from threadkeep.model import Message

_ADDRESS = re.compile(r"^\s*([^\s:,，：]{1,40})\s*[:,，：]")


class NameIndex:
    """Maps the names people are called by (refs and display names) to sender refs."""

    def __init__(self, messages: Iterable[Message]) -> None:
        self._by_name: dict[str, str] = {}
        for message in messages:
            if message.is_system:
                continue
            for name in (message.sender, message.sender_name):
                if name and len(name) >= 2:
                    self._by_name.setdefault(name.lower(), message.sender)
        # The lengths of the names, longest first: the longest name an "@" is followed by is the
        # one of these prefixes that is a name (two names of one length cannot both be).
        self._lengths = sorted({len(name) for name in self._by_name}, reverse=True)

    def resolve(self, name: str) -> str | None:
        return self._by_name.get(name.lower())

    def mentioned_in(self, text: str) -> set[str]:
        """Sender refs that `text` addresses by `@name` anywhere or `name:` / `name,` at the start."""
        found: set[str] = set()
        lowered = text.lower()
        start = lowered.find("@")
        while start != -1:
            for length in self._lengths:
                if start + length >= len(lowered):
                    continue  # no room for a name this long
                ref = self._by_name.get(lowered[start + 1 : start + 1 + length])
                if ref is not None:
                    found.add(ref)
                    break
            start = lowered.find("@", start + 1)
        match = _ADDRESS.match(text)
        if match:
            ref = self.resolve(match.group(1))
            if ref:
                found.add(ref)
        return found


def mentions_of(messages: Iterable[Message], names: NameIndex) -> set[str]:
    refs: set[str] = set()
    for message in messages:
        refs.update(message.mentions)
        refs.update(names.mentioned_in(message.text))
    return refs
