"""Killing an ingest or a delta mid-write never leaves a half-written conversation behind.

Each writer is killed (SIGKILL) after it has committed at least one conversation and before it
is done, so the store is caught between two versions: every conversation must then be exactly
as it was before or exactly as it is after (compared with a store that was never killed), the
store must pass its integrity check, and running the command again must give the same store as
a clean run. The kills are made on forked writers (the interpreter and jieba already loaded, so
a kill costs milliseconds); the final rerun of the delta is the real `threadkeep apply-delta`.
"""

from __future__ import annotations

import json
import multiprocessing
import os
import random
import signal
import subprocess
import sys
import time
from pathlib import Path

from conftest import write_bundle
from contract.backends import rows
from threadkeep.api import KnowledgeBase
from threadkeep.embed import HashEmbedder
from threadkeep.store import Store, open_store
from threadkeep.store.base import ReviewItem

CONVERSATIONS = 12
MESSAGES = 16
EMBEDDER = "hash-256"
MAX_RUNS = 100
TOPICS = ["同步卡住", "上传很慢", "登录失败 E1024", "安装报错 0x80070005", "冲突副本", "代理设置"]


def chat_message(c: int, i: int, ref: str | None = None) -> dict:
    hour, minute = divmod(i * 3 + (c % 7), 60)
    return {
        "messageId": f"{ref or f'c{c}'}:{i}",
        "conversationRef": ref or f"c{c}",
        "senderRef": f"u{(i * 7 + c) % 5}",
        "sentAt": f"2026-05-{1 + c % 28:02d}T{8 + hour:02d}:{minute:02d}:00+08:00",
        "text": f"{TOPICS[(i // 5 + c) % len(TOPICS)]} 第{i}条 {'？' if i % 5 == 0 else '试试重启'}",
    }


def versions(folder: Path) -> tuple[Path, Path, Path]:
    """Export A; export B (every conversation grown by 8 messages, one edited, 2 new conversations);
    a delta on B touching every conversation (upserts, recalls, missing flags)."""
    old = [chat_message(c, i) for c in range(CONVERSATIONS) for i in range(MESSAGES)]
    grown = [chat_message(c, i) for c in range(CONVERSATIONS) for i in range(MESSAGES + 8)]
    for item in grown:
        if item["messageId"].endswith(":1"):
            item["text"] += "（已编辑）"
    grown += [chat_message(c, i, f"new{c}") for c in range(2) for i in range(MESSAGES)]
    refs = [f"c{c}" for c in range(CONVERSATIONS)] + ["new0", "new1"]
    operations = []
    for c, ref in enumerate(refs):
        operations += [{"operation": "upsert", "item": chat_message(c, MESSAGES + 8 + i, ref)} for i in range(3)]
        if c % 2:
            operations.append({"operation": "recalled", "messageId": f"{ref}:2", "item": {"conversationRef": ref}})
        if c % 3 == 0:
            operations.append({"operation": "missing", "messageId": f"{ref}:4", "item": {"conversationRef": ref}})
    a = write_bundle(folder / "a", old)
    b = write_bundle(folder / "b", grown)
    (b / "delta.jsonl").write_text("".join(json.dumps(op, ensure_ascii=False) + "\n" for op in operations))
    return a, b, b / "delta.jsonl"


def conversation_states(location: str) -> tuple[list[str], dict[str, tuple]]:
    """Integrity problems, and everything stored for each conversation (comparable across stores)."""
    store = open_store(location)
    try:
        states = {}
        for (ref,) in rows(store, "SELECT ref FROM conversations"):
            ids = sorted(row[0] for row in rows(store, "SELECT id FROM chunks WHERE source_ref = ?", (ref,)))
            threads = sorted(rows(store, "SELECT id, chunk_id FROM threads WHERE conversation = ?", (ref,)))
            vectors = {key: vector.tobytes() for key, vector in store.embeddings_for(ref).items()}
            states[ref] = (
                store.conversation_record(ref),
                store.load_messages(ref),
                threads,
                [store.get_chunks(ids)[chunk_id] for chunk_id in ids],
                vectors,
            )
        return store.integrity_problems(), states
    finally:
        store.close()


def write(location: str, operation: str, path: str) -> None:
    """The forked writer: what `threadkeep ingest` / `apply-delta` do, minus the command line."""
    with KnowledgeBase.open(location, HashEmbedder(256)) as kb:
        kb.ingest(path) if operation == "ingest" else kb.apply_delta(path)


def committed(store: Store, after: dict[str, tuple]) -> int:
    """How many conversations already hold their after-state content hash."""
    hashes = dict(rows(store, "SELECT ref, content_hash FROM conversations"))
    return sum(hashes.get(ref) == state[0].content_hash for ref, state in after.items())


