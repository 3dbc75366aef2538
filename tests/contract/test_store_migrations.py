"""Stores written by an earlier schema open, migrate in place, and read back as a new store does.

The earlier schema is built from the migrations as they shipped (they are never edited), and
filled with the rows the earlier writer stored, so no old checkout is needed."""

from __future__ import annotations

import sqlite3
from pathlib import Path

from contract.backends import fill, rows, snapshot
from threadkeep.api import KnowledgeBase
from threadkeep.embed import HashEmbedder
from threadkeep.store import open_store
from threadkeep.store.sqlite import MIGRATIONS as SQLITE_MIGRATIONS
from threadkeep.store.sqlite import _statements

# The SQLite schema up to the one-store-core change (`m004`): chunks numbered by their implicit
# rowid, full text in a self-contained FTS5 table written by the store, messages without sent_ts.
OLD_SQLITE_VERSION = 4
OLD_MESSAGE_COLUMNS = (
    "conversation, id, position, sender, sender_name, role, kind, sent_at, text, reply_to, mentions, recalled, "
    "edited_at, platform_thread, metadata, thread_id"
)
OLD_CHUNK_COLUMNS = (
    "id, source_type, source_ref, title, text, embedding_input, input_hash, embedding, occurred_at, occurred_ts, "
    "started_at, heading_path, evidence_ids, resolution_state, has_unresolved_media"
)


def old_sqlite_store(path: Path, like: Path) -> None:
    """A store in the old schema holding what the store at `like` holds, as the old writer wrote it."""
    db = sqlite3.connect(path, isolation_level=None)
    for migration in SQLITE_MIGRATIONS[:OLD_SQLITE_VERSION]:
        for statement in _statements(migration.sql):
            db.execute(statement)
    db.execute(f"PRAGMA user_version = {OLD_SQLITE_VERSION}")
    db.execute("ATTACH DATABASE ? AS new", (str(like),))
    db.execute("BEGIN")
    db.execute("INSERT INTO meta SELECT * FROM new.meta WHERE key <> 'store_id'")
    for table in ("conversations", "threads", "documents", "review_flags", "forgotten"):
        db.execute(f"INSERT INTO {table} SELECT * FROM new.{table}")
    db.execute(f"INSERT INTO messages ({OLD_MESSAGE_COLUMNS}) SELECT {OLD_MESSAGE_COLUMNS} FROM new.messages")
    # Gaps in the numbering, as deletes leave them.
    db.execute(
        f"INSERT INTO chunks (rowid, {OLD_CHUNK_COLUMNS}) SELECT 3 * seq + 7, {OLD_CHUNK_COLUMNS} FROM new.chunks"
    )
    db.execute(
        "INSERT INTO chunks_fts (rowid, words, bigrams) SELECT 3 * seq + 7, search_words, search_bigrams "
        "FROM new.chunks WHERE search_words IS NOT NULL"
    )
    db.execute("COMMIT")
    db.execute("DETACH DATABASE new")
    db.close()


def test_a_sqlite_store_of_the_old_schema_opens_migrated_and_reads_back_the_same(tmp_path, bundle_factory):
    new = tmp_path / "new.db"
    with KnowledgeBase.open(new, HashEmbedder(64)) as kb:
        fill(kb, bundle_factory, tmp_path)
        expected = snapshot(kb)
    old = tmp_path / "old.db"
    old_sqlite_store(old, new)
    with KnowledgeBase.open(old, HashEmbedder(64)) as kb:
        store = kb.store
        assert store.db.execute("PRAGMA user_version").fetchone()[0] == len(SQLITE_MIGRATIONS)
        migrated = snapshot(kb)
        assert {**migrated, "stats": None} == {**expected, "stats": None}
        assert {**migrated["stats"], "location": None} == {**expected["stats"], "location": None}
        # The old numbering is kept: the vector file and the full text name chunks by it.
        assert rows(store, "SELECT min(seq) FROM chunks") == [(3 * 1 + 7,)]
        tables = {row[0] for row in rows(store, "SELECT name FROM sqlite_master")}
        assert "chunks_fts_terms" not in tables and "chunks_new" not in tables
        # Content hashes came along: ingesting the same data again changes nothing.
        assert kb.ingest(tmp_path / "docs").documents_rebuilt == 0
        assert kb.check() == []


