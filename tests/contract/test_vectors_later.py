"""Searchable before it is embedded: ingest commits the text first, vectors are filled afterwards.

On both backends: search works (by full text) before any vector exists and says how much is
embedded; a kill in the middle of the embedding step leaves a consistent store that the next run
completes; vectors are reused by input across conversations; on PostgreSQL two processes share
the work through row claims, each input embedded once.
"""

from __future__ import annotations

import multiprocessing
import os
import signal
import time
from pathlib import Path

import numpy as np
import pytest

from conftest import SAMPLES, message
from contract.backends import is_postgres, rows
from threadkeep import backfill
from threadkeep.api import KnowledgeBase
from threadkeep.backfill import fill_vectors
from threadkeep.embed import HashEmbedder
from threadkeep.search import retrieve
from threadkeep.store import open_store

BUNDLE = SAMPLES / "support_group"


class SlowEmbedder(HashEmbedder):
    """The test embedder, taking its time per batch and remembering what it embedded (in `log`)."""

    def __init__(self, seconds: float, log: Path | None = None) -> None:
        super().__init__(64)
        self.seconds, self.log = seconds, log

    def embed_passages(self, texts):
        time.sleep(self.seconds)
        if self.log is not None:
            with self.log.open("a", encoding="utf-8") as file:
                file.writelines(f"{os.getpid()}\t{text!r}\n" for text in texts)
        return super().embed_passages(texts)


def vectors(location: str) -> dict[str, bytes]:
    store = open_store(location)
    try:
        found = rows(store, "SELECT id, embedding FROM chunks WHERE embedding IS NOT NULL")
        decode = store.values.decode
        return {chunk_id: np.asarray(decode("vector", v), dtype=np.float32).tobytes() for chunk_id, v in found}
    finally:
        store.close()


def test_search_works_before_any_vector_exists_and_says_so(store_location):
    with KnowledgeBase.open(store_location, HashEmbedder(64)) as kb:
        report = kb.ingest(BUNDLE, format="bundle", wait=False)
        assert report.chunks > 0 and report.embedded == 0
        assert report.vectors == (0, report.to_embed) and report.to_embed > 0
        assert kb.check() == []  # vectors still to be made are work pending, not damage

        found = retrieve(kb.store, kb.embedder, "E1024", k=5)
        assert found.hits and found.dense == [] and found.vectors == (0, report.to_embed)
        assert any("E1024" in hit.chunk.text for hit in found.hits)

        filled = kb.fill_vectors()
        assert filled.embedded > 0 and filled.pending == 0
        after = retrieve(kb.store, kb.embedder, "E1024", k=5)
        assert after.vectors is None and after.dense
        assert kb.vector_coverage() == (report.to_embed, report.to_embed)


def test_vectors_are_reused_by_input_across_conversations(store_location, bundle_factory):
    said = [("u1", "同步一直卡在 99%"), ("u2", "退出账号重新登录就好了"), ("u1", "好了，谢谢")]
    one = [message(f"a{i}", who, i, text) for i, (who, text) in enumerate(said)]
    other = [message(f"b{i}", who, i, text, conversation="g-2") for i, (who, text) in enumerate(said)]
    with KnowledgeBase.open(store_location, HashEmbedder(64)) as kb:
        first = kb.ingest(bundle_factory(one))
        assert first.embedded == 1 and first.vectors == (1, 1)
        # The same words in another conversation: its chunk gets the stored vector as it is written.
        second = kb.ingest(bundle_factory(other), wait=False)
        assert second.embeddings_reused == 1 and second.vectors == (2, 2)
        assert kb.fill_vectors().embedded == 0