def kill_mid_write(location: str, operation: str, path: Path, before: dict, after: dict, rng: random.Random):
    """Start the writer over and over, killing each run once it has committed one or two more
    conversations, until a run ends by itself. Returns (kills, partial states seen)."""
    context = multiprocessing.get_context("fork")
    partial: list[bool] = []  # per kill: caught with some conversations after and others before
    watcher = open_store(location)  # forked writers inherit it and never touch it
    pace = 0.01  # seconds between two commits, as last seen: how long one conversation takes here
    try:
        for _ in range(MAX_RUNS):
            done = committed(watcher, after)
            target = done + rng.randint(1, 2)
            writer = context.Process(target=write, args=(location, operation, str(path)))
            writer.start()
            seen_at = None
            while writer.is_alive() and done < target:
                time.sleep(0.002)
                now, count = time.monotonic(), committed(watcher, after)
                if count > done:
                    pace = now - seen_at if seen_at is not None else pace
                    done, seen_at = count, now
            if done < len(after):
                # Somewhere in the next conversation (threading, embedding or its transaction), whatever the speed.
                time.sleep(rng.uniform(0, pace))
            if not writer.is_alive() or committed(watcher, after) == len(after):
                writer.join(timeout=60)
                assert writer.exitcode == 0
                return len(partial), sum(partial)
            os.kill(writer.pid, signal.SIGKILL)
            writer.join()
            partial.append(check_between(location, operation, before, after))
    finally:
        watcher.close()
    raise AssertionError(f"{operation} did not finish in {MAX_RUNS} runs")


def check_between(location: str, operation: str, before: dict, after: dict) -> bool:
    """After a kill: every conversation wholly before or wholly after; whether both kinds were seen."""
    problems, states = conversation_states(location)
    assert problems == [], f"after a kill of {operation}: {problems}"
    done = 0
    for ref in after:
        state = states.get(ref)
        assert state == before.get(ref) or state == after[ref], f"{ref} is half-written ({operation})"
        done += state == after[ref]
    return 0 < done < len(after)


def without_times(items: list[ReviewItem]) -> list[dict]:
    return [{key: value for key, value in item.to_dict().items() if key != "flagged_at"} for item in items]


def rerun(location: str, command: str, path: Path) -> None:
    """The real command, run to its end."""
    env = {**os.environ, "THREADKEEP_EMBEDDER": EMBEDDER}
    subprocess.run(
        [sys.executable, "-m", "threadkeep.cli", command, str(path), "--db", location],
        env=env, check=True, stdout=subprocess.DEVNULL,
    )  # fmt: skip


def test_kills_mid_ingest_and_mid_delta_leave_each_conversation_before_or_after(
    make_location, store_location, tmp_path, record_property
):
    backend = "postgres" if store_location.startswith("postgresql") else "sqlite"
    a, b, delta = versions(tmp_path)
    reference = make_location(backend)
    with KnowledgeBase.open(reference, HashEmbedder(256)) as kb:
        kb.ingest(a)
    _, state_a = conversation_states(reference)
    with KnowledgeBase.open(reference, HashEmbedder(256)) as kb:
        kb.ingest(b)
    _, state_b = conversation_states(reference)
    with KnowledgeBase.open(reference, HashEmbedder(256)) as kb:
        assert kb.apply_delta(delta).rejected == []
        review = kb.store.review_items()
    problems, state_d = conversation_states(reference)
    assert problems == [] and len(state_d) == CONVERSATIONS + 2
    assert all(state_a[ref] != state_b[ref] != state_d[ref] for ref in state_a)

    with KnowledgeBase.open(store_location, HashEmbedder(256)) as kb:
        kb.ingest(a)
    rng = random.Random(17)
    ingest_kills, ingest_partial = kill_mid_write(store_location, "ingest", b, state_a, state_b, rng)
    write(store_location, "ingest", str(b))  # the rerun, in this process
    assert conversation_states(store_location) == ([], state_b)

    delta_kills, delta_partial = kill_mid_write(store_location, "delta", delta, state_b, state_d, rng)
    rerun(store_location, "apply-delta", delta)  # the real command
    assert conversation_states(store_location) == ([], state_d)
    store = open_store(store_location)
    try:
        assert without_times(store.review_items()) == without_times(review)
    finally:
        store.close()

    record_property("kills", {"ingest": ingest_kills, "delta": delta_kills})
    record_property("partial_states", {"ingest": ingest_partial, "delta": delta_partial})
    # Every kill landed after the run's first commit and before its last: the store was caught between
    # versions, not before the first write (as a kill at a random time often is) nor after the last.
    assert ingest_kills >= 4 and delta_kills >= 4
    assert ingest_partial >= ingest_kills - 1 and delta_partial >= delta_kills - 1
