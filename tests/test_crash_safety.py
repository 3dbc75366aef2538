"""Killing an ingest at random points never leaves a half-written conversation behind."""

import os
import random
import signal
import subprocess
import sys
import time

from conftest import write_bundle
from threadkeep.store import open_store

KILLS = 20


def synthetic_bundle(folder, conversations=60, per_conversation=60):
    topics = ["同步卡住", "上传很慢", "登录失败 E1024", "安装报错 0x80070005", "冲突副本", "代理设置"]
    messages = []
    for c in range(conversations):
        for i in range(per_conversation):
            minute = i * 3 + (c % 7)
            hour, minute = divmod(minute, 60)
            messages.append(
                {
                    "messageId": f"c{c}:{i}",
                    "conversationRef": f"c{c}",
                    "senderRef": f"u{(i * 7 + c) % 5}",
                    "sentAt": f"2026-05-{1 + c % 28:02d}T{8 + hour:02d}:{minute:02d}:00+08:00",
                    "text": f"{topics[(i // 5 + c) % len(topics)]} 第{i}条 {'？' if i % 5 == 0 else '试试重启'}",
                }
            )
    return write_bundle(folder, messages)


def ingest_command(bundle, db):
    env = {**os.environ, "THREADKEEP_EMBEDDER": "hash-64"}
    return subprocess.Popen(
        [sys.executable, "-m", "threadkeep.cli", "ingest", str(bundle), "--db", str(db)],
        env=env,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
    )


def snapshot(db):
    store = open_store(db)
    try:
        problems = store.integrity_problems()
        rows = store.db.execute("SELECT id, text, embedding_input, embedding, evidence_ids FROM chunks ORDER BY id")
        chunks = rows.fetchall()
        messages = store.db.execute("SELECT conversation, id, thread_id FROM messages ORDER BY 1, 2").fetchall()
        return problems, chunks, messages
    finally:
        store.close()


def test_random_kills_then_a_rerun_give_the_same_store_as_a_clean_ingest(tmp_path):
    bundle = synthetic_bundle(tmp_path / "bundle")
    clean = tmp_path / "clean.db"
    assert ingest_command(bundle, clean).wait() == 0
    expected = snapshot(clean)
    assert expected[0] == [] and expected[1]

    rng = random.Random(7)
    db = tmp_path / "killed.db"
    kills = 0
    while kills < KILLS:
        process = ingest_command(bundle, db)
        time.sleep(rng.uniform(0.2, 1.5))
        if process.poll() is None:
            process.send_signal(signal.SIGKILL)
            process.wait()
            kills += 1
            problems, _, _ = snapshot(db)
            assert problems == [], f"after kill {kills}: {problems}"
        else:
            # finished before the kill: start over so every kill lands mid-ingest
            db.unlink()
            for suffix in ("-wal", "-shm"):
                (tmp_path / f"killed.db{suffix}").unlink(missing_ok=True)
    assert ingest_command(bundle, db).wait() == 0
    assert snapshot(db) == expected
