"""Helpers the contract tests share: backend-neutral SQL and worker processes."""

from __future__ import annotations

import sqlite3
from pathlib import Path

from threadkeep.embed import HashEmbedder
from threadkeep.store import Store


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