def test_a_postgres_store_of_the_old_schema_opens_migrated(make_location, bundle_factory, tmp_path):
    import psycopg

    from threadkeep.store.postgres import MIGRATIONS as POSTGRES_MIGRATIONS

    location = make_location("postgres")
    with psycopg.connect(location, autocommit=True) as conn:
        conn.execute(
            "CREATE TABLE schema_migrations "
            "(version integer PRIMARY KEY, applied_at timestamptz NOT NULL DEFAULT now())"
        )
        for number, migration in enumerate(POSTGRES_MIGRATIONS[:3], start=1):
            conn.execute(migration.sql)
            conn.execute("INSERT INTO schema_migrations (version) VALUES (%s)", (number,))
    with KnowledgeBase.open(location, HashEmbedder(64)) as kb:
        assert rows(kb.store, "SELECT max(version) FROM schema_migrations") == [(len(POSTGRES_MIGRATIONS),)]
        fill(kb, bundle_factory, tmp_path)
        assert snapshot(kb)["problems"] == []
    open_store(location, create=False).close()


def test_a_bound_postgres_store_of_schema_5_gets_inline_full_text_and_a_graph_per_source_type(
    make_location, bundle_factory, tmp_path
):
    import psycopg
    from psycopg import sql

    from threadkeep.store.postgres import MIGRATIONS as POSTGRES_MIGRATIONS
    from threadkeep.store.rows import CHUNKS

    new = make_location("postgres")
    with KnowledgeBase.open(new, HashEmbedder(64)) as kb:
        fill(kb, bundle_factory, tmp_path)
        expected = snapshot(kb)
    old = make_location("postgres")
    with psycopg.connect(new) as conn:
        new_schema = sql.Identifier(conn.execute("SELECT current_schema()").fetchone()[0])
    with psycopg.connect(old, autocommit=True) as conn:
        conn.execute(
            "CREATE TABLE schema_migrations "
            "(version integer PRIMARY KEY, applied_at timestamptz NOT NULL DEFAULT now())"
        )
        for number, migration in enumerate(POSTGRES_MIGRATIONS[:5], start=1):
            conn.execute(migration.sql)
            conn.execute("INSERT INTO schema_migrations (version) VALUES (%s)", (number,))
        # What binding the embedder did then: one HNSW index over every chunk.
        conn.execute(
            "ALTER TABLE chunks ALTER COLUMN embedding TYPE vector(64), ALTER COLUMN embedding SET STORAGE PLAIN"
        )
        conn.execute(
            "CREATE INDEX chunks_embedding ON chunks USING hnsw (embedding vector_cosine_ops) "
            "WITH (m = 16, ef_construction = 64)"
        )
        for table in ("meta", "conversations", "messages", "threads", "documents", "review_flags", "forgotten"):
            name = sql.Identifier(table)
            conn.execute(sql.SQL("INSERT INTO {} SELECT * FROM {}.{}").format(name, new_schema, name))
        columns = sql.SQL(CHUNKS.column_list)
        conn.execute(sql.SQL("INSERT INTO chunks ({}) SELECT {} FROM {}.chunks").format(columns, columns, new_schema))
        conn.execute("ANALYZE chunks")

    def layout(location: str) -> tuple[set, dict]:
        with psycopg.connect(location) as conn:
            indexes = {
                row[0] for row in conn.execute("SELECT indexname FROM pg_indexes WHERE schemaname = current_schema()")
            }
            storage = dict(
                conn.execute(
                    "SELECT attname, attstorage FROM pg_attribute WHERE attrelid = 'chunks'::regclass "
                    "AND attname IN ('words', 'bigrams', 'embedding') AND NOT attisdropped"
                ).fetchall()
            )
        return indexes, storage

    with KnowledgeBase.open(old, HashEmbedder(64)) as kb:
        assert rows(kb.store, "SELECT max(version) FROM schema_migrations") == [(len(POSTGRES_MIGRATIONS),)]
        migrated = snapshot(kb)
    assert {**migrated, "stats": None} == {**expected, "stats": None}
    assert migrated["lexical"] and migrated["dense"]
    indexes, storage = layout(old)
    assert (indexes, storage) == layout(new)
    with psycopg.connect(old) as conn:
        # The full-text term statistics (what bounds common words) survive the columns' rewrite.
        analyzed = conn.execute(
            "SELECT attname FROM pg_stats WHERE schemaname = current_schema() AND tablename = 'chunks' "
            "AND attname IN ('words', 'bigrams') AND most_common_elems IS NOT NULL"
        ).fetchall()
    assert {row[0] for row in analyzed} == {"words", "bigrams"}
    graphs = {"chunks_embedding", "chunks_embedding_chat", "chunks_embedding_document"}
    assert graphs | {"chunks_words", "chunks_bigrams"} <= indexes
    assert storage == {"words": "m", "bigrams": "m", "embedding": "p"}
