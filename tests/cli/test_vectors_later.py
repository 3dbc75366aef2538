"""`threadkeep ingest` returns once the text is stored; vectors come from `threadkeep embed` or a
background process it starts, and `search`, `ask` and `check` say where they stand meanwhile."""

from __future__ import annotations

import json
import os
import re
import signal
import time

from click.testing import CliRunner

from cli.conftest import SAMPLES
from threadkeep.api import KnowledgeBase
from threadkeep.cli import main
from threadkeep.embed import get_embedder


def test_search_ask_and_check_say_vectors_are_pending(cli, default_db) -> None:
    with KnowledgeBase.open(default_db, get_embedder()) as kb:
        to_embed = kb.ingest(SAMPLES / "support_group", format="bundle", wait=False).to_embed

    found = CliRunner().invoke(main, ["search", "E1024"])
    assert found.exit_code == 0 and "E1024" in found.stdout
    assert f"vectors for 0 of {to_embed:,} chunks" in found.stderr and "full text only" in found.stderr
    as_json = json.loads(cli("search", "E1024", "--json").stdout)
    assert as_json["hits"] and as_json["vectors"] == {"with_vector": 0, "to_embed": to_embed}
    assert json.loads(cli("ask", "E1024 怎么办", "--json").stdout)["vectors"]["with_vector"] == 0

    checked = cli("check")
    assert checked.exit_code == 0 and "store is consistent" in checked.stdout
    assert f"vectors for 0 of {to_embed:,} chunks" in checked.stdout
    assert json.loads(cli("check", "--json").stdout)["vectors_pending"] == to_embed

    embedded = cli("embed")
    assert embedded.exit_code == 0 and f"vectors for {to_embed:,} of {to_embed:,} chunks" in embedded.stdout
    assert "vectors" not in json.loads(cli("search", "E1024", "--json").stdout)
    assert "note:" not in CliRunner().invoke(main, ["search", "E1024"]).stderr


def test_plain_ingest_starts_a_background_embedding_that_finishes(cli, default_db, monkeypatch) -> None:
    monkeypatch.delenv("THREADKEEP_INGEST_WAIT")
    result = cli("ingest", str(SAMPLES / "support_group"), "--format", "bundle")
    assert result.exit_code == 0
    started = re.search(r"background process \((\d+)\)", result.stdout)
    assert started, result.stdout
    pid = int(started.group(1))
    try:
        # `embed` follows the background process (or takes over what it left) until all is done.
        finished = cli("embed")
        assert finished.exit_code == 0
        with KnowledgeBase.open(default_db, get_embedder()) as kb:
            with_vector, to_embed = kb.vector_coverage()
        assert with_vector == to_embed > 0
        deadline = time.monotonic() + 60
        while os.waitpid(pid, os.WNOHANG) == (0, 0):
            assert time.monotonic() < deadline, "the background embedding did not end"
            time.sleep(0.05)
    finally:
        try:
            os.kill(pid, signal.SIGKILL)
            os.waitpid(pid, 0)
        except (ProcessLookupError, ChildProcessError):
            pass  # it has ended, as it should
    # Nothing left to do: a second ingest of the same export starts nothing.
    again = cli("ingest", str(SAMPLES / "support_group"), "--format", "bundle")
    assert "background process" not in again.stdout and "unchanged" in again.stdout


def test_a_background_embedding_that_stopped_is_reported_until_the_vectors_are_made(cli, default_db) -> None:
    from threadkeep.backfill import log_path, start_background_fill

    with KnowledgeBase.open(default_db, get_embedder()) as kb:
        kb.ingest(SAMPLES / "support_group", format="bundle", wait=False)
        log = log_path(kb.store)
        bound = kb.embedder.name
    other = "hash-16" if bound != "hash-16" else "hash-32"
    # A model other than the store's is refused: the background process stops with that error.
    process = start_background_fill(default_db, other, log)
    assert process.wait(timeout=120) != 0

    found = CliRunner().invoke(main, ["search", "E1024"])
    assert found.exit_code == 0 and "E1024" in found.stdout
    assert "the background one stopped" in found.stderr and other in found.stderr and str(log) in found.stderr
    stopped = json.loads(cli("search", "E1024", "--json").stdout)["vectors"]["stopped"]
    assert other in stopped
    assert "background embedder stopped" in cli("check").stdout
    assert other in json.loads(cli("check", "--json").stdout)["embedding_stopped"]

    assert cli("embed").exit_code == 0
    assert not log.exists()
    assert "note:" not in CliRunner().invoke(main, ["search", "E1024"]).stderr
