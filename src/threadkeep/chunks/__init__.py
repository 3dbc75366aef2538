"""Chunkers: turn threads, assistant exchanges and documents into `Chunk`s."""

from __future__ import annotations

import hashlib


def chunk_id(*parts: str) -> str:
    """A stable id from what defines a chunk, so re-ingesting the same input yields the same ids."""
    digest = hashlib.sha256("\x1f".join(parts).encode("utf-8")).hexdigest()
    return digest[:20]
