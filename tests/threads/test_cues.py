"""Cue patterns tried only where a match can start (`cues._starting_with`) find what the bare pattern finds."""

from __future__ import annotations

import json
import re

import pytest

from conftest import SAMPLES
from threadkeep.threads import cues

_PREFIXED = re.compile(r"\(\?=(\[[^\]]*\])\)\(\?:(.*)\)", re.DOTALL)
PATTERNS = sorted(
    name for name, value in vars(cues).items() if isinstance(value, re.Pattern) and _PREFIXED.fullmatch(value.pattern)
)
EDGES = [
    "ſtuck", "STUCK", "Ｓtuck", "it WORKS NOW", "that DID it 👍", "a couple of weeks", "Three Hours", "١٢:٣٠",
    "at 5pm", "05:30", "下午两点", "十点", "any of you", "you guys", "U there?", "Who's in", "can ANYONE help",
    "doesn't load", "CANNOT connect", "those same such", "解决了", "搞定", "wifi keeps dropping", "the tap is leaking",
    "no hot water again", "fine now thanks", "back to normal",
]  # fmt: skip


def texts() -> list[str]:
    path = SAMPLES / "support_group" / "messages.jsonl"
    records = [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line.strip()]
    found = [record.get("text", "") for record in records] + EDGES
    return found + [text.upper() for text in found] + [text.lower() for text in found]


def test_the_fast_patterns_are_found() -> None:
    assert len(PATTERNS) >= 8


@pytest.mark.parametrize("name", PATTERNS)
def test_a_pattern_with_its_first_characters_matches_as_the_bare_pattern(name: str) -> None:
    fast = getattr(cues, name)
    bare = re.compile(_PREFIXED.fullmatch(fast.pattern).group(2), fast.flags)
    matched = 0
    for text in texts():
        a, b = bare.search(text), fast.search(text)
        assert (a and a.span()) == (b and b.span()), (name, text)
        matched += a is not None
    assert matched > 0, name
