"""The tuning / held-out split every benchmark shares, fixed before any result was looked at.

A question is held out when the SHA-1 of its key (LoCoMo and LongMemEval: the qid; the sample:
the question text) falls in the first third of the hash space. Nothing (no feature, threshold or
setting) is chosen on held-out questions; scripts report both parts.
"""

from __future__ import annotations

import hashlib

SPLITS = ("tune", "heldout")


def split_of(key: str) -> str:
    return "heldout" if hashlib.sha1(key.encode("utf-8")).digest()[0] % 3 == 0 else "tune"
