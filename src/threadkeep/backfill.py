"""Vectors after the text: the step that embeds what ingest stored without a vector.

Ingest commits messages, threads, chunks and the full-text index first, so everything is
searchable by its words at once; this step then claims chunks that have no vector, a batch at
a time, embeds each input the store has no vector for (once, however many chunks hold it), and
writes the vectors in a short transaction of its own. A kill loses at most the batch in hand: the
next run claims those chunks again. On PostgreSQL a claim locks its rows and every other claim
skips them, so any number of processes, on any machines, share the work.
"""

from __future__ import annotations

import multiprocessing
import os
import signal
import subprocess
import sys
import time
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager, suppress
from dataclasses import asdict, dataclass
from pathlib import Path

import numpy as np

from threadkeep.embed import Embedder, cpu_cores
from threadkeep.store import Store

# Chunks claimed at a time: enough for the model's batches to be full, few enough that a kill, or a
# claim another process must wait for, costs seconds of work.
CLAIM_SIZE = 128

# How often a process waiting for another's embedding looks at its progress.
POLL_SECONDS = 1.0

Progress = Callable[[str, int, int], None]  # ("vectors", chunks with a vector, chunks with text to embed)


@dataclass(slots=True)
class FillReport:
    embedded: int = 0  # inputs embedded by this run
    filled: int = 0  # chunks given a vector (embedded here, or one another chunk with the same input had)
    reused: int = 0  # of those, chunks whose input already had a vector in the store
    with_vector: int = 0  # chunks with a vector when the run ended
    to_embed: int = 0  # chunks with text to embed when the run ended
    seconds: float = 0.0

    @property
    def pending(self) -> int:
        return self.to_embed - self.with_vector

    def to_dict(self) -> dict:
        return {**asdict(self), "pending": self.pending}


def fill_vectors(
    store: Store,
    embedder: Embedder,
    progress: Progress | None = None,
    stop: Callable[[], bool] | None = None,
    processes: int | None = None,
) -> FillReport:
    """Embed until no chunk is left without a vector (or another process holds the rest, or `stop()`).

    With more than one process (default: one per core for a model that says it gains from it, when
    there is enough to embed), the model runs in that many worker processes of one thread each."""
    started = time.monotonic()
    store.bind_embedder(embedder.name, embedder.dim)
    report = FillReport()
    report.with_vector, report.to_embed = store.vector_coverage()
    if progress:
        progress("vectors", report.with_vector, report.to_embed)
    if processes is None:
        processes = default_processes(embedder, report.pending)
    pool = EmbeddingPool(embedder, processes) if processes > 1 and report.pending else None
    try:
        while report.pending and not (stop and stop()):
            with store.claim_pending(CLAIM_SIZE) as claim:
                if not claim.inputs and not claim.reused:
                    break  # what is left is claimed by other processes
                keys = list(claim.inputs)
                texts = [claim.inputs[key] for key in keys]
                matrix = (pool or embedder).embed_passages(texts) if texts else []
                filled = claim.fill(dict(zip(keys, matrix, strict=True)))
            report.embedded += len(keys)
            report.reused += claim.reused
            report.filled += filled + claim.reused
            report.with_vector, report.to_embed = store.vector_coverage()
            if progress:
                progress("vectors", report.with_vector, report.to_embed)
    finally:
        if pool is not None:
            pool.close()
    report.seconds = time.monotonic() - started
    return report


# Starting a worker process and loading the model in it costs seconds: below this many chunks to
# embed, the model already loaded here does it.
POOL_FROM = 4 * CLAIM_SIZE


def default_processes(embedder: Embedder, pending: int) -> int:
    """Worker processes for `pending` chunks: one per core for a model that gains from it, else none."""
    if not getattr(embedder, "parallel", False) or pending < POOL_FROM:
        return 1
    return max(1, min(cpu_cores(), int(os.environ.get("THREADKEEP_EMBED_PROCESSES", 0)) or cpu_cores()))


class EmbeddingPool:
    """`embed_passages` over worker processes, each with the model and one OpenMP thread.

    The engine parallelizes inside each matrix product, and its threads meet at every one; worker
    processes each run whole inputs and never wait for each other. On 128 LoCoMo inputs, 2 cores
    shared with other jobs (load average 14-16), 2 processes of 1 thread took 418 s against 454 s
    for 1 process of 2 (both length-sorted), at about the same CPU time (benchmarks/README.md): a
    small gain, within what the machine's load moves. Each call's inputs are sorted by length and
    dealt out in turn, so the workers get about the same work."""

    def __init__(self, embedder: Embedder, processes: int) -> None:
        context = multiprocessing.get_context("spawn")
        self.name, self.dim, self.processes = embedder.name, embedder.dim, processes
        self._pool = context.Pool(processes, initializer=_start_worker, initargs=(embedder.name,))

    def embed_passages(self, texts: Sequence[str]) -> np.ndarray:
        order = sorted(range(len(texts)), key=lambda i: len(texts[i]))
        shares = [order[worker :: self.processes] for worker in range(self.processes)]
        out = np.zeros((len(texts), self.dim), dtype=np.float32)
        for share, vectors in zip(
            shares, self._pool.map(_embed, [[texts[i] for i in share] for share in shares]), strict=True
        ):
            if share:
                out[share] = vectors
        return out

    def close(self) -> None:
        self._pool.terminate()
        self._pool.join()


_worker_embedder: Embedder | None = None


