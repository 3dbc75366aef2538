"""Backends for the contract suite: a temporary SQLite file, and a PostgreSQL schema.

PostgreSQL: one database per test session, with a unique name, created from
THREADKEEP_TEST_POSTGRES's server (default: postgres@127.0.0.1:5432, trust auth)
and dropped at the end; every test gets its own schema in it, because dropping a
schema is instant and dropping a database costs a checkpoint (about a second).
When the server cannot be reached, or has no pgvector, the PostgreSQL cases are
skipped with the reason, unless THREADKEEP_REQUIRE_POSTGRES is set (CI sets it):
then they fail.
"""

from __future__ import annotations

import os
import uuid
from collections.abc import Callable, Iterator
from pathlib import Path
from urllib.parse import quote

import pytest

ADMIN_URL = os.environ.get("THREADKEEP_TEST_POSTGRES", "postgresql://postgres@127.0.0.1:5432/postgres")
BACKENDS = ["sqlite", "postgres"]


def _unavailable(reason: str) -> None:
    if os.environ.get("THREADKEEP_REQUIRE_POSTGRES"):
        pytest.fail(f"THREADKEEP_REQUIRE_POSTGRES is set but {reason}", pytrace=False)
    pytest.skip(reason)


@pytest.fixture(scope="session")
def postgres_database() -> Iterator[str]:
    """URL of this session's own database (pgvector created in it); dropped afterwards."""
    try:
        import psycopg
        from psycopg import sql
        from psycopg.conninfo import conninfo_to_dict, make_conninfo
    except ImportError as error:
        _unavailable(f"psycopg is not installed ({error})")
    try:
        admin = psycopg.connect(ADMIN_URL, autocommit=True, connect_timeout=5)
    except psycopg.OperationalError as error:
        unreachable = f"PostgreSQL is unreachable at {ADMIN_URL} ({str(error).strip()})"
    else:
        unreachable = ""
    if unreachable:
        _unavailable(unreachable)
    name = f"threadkeep_test_{uuid.uuid4().hex[:12]}"
    url = make_conninfo(**{**conninfo_to_dict(ADMIN_URL), "dbname": name})
    admin.execute(sql.SQL("CREATE DATABASE {}").format(sql.Identifier(name)))
    try:
        with psycopg.connect(url, autocommit=True) as conn:
            available = conn.execute("SELECT 1 FROM pg_available_extensions WHERE name = 'vector'").fetchone()
            if not available:
                _unavailable("PostgreSQL is reachable but has no pgvector: run `bash scripts/install-pgvector.sh`")
            # In public, explicitly: each test's schema is dropped with CASCADE, and an extension
            # created inside one would take every other test's vector columns with it.
            conn.execute("CREATE EXTENSION IF NOT EXISTS vector SCHEMA public")
        yield url
    finally:
        admin.execute(sql.SQL("DROP DATABASE IF EXISTS {} WITH (FORCE)").format(sql.Identifier(name)))
        admin.close()


def postgres_schema_url(database_url: str, schema: str) -> str:
    """A `postgresql://` URL whose connections put their tables in `schema`."""
    from psycopg.conninfo import conninfo_to_dict

    params = conninfo_to_dict(database_url)
    user = params.get("user", "postgres")
    host, port = params.get("host", "127.0.0.1"), params.get("port", "5432")
    password = f":{quote(params['password'], safe='')}" if params.get("password") else ""
    options = quote(f"-csearch_path={schema},public", safe="")
    return f"postgresql://{user}{password}@{host}:{port}/{params['dbname']}?options={options}"


@pytest.fixture
def make_location(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[Callable[[str], str]]:
    """make_location(backend) -> a fresh, empty store location of that backend, cleaned up after the test."""
    made: list[str] = []

    def make(backend: str) -> str:
        if backend == "sqlite":
            return str(tmp_path / f"kb-{len(made)}-{uuid.uuid4().hex[:6]}.db")
        import psycopg
        from psycopg import sql

        database = request.getfixturevalue("postgres_database")
        schema = f"t_{uuid.uuid4().hex[:12]}"
        with psycopg.connect(database, autocommit=True) as conn:
            conn.execute(sql.SQL("CREATE SCHEMA {}").format(sql.Identifier(schema)))
        made.append(schema)
        return postgres_schema_url(database, schema)

    yield make
    if made:
        import psycopg
        from psycopg import sql

        with psycopg.connect(request.getfixturevalue("postgres_database"), autocommit=True) as conn:
            for schema in made:
                conn.execute(sql.SQL("DROP SCHEMA {} CASCADE").format(sql.Identifier(schema)))


@pytest.fixture(params=BACKENDS)
def store_location(request: pytest.FixtureRequest, make_location: Callable[[str], str]) -> str:
    """A fresh, empty store location: a SQLite file, or a PostgreSQL schema of this session's database."""
    return make_location(request.param)
