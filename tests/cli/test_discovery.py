"""Finding coding assistants' history where they keep it, and watching a growing folder."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from conftest import message, write_bundle

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures"


@pytest.fixture
def home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    folder = tmp_path / "home"
    folder.mkdir()
    monkeypatch.setenv("HOME", str(folder))
    for variable in ("CLAUDE_CONFIG_DIR", "CODEX_HOME"):
        monkeypatch.delenv(variable, raising=False)
    return folder


def test_claude_code_codex_and_gemini_history_is_found(cli, home: Path) -> None:
    shutil.copytree(FIXTURES / "claude_code" / "project", home / ".claude" / "projects" / "-home-ana-shop")
    shutil.copytree(FIXTURES / "codex_cli" / "sessions", home / ".codex" / "sessions")
    shutil.copytree(FIXTURES / "gemini_cli" / "tmp", home / ".gemini" / "tmp")
    result = cli("ingest", "--claude-code", "--codex", "--gemini", "--json", "-q")
    assert result.exit_code == 0, result.output
    reports = json.loads(result.stdout)
    assert [report["format"] for report in reports] == ["claude_code", "codex_cli", "gemini_cli"]
    assert reports[0]["path"] == str(home / ".claude" / "projects")
    assert all(report["messages_read"] > 0 for report in reports)
    kinds = {item["kind"] for item in json.loads(cli("conversations", "--json").stdout)}
    assert kinds == {"assistant"}


def test_a_moved_history_folder_is_followed(cli, home: Path, tmp_path: Path, monkeypatch) -> None:
    elsewhere = tmp_path / "claude-config"
    shutil.copytree(FIXTURES / "claude_code" / "project", elsewhere / "projects" / "p")
    monkeypatch.setenv("CLAUDE_CONFIG_DIR", str(elsewhere))
    result = cli("ingest", "--claude-code", "-q")
    assert result.exit_code == 0 and "claude_code:" in result.stdout


def test_missing_history_says_where_it_looked(cli, home: Path) -> None:
    result = cli("ingest", "--codex")
    assert result.exit_code == 1
    assert f"no Codex CLI history at {home / '.codex' / 'sessions'}" in result.stderr
    assert "CODEX_HOME" in result.stderr
    nothing = cli("ingest")
    assert nothing.exit_code == 2 and "give a PATH" in nothing.stderr


def test_watch_ingests_a_growing_folder_and_only_when_it_changed(cli, tmp_path: Path) -> None:
    folder = write_bundle(tmp_path / "chat", [message("a1", "u1", 0, "the client hangs on start")])
    first = cli("watch", str(folder), "--every", "0", "--rounds", "2")
    assert first.exit_code == 0
    assert first.stdout.count("bundle:") == 1  # the second look saw no change and read nothing
    write_bundle(folder, [message("a1", "u1", 0, "the client hangs on start"), message("a2", "u2", 1, "restart it")])
    second = cli("watch", str(folder), "--every", "0", "--rounds", "1")
    assert "2 messages read in 1 conversation (1 rebuilt" in second.stdout
    assert "watching" in second.stderr
