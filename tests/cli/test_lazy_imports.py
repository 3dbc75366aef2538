"""A search imports only what searching needs, and gives the same hits as the full API.

Every CLI call pays for the imports at the top of `threadkeep.cli`; readers, ingest, threading,
generation (httpx) and progress bars are imported by the commands that use them."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from datetime import UTC, datetime
from pathlib import Path

from threadkeep.api import KnowledgeBase

SAMPLES = Path(__file__).resolve().parents[2] / "src" / "threadkeep" / "samples"
NOT_FOR_SEARCH = (
    "threadkeep.readers", "threadkeep.ingest", "threadkeep.threads", "threadkeep.generate", "threadkeep.answer",
    "threadkeep.answerability", "threadkeep.delta", "threadkeep.chunks", "httpx", "rich.progress", "snowballstemmer",
)  # fmt: skip

SEARCH_IN_A_FRESH_PROCESS = """
import json, sys
from threadkeep.cli import main
try:
    main(["search", "--db", sys.argv[1], "--json", "--k", "10", "--now", "2026-06-01T00:00:00+00:00", sys.argv[2]])
except SystemExit as stop:
    assert not stop.code, stop.code
loaded = sorted(name for name in sys.modules if name.startswith(tuple(json.loads(sys.argv[3]))))
print(json.dumps(loaded), file=sys.stderr)
"""


def test_a_search_imports_no_ingest_reader_or_generation_code_and_finds_the_same(tmp_path, monkeypatch):
    monkeypatch.setenv("THREADKEEP_EMBEDDER", "hash-256")
    location = tmp_path / "kb.db"
    with KnowledgeBase.open(location) as kb:
        kb.ingest(SAMPLES)
        expected = [hit.to_dict() for hit in kb.search("同步一直失败怎么办", now=datetime(2026, 6, 1, tzinfo=UTC))]
    env = {**os.environ, "THREADKEEP_EMBEDDER": "hash-256", "PYTHONPATH": os.pathsep.join(sys.path)}
    question, modules = "同步一直失败怎么办", json.dumps(NOT_FOR_SEARCH)
    done = subprocess.run(
        [sys.executable, "-c", SEARCH_IN_A_FRESH_PROCESS, str(location), question, modules],
        capture_output=True, text=True, env=env, check=True,
    )  # fmt: skip
    assert json.loads(done.stderr.strip().splitlines()[-1]) == []
    found = json.loads(done.stdout)["hits"]
    assert [hit["chunk_id"] for hit in found] == [hit["chunk_id"] for hit in expected]
    assert expected


def test_commands_that_need_the_readers_still_list_and_check_formats(cli, tmp_path):
    result = cli("threads", str(tmp_path), "--format", "no-such-reader")
    assert result.exit_code == 2
    assert "no-such-reader" in result.output
    assert "bundle" in result.output  # the choices are listed from the readers
    assert "bundle" in cli("ingest", "--help").output
