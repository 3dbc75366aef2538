"""Progress while ingesting, --quiet, an interrupted ingest, and re-ingesting unchanged data."""

from __future__ import annotations

from pathlib import Path

import pytest

import threadkeep.ingest
from conftest import message, write_bundle
from threadkeep.api import KnowledgeBase

from .conftest import SAMPLES


def three_conversations(folder: Path) -> Path:
    messages = [
        message(f"{ref}-{n}", f"u{n % 2}", n, f"question {n} about the {ref} client", conversation=ref)
        for ref in ("c-1", "c-2", "c-3")
        for n in range(3)
    ]
    return write_bundle(folder, messages)


def test_progress_lines_when_not_on_a_terminal(cli, tmp_path: Path) -> None:
    result = cli("ingest", str(three_conversations(tmp_path / "chat")))
    assert result.exit_code == 0
    lines = result.stderr.splitlines()
    assert lines[0] == "ingest: reading chat"
    assert "ingest: conversations 0/9 messages" in lines and "ingest: conversations 9/9 messages" in lines
    documents = cli("ingest", str(SAMPLES / "docs"))
    assert "ingest: documents 3/3 documents" in documents.stderr.splitlines()


def test_quiet_prints_the_report_only(cli, tmp_path: Path) -> None:
    result = cli("ingest", "--quiet", str(three_conversations(tmp_path / "chat")))
    assert result.exit_code == 0 and result.stderr == ""
    assert "9 messages read in 3 conversations" in result.stdout


def test_reingesting_unchanged_data_says_unchanged(cli, tmp_path: Path) -> None:
    bundle = three_conversations(tmp_path / "chat")
    cli("ingest", str(bundle))
    again = cli("ingest", "-q", str(bundle))
    assert again.stdout.strip() == "bundle: 9 messages read in 3 conversations, unchanged since the last ingest"


def test_ctrl_c_stops_and_says_what_was_kept(cli, tmp_path: Path, default_db: Path, monkeypatch) -> None:
    rebuild = threadkeep.ingest.rebuild_conversation
    calls = []

    def interrupted_on_the_third(*args, **kwargs):
        calls.append(1)
        if len(calls) == 3:
            raise KeyboardInterrupt
        return rebuild(*args, **kwargs)

    monkeypatch.setattr(threadkeep.ingest, "rebuild_conversation", interrupted_on_the_third)
    bundle = three_conversations(tmp_path / "chat")
    result = cli("ingest", str(bundle))
    assert result.exit_code == 130
    assert "stopped: 2 conversations stored completely" in result.stderr
    assert "Run the same command again" in result.stderr
    with KnowledgeBase.open(default_db) as kb:
        assert sorted(item.ref for item in kb.store.list_conversations()) == ["c-1", "c-2"]
        assert kb.check() == []
    monkeypatch.setattr(threadkeep.ingest, "rebuild_conversation", rebuild)
    finished = cli("ingest", "-q", str(bundle))
    assert "(1 rebuilt" in finished.stdout


@pytest.mark.parametrize("seconds, shown", [(5, "5 s"), (300, "5 min"), (7200, "2.0 h")])
def test_durations_read_naturally(seconds: float, shown: str) -> None:
    from threadkeep.cli import _duration

    assert _duration(seconds) == shown
