"""Stores keep conversations, messages, threads and chunks; search reads them back.

`open_store(location)` picks the backend from the location: a PostgreSQL URL
(`postgresql://` or `postgres://`, see `store.postgres`), or a path to a local
SQLite file (the embedded default).
"""

from __future__ import annotations

import os
from pathlib import Path

from platformdirs import user_data_dir

from threadkeep.store.base import (
    ConversationRecord,
    ConversationSummary,
    DocumentSummary,
    ForgottenConversation,
    ReviewItem,
    SearchFilters,
    StoreError,
    StoreNotFound,
)
from threadkeep.store.sql import SQLStore as Store  # every backend is one
from threadkeep.store.sqlite import SQLiteStore

__all__ = [
    "ConversationRecord",
    "ConversationSummary",
    "DocumentSummary",
    "ForgottenConversation",
    "ReviewItem",
    "SearchFilters",
    "Store",
    "StoreError",
    "StoreNotFound",
    "default_location",
    "open_store",
]


def default_location() -> str:
    """`THREADKEEP_DB` when set, else a file in the user's data folder."""
    return os.environ.get("THREADKEEP_DB") or str(Path(user_data_dir("threadkeep")) / "threadkeep.db")


def open_store(location: str | Path | None = None, create: bool = True) -> Store:
    """The store at `location`; without `create`, `StoreNotFound` when none exists there yet."""
    location = str(location or default_location())
    if location.startswith(("postgresql://", "postgres://")):
        # Imported here so the embedded (SQLite) path never needs psycopg installed.
        try:
            from threadkeep.store.postgres import PostgresStore
        except ImportError as error:
            raise StoreError(
                f"a PostgreSQL store needs psycopg 3 ({error}); install it with `pip install 'psycopg[binary]'`"
            ) from error
        return PostgresStore(location, create=create)
    return SQLiteStore(Path(location).expanduser(), create=create)