def _start_worker(name: str) -> None:
    global _worker_embedder
    signal.signal(signal.SIGINT, signal.SIG_IGN)  # Ctrl-C is the parent's to handle
    os.environ["OMP_NUM_THREADS"] = "1"  # before the engine loads: it reads this once
    from threadkeep.embed import get_embedder

    _worker_embedder = get_embedder(name)


def _embed(texts: list[str]) -> np.ndarray:
    assert _worker_embedder is not None
    return _worker_embedder.embed_passages(texts) if texts else np.zeros((0, 0), dtype=np.float32)


# --- one embedding process per SQLite store -------------------------------------------------------
# SQLite claims hold nothing (one machine, one writer), so two processes filling one store would
# embed the same inputs twice. A lock file beside the store lets one of them do it; the others wait
# (or, started in the background, leave it to the one running). PostgreSQL claims share the work
# between processes by themselves, so no lock is taken there.


def lock_path(store: Store) -> Path | None:
    """The lock file of a SQLite store's embedding process (None: a PostgreSQL store)."""
    path = getattr(store, "path", None)
    return Path(str(path) + ".embedding") if isinstance(path, Path) else None


@contextmanager
def fill_lock(store: Store, wait: bool) -> Iterator[bool]:
    """Hold the store's embedding lock; without `wait`, yield False at once when another process holds it."""
    path = lock_path(store)
    try:
        import fcntl
    except ImportError:  # no POSIX locks (Windows): work may be duplicated, never lost
        fcntl = None  # type: ignore[assignment]
    if path is None or fcntl is None:
        yield True
        return
    with path.open("a+") as file:
        try:
            fcntl.flock(file, fcntl.LOCK_EX | (0 if wait else fcntl.LOCK_NB))
        except BlockingIOError:
            yield False
            return
        try:
            file.truncate(0)
            file.write(f"{os.getpid()}\n")
            file.flush()
            yield True
        finally:
            fcntl.flock(file, fcntl.LOCK_UN)


def lock_holder(store: Store) -> int | None:
    """The process id written by the process that last held the store's embedding lock, if any."""
    path = lock_path(store)
    try:
        return int(path.read_text().strip()) if path is not None else None
    except (OSError, ValueError):
        return None


def fill_store(
    store: Store,
    embedder: Embedder,
    progress: Progress | None = None,
    stop: Callable[[], bool] | None = None,
    wait: bool = True,
) -> FillReport | None:
    """`fill_vectors` as the only embedding process of the store. While another holds the lock, `wait`
    follows its progress and takes over when it ends (a rest may be left); without `wait`, returns
    None at once. Letting go of the lock, a fill looks once more: an ingest that committed just as
    it finished would otherwise leave its chunks for nobody."""
    report = None
    while not (stop and stop()):
        with fill_lock(store, wait=False) as held:
            this_round = fill_vectors(store, embedder, progress, stop) if held else None
        report = this_round or report
        with_vector, to_embed = store.vector_coverage()
        if with_vector == to_embed:
            forget_failure(store)
            return report
        # Still pending: chunks another process holds (its lock, or its PostgreSQL claims), or chunks
        # an ingest committed after this round looked. Those are taken at once, the others waited for.
        if this_round is None or not this_round.filled:
            if not wait:
                return report
            if progress:
                progress("vectors", with_vector, to_embed)
            time.sleep(POLL_SECONDS)
    return report


def log_path(store: Store) -> Path | None:
    """Where the background embedding process of a SQLite store writes what stopped it."""
    lock = lock_path(store)
    return lock.with_name(lock.name + ".log") if lock is not None else None


def start_background_fill(address: str, embedder: str, log: Path | None = None) -> subprocess.Popen:
    """Start `threadkeep embed --background` for the store at `address`, detached from this process
    (its own session: it outlives the command that started it, and a Ctrl-C there does not reach it).
    Its errors go to `log`, which it removes once every vector is made."""
    env = {**os.environ, "THREADKEEP_DB": address, "THREADKEEP_EMBEDDER": embedder}
    errors = log.open("ab") if log is not None else None
    try:
        return subprocess.Popen(
            [sys.executable, "-m", "threadkeep.cli", "embed", "--background", "--quiet"],
            env=env,
            stdin=subprocess.DEVNULL,
            stdout=subprocess.DEVNULL,
            stderr=errors if errors is not None else subprocess.DEVNULL,
            start_new_session=True,
        )
    finally:
        if errors is not None:
            errors.close()


def background_failure(store: Store) -> str | None:
    """What stopped the last background embedding process, while none runs and its log holds an error."""
    log = log_path(store)
    lock = lock_path(store)
    if log is None or lock is None or not log.is_file() or _lock_held(lock):
        return None
    with log.open("rb") as file:
        file.seek(max(0, log.stat().st_size - 4096))
        lines = [line.strip() for line in file.read().decode("utf-8", "replace").splitlines()]
    last = next((line for line in reversed(lines) if line), None)
    return f"{last} (see {log})" if last else None


def _lock_held(lock: Path) -> bool:
    """Whether a process holds the store's embedding lock (never, where there are no POSIX locks)."""
    try:
        import fcntl

        with lock.open("a") as file:
            fcntl.flock(file, fcntl.LOCK_SH | fcntl.LOCK_NB)
            fcntl.flock(file, fcntl.LOCK_UN)
    except BlockingIOError:
        return True
    except (ImportError, OSError):
        return False
    return False


def forget_failure(store: Store) -> None:
    """Remove the background log once the vectors are complete: what it said no longer holds."""
    log = log_path(store)
    if log is not None:
        with suppress(FileNotFoundError):
            log.unlink()
