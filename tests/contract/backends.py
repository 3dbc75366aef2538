"""Helpers the contract tests share: backend-neutral SQL and worker processes."""

from __future__ import annotations

import shutil
import sqlite3
from datetime import UTC, datetime, timedelta
from pathlib import Path

from conftest import SAMPLES, message
from threadkeep.api import KnowledgeBase
from threadkeep.embed import HashEmbedder
from threadkeep.store import SearchFilters, Store

WHEN = datetime(2026, 6, 1, 9, 30, tzinfo=UTC)


def is_postgres(location: str | Path) -> bool:
    return str(location).startswith(("postgresql://", "postgres://"))


def rows(store: Store, statement: str, params: tuple = ()) -> list[tuple]:
    """Run read-only SQL written with `?` placeholders on either backend's connection."""
    if isinstance(store.db, sqlite3.Connection):
        return [tuple(row) for row in store.db.execute(statement, params)]
    return [tuple(row) for row in store.db.execute(statement.replace("?", "%s"), params).fetchall()]


def integrity_errors(location: str | Path) -> tuple[type[Exception], ...]:
    """What the database raises when a constraint rejects a row."""
    if is_postgres(location):
        import psycopg

        return (psycopg.errors.IntegrityError,)
    return (sqlite3.IntegrityError,)


def ingest_in_process(location: str, bundle: str, barrier, results) -> None:
    """Child process: open the store, wait for the other writer, ingest one bundle."""
    from threadkeep.api import KnowledgeBase

    with KnowledgeBase.open(location, HashEmbedder(64)) as kb:
        kb.store.bind_embedder("hash-64", 64)
        barrier.wait(timeout=60)
        report = kb.ingest(bundle)
        results.put((bundle, report.conversations_rebuilt, report.chunks))


def write_in_process(location: str, operation: str, path: str, barrier, results) -> None:
    """Child process: open the store, wait for the other writer, then ingest (`ingest`) or apply a delta (`delta`)."""
    from threadkeep.api import KnowledgeBase

    with KnowledgeBase.open(location, HashEmbedder(64)) as kb:
        kb.store.bind_embedder("hash-64", 64)
        barrier.wait(timeout=60)
        report = kb.ingest(path) if operation == "ingest" else kb.apply_delta(path)
        results.put((operation, report.conversations_rebuilt, report.redone))


def offsets_conversation() -> list[dict]:
    """Messages whose ISO text sorts unlike their moments: each sender writes their own UTC offset."""
    return [
        {**message("m1", "u1", 0, "同步卡住了"), "sentAt": "2026-05-14T10:00:00+08:00"},  # 02:00Z, the first
        {**message("m2", "u2", 0, "重启试试", quotedMessageId="m1"), "sentAt": "2026-05-14T03:00:00+00:00"},
        {**message("m3", "u3", 0, "好了", quotedMessageId="m2"), "sentAt": "2026-05-13T23:30:00-05:00"},  # 04:30Z
        {**message("m4", "u1", 0, "谢谢"), "sentAt": "2026-05-14T04:00:00.250000+00:00"},  # between m2 and m3
    ]


def fill(kb: KnowledgeBase, bundle_factory, tmp_path) -> None:
    """The same data, whichever the backend: chats with several offsets, documents, a flag, a forgotten chat."""
    chats = [
        *offsets_conversation(),
        message("b1", "u4", 0, "发票怎么开？", conversation="g-2", mentions=["u2"]),
        message("b2", "u2", 1, "管理后台账单页申请发票", conversation="g-2", quotedMessageId="b1"),
        message("c1", "u5", 2, "这个群要删掉", conversation="g-3"),
    ]
    kb.ingest(
        bundle_factory(
            chats,
            members=[{"senderRef": "u4", "displayName": "老王"}],
            conversations=[{"conversationRef": "g-2", "title": "客户群", "kind": "group"}],
        )
    )
    docs = tmp_path / "docs"
    if not docs.exists():
        shutil.copytree(SAMPLES / "docs", docs)
    kb.ingest(docs)
    kb.store.flag_for_review("g-2", "b1", "missing from the latest export", WHEN)
    kb.store.flag_for_review("g-1", "gone", "missing from the latest export", WHEN - timedelta(hours=1))
    kb.store.forget_conversation("g-3", WHEN)


def snapshot(kb: KnowledgeBase) -> dict:
    store = kb.store
    chunk_ids = sorted(row[0] for row in rows(store, "SELECT id FROM chunks"))
    query = kb.embedder.embed_query("发票")
    return {
        # The listings themselves, every field (a listing's JSON shows less: not a conversation's metadata).
        "conversations": store.list_conversations(),
        "documents": store.list_documents(),
        "review": store.review_items(),
        "forgotten": store.forgotten_conversations(),
        "stats": {**store.stats(), "location": None},
        "records": {ref: store.conversation_record(ref) for ref in ("g-1", "g-2", "g-3")},
        "messages": {ref: store.load_messages(ref) for ref in ("g-1", "g-2", "g-3")},
        "threads": {(ref, mid): store.load_thread(ref, mid) for ref, mid in [("g-1", "m3"), ("g-2", "b1")]},
        "chunks": store.get_chunks(chunk_ids),
        "recent": store.recent_chat_chunks("resolved", 10),
        "problems": store.integrity_problems(),
        "lexical": [cid for cid, _ in store.lexical_candidates("发票 同步", 100, SearchFilters())],
        # Ordered by score, then id: chunks with equal scores come in either order.
        "dense": sorted(
            ((round(score, 5), cid) for cid, score in store.dense_candidates(query, 100, SearchFilters())),
            key=lambda pair: (-pair[0], pair[1]),
        ),
    }
