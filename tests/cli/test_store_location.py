"""Which store a command opens: only ingest and the demo create one; a wrong --db is an error, not a traceback."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from threadkeep.api import KnowledgeBase

from .conftest import SAMPLES


@pytest.mark.parametrize("command", [["stats"], ["ask", "升级后点图标没反应"], ["search", "E1024"], ["documents"]])
def test_a_text_file_as_store_is_refused(cli, tmp_path: Path, command: list[str]) -> None:
    notes = tmp_path / "notes.txt"
    notes.write_text("not a database\n", encoding="utf-8")
    result = cli(*command, "--db", str(notes))
    assert result.exit_code != 0
    assert result.stderr.startswith("error: ")
    assert "not a threadkeep store" in result.stderr and "Traceback" not in result.output
    assert notes.read_text(encoding="utf-8") == "not a database\n"


def test_a_folder_as_store_is_refused(cli, tmp_path: Path) -> None:
    result = cli("ingest", str(SAMPLES / "docs"), "--db", str(tmp_path))
    assert result.exit_code != 0
    assert "is a folder, not a store file" in result.stderr


def test_another_programs_sqlite_database_is_left_alone(cli, tmp_path: Path) -> None:
    import sqlite3

    other = tmp_path / "app.db"
    with sqlite3.connect(other) as db:
        db.execute("CREATE TABLE notes (body TEXT)")
    result = cli("ingest", str(SAMPLES / "docs"), "--db", str(other))
    assert result.exit_code != 0
    assert "not a threadkeep store" in result.stderr
    with sqlite3.connect(other) as db:
        assert [row[0] for row in db.execute("SELECT name FROM sqlite_master")] == ["notes"]


@pytest.mark.parametrize(
    "command",
    [["stats"], ["ask", "怎么办"], ["search", "E1024"], ["review"], ["check"], ["conversations"], ["forget", "x"]],
)
def test_a_mistyped_path_creates_nothing(cli, tmp_path: Path, command: list[str]) -> None:
    missing = tmp_path / "tpyo" / "team.db"
    result = cli(*command, "--db", str(missing))
    assert result.exit_code != 0
    assert f"there is no store at {missing}" in result.stderr
    assert "threadkeep ingest" in result.stderr
    assert not missing.parent.exists()


def test_the_default_store_is_not_created_by_reading_commands(cli, default_db: Path) -> None:
    result = cli("ask", "怎么办")
    assert result.exit_code != 0 and str(default_db) in result.stderr
    assert not default_db.exists() and not default_db.parent.exists()


def test_ingest_creates_the_store(cli, tmp_path: Path) -> None:
    location = tmp_path / "new" / "kb.db"
    assert cli("ingest", str(SAMPLES / "docs"), "--db", str(location)).exit_code == 0
    assert location.exists()
    assert cli("stats", "--db", str(location)).exit_code == 0


def test_an_empty_store_says_so_and_where(cli, tmp_path: Path) -> None:
    location = tmp_path / "empty.db"
    KnowledgeBase.open(location).close()
    for command in (["ask", "升级后点图标没反应怎么办"], ["search", "E1024"]):
        result = cli(*command, "--db", str(location))
        assert result.exit_code == 1
        assert f"the store at {location} is empty" in result.stderr
        assert "No answer" not in result.output
    stats = cli("stats", "--db", str(location))
    assert stats.exit_code == 0 and f"the store at {location} is empty" in stats.output


def test_the_demo_keeps_its_store_for_the_next_commands(cli, default_db: Path) -> None:
    result = cli("demo")
    assert result.exit_code == 0, result.output
    assert f"kept in {default_db}" in result.output
    assert cli("stats", "--json").exit_code == 0
    search = cli("search", "E1024")
    assert search.exit_code == 0 and "no matches" not in search.output
    again = cli("demo")
    assert again.exit_code == 0 and "unchanged" in again.output


def test_the_demo_does_not_mix_into_a_store_with_other_data(cli, tmp_path: Path) -> None:
    location = tmp_path / "team.db"
    notes = tmp_path / "notes"
    notes.mkdir()
    (notes / "howto.md").write_text("# How to\n\nRestart it.\n", encoding="utf-8")
    assert cli("ingest", str(notes), "--db", str(location)).exit_code == 0
    result = cli("demo", "--db", str(location))
    assert result.exit_code == 1
    assert "already holds other data" in result.stderr and "howto.md" in result.stderr
    assert len(KnowledgeBase.open(location).store.list_conversations()) == 0


def test_documents_ingested_again_after_the_demo_are_the_same_documents(cli, tmp_path: Path) -> None:
    assert cli("demo").exit_code == 0
    again = cli("ingest", str(SAMPLES / "docs"))
    assert again.exit_code == 0 and "unchanged" in again.output
    cli("ingest", str(SAMPLES))
    listed = cli("documents", "--json")
    paths = [item["path"] for item in json.loads(listed.output)]
    assert sorted(paths) == sorted({*paths}) and len([p for p in paths if "/docs/" in p]) == 3
    answer = json.loads(cli("ask", "E1024 文件名 怎么解决", "--json").output)
    cited = [citation["chunk_id"] for citation in answer["groups"]["documents"]]
    assert len(cited) == len(set(cited))


@pytest.mark.parametrize("command", [["serve"], ["mcp"]])
def test_servers_without_ingest_folders_do_not_create_a_store(cli, tmp_path: Path, command: list[str]) -> None:
    missing = tmp_path / "tpyo" / "team.db"
    result = cli(*command, "--db", str(missing))
    assert result.exit_code != 0 and f"there is no store at {missing}" in result.stderr
    assert not missing.parent.exists()


def test_a_server_that_may_ingest_creates_its_store(tmp_path: Path) -> None:
    from threadkeep.server.service import IngestRoots, Service

    location = tmp_path / "new.db"
    Service.open(str(location), IngestRoots([tmp_path]), embedder="hash-64", create=True).close()
    assert location.exists()