def test_an_input_held_by_several_new_chunks_is_embedded_once(store_location, bundle_factory):
    said = [("u1", "打印机脱机怎么办"), ("u2", "重装驱动试试")]
    both = [
        message(f"{ref}{i}", who, i, text, conversation=ref)
        for ref in ("g-1", "g-2", "g-3")
        for i, (who, text) in enumerate(said)
    ]
    with KnowledgeBase.open(store_location, HashEmbedder(64)) as kb:
        report = kb.ingest(bundle_factory(both), wait=False)
        assert report.vectors == (0, 3)
        filled = kb.fill_vectors()
        assert (filled.embedded, filled.filled, filled.pending) == (1, 3, 0)


def _fill_slowly(location: str, claim_size: int, seconds: float, log: str | None = None, barrier=None) -> None:
    """A child process: fill the store's vectors a few chunks at a time, slowly."""
    backfill.CLAIM_SIZE = claim_size
    store = open_store(location)
    try:
        if barrier is not None:
            barrier.wait(timeout=60)
        fill_vectors(store, SlowEmbedder(seconds, Path(log) if log else None))
    finally:
        store.close()


def test_embedding_killed_midway_resumes_to_the_same_vectors(store_location, make_location):
    backend = "postgres" if is_postgres(store_location) else "sqlite"
    reference = make_location(backend)
    with KnowledgeBase.open(reference, HashEmbedder(64)) as kb:
        kb.ingest(BUNDLE, format="bundle")
    expected = vectors(reference)

    with KnowledgeBase.open(store_location, HashEmbedder(64)) as kb:
        to_embed = kb.ingest(BUNDLE, format="bundle", wait=False).to_embed
    assert to_embed > 6
    worker = multiprocessing.get_context("fork").Process(target=_fill_slowly, args=(store_location, 2, 0.05))
    worker.start()
    try:
        deadline = time.monotonic() + 120
        while len(vectors(store_location)) < 3 and time.monotonic() < deadline and worker.is_alive():
            time.sleep(0.01)
        assert worker.is_alive(), "the embedding ended before it could be killed"
        os.kill(worker.pid, signal.SIGKILL)
    finally:
        worker.join()

    partial = vectors(store_location)
    assert 3 <= len(partial) < to_embed
    assert all(expected[chunk_id] == vector for chunk_id, vector in partial.items())
    with KnowledgeBase.open(store_location, HashEmbedder(64)) as kb:
        assert kb.check() == []
        assert kb.vector_coverage() == (len(partial), to_embed)
        rerun = kb.fill_vectors()
    assert rerun.pending == 0 and rerun.filled == to_embed - len(partial)
    assert vectors(store_location) == expected


@pytest.mark.parametrize("store_location", ["postgres"], indirect=True)
def test_two_processes_share_the_embedding_through_postgres(store_location, tmp_path):
    with KnowledgeBase.open(store_location, HashEmbedder(64)) as kb:
        to_embed = kb.ingest(BUNDLE, format="bundle", wait=False).to_embed
        distinct = len({row[0] for row in rows(kb.store, "SELECT input_hash FROM chunks WHERE embedding_input <> ''")})
    context = multiprocessing.get_context("fork")
    barrier = context.Barrier(2)
    log = tmp_path / "embedded.log"
    workers = [
        context.Process(target=_fill_slowly, args=(store_location, 2, 0.05, str(log), barrier)) for _ in range(2)
    ]
    for worker in workers:
        worker.start()
    try:
        for worker in workers:
            worker.join(timeout=300)
            assert worker.exitcode == 0
    finally:
        for worker in workers:
            if worker.is_alive():
                worker.kill()
                worker.join()
    lines = [line.split("\t", 1) for line in log.read_text(encoding="utf-8").splitlines()]
    by_process = {pid for pid, _ in lines}
    texts = [text for _, text in lines]
    assert len(by_process) == 2  # both took part
    assert len(texts) == len(set(texts)) == distinct  # no input embedded twice, none left out
    with KnowledgeBase.open(store_location, HashEmbedder(64)) as kb:
        assert kb.vector_coverage() == (to_embed, to_embed) and kb.check() == []
