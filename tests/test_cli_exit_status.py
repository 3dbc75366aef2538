"""The reading commands' exit status says what happened, and their output stays bounded."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
from click.testing import CliRunner

from threadkeep.cli import main

FIXTURES = Path(__file__).resolve().parent / "fixtures"
SAMPLES = Path(__file__).resolve().parents[1] / "src" / "threadkeep" / "samples"
WHATSAPP = "12/03/2024, 09:15 - Ana: is the release out?\n12/03/2024, 09:17 - Ben: yes, 3.2 shipped\n"


@pytest.fixture(autouse=True)
def lexical_embedder(monkeypatch):
    monkeypatch.setenv("THREADKEEP_EMBEDDER", "hash-256")


def run(*args: str):
    return CliRunner().invoke(main, list(args))


def test_ingest_help_documents_the_exit_statuses():
    text = run("ingest", "--help").output
    for line in ("0  something was read", "1  nothing usable was read", "2  usage error", "3  with --strict"):
        assert line in text
    assert "--max-file-size" in text and "--skips" in text


def test_exit_0_when_something_was_read_even_with_skips(tmp_path):
    (tmp_path / "WhatsApp Chat with Ana.txt").write_text(WHATSAPP + "\x00\x01 garbage line\n", encoding="utf-8")
    (tmp_path / "blob.bin").write_bytes(bytes(range(256)) * 4)
    result = run("ingest", str(tmp_path), "--db", str(tmp_path / "kb.db"))
    assert result.exit_code == 0, result.output
    assert "not read blob.bin: binary file" in result.output


def test_exit_1_when_nothing_usable_was_read(tmp_path):
    folder = tmp_path / "in"
    folder.mkdir()
    (folder / "blob.bin").write_bytes(bytes(range(256)) * 4)
    result = run("ingest", str(folder), "--db", str(tmp_path / "kb.db"))
    assert result.exit_code == 1
    assert "nothing usable was read" in result.output and "blob.bin: binary file" in result.output


def test_exit_1_for_a_truncated_export_with_its_line_and_column(tmp_path):
    data = (FIXTURES / "chatgpt" / "export" / "conversations.json").read_text(encoding="utf-8")
    cut = tmp_path / "conversations.json"
    cut.write_text(data[: len(data) * 2 // 3], encoding="utf-8")
    result = run("ingest", str(cut), "--db", str(tmp_path / "kb.db"))
    assert result.exit_code == 1
    assert "not valid JSON" in result.output and "at column" in result.output
    assert "not a format threadkeep reads" not in result.output


def test_exit_1_when_the_forced_format_matches_nothing(tmp_path):
    (tmp_path / "WhatsApp Chat with Ana.txt").write_text(WHATSAPP, encoding="utf-8")
    chat = str(tmp_path / "WhatsApp Chat with Ana.txt")
    result = run("ingest", chat, "--format", "slack", "--db", str(tmp_path / "kb.db"))
    assert result.exit_code == 1 and "--format slack" in result.output
    assert run("normalize", str(tmp_path), "--format", "irc").exit_code == 1
    assert run("threads", str(tmp_path), "--format", "irc").exit_code == 1
    assert run("normalize", str(tmp_path)).exit_code == 0


def test_exit_3_under_strict_when_lines_were_skipped(tmp_path):
    shutil.copy(FIXTURES / "claude_code" / "broken.jsonl", tmp_path / "broken.jsonl")
    db = str(tmp_path / "kb.db")
    assert run("ingest", str(tmp_path / "broken.jsonl"), "--db", db).exit_code == 0
    assert run("ingest", str(tmp_path / "broken.jsonl"), "--db", db, "--strict").exit_code == 3
    assert run("normalize", str(tmp_path / "broken.jsonl"), "--strict").exit_code == 3
    clean = tmp_path / "clean"
    clean.mkdir()
    (clean / "WhatsApp Chat with Ana.txt").write_text(WHATSAPP, encoding="utf-8")
    assert run("ingest", str(clean), "--db", db, "--strict").exit_code == 0


def test_apply_delta_exit_status(tmp_path):
    db = str(tmp_path / "kb.db")
    shutil.copytree(SAMPLES / "support_group", tmp_path / "b")
    assert run("ingest", str(tmp_path / "b"), "--db", db).exit_code == 0
    bad = tmp_path / "bad.jsonl"
    bad.write_text('{"operation": "upsert"}\nnot json\n', encoding="utf-8")
    assert run("apply-delta", str(bad), "--db", db).exit_code == 1
    message = json.loads((tmp_path / "b" / "messages.jsonl").read_text(encoding="utf-8").splitlines()[0])
    good = tmp_path / "good.jsonl"
    upsert = {"operation": "upsert", "item": {**message, "text": "edited"}}
    # Recalling a message the store does not hold withdraws nothing: skipped, and the rest applies.
    where = {"conversationRef": message["conversationRef"]}
    recall = {"operation": "recalled", "messageId": "no-such-id", "item": where}
    good.write_text(json.dumps(upsert) + "\n" + json.dumps(recall) + "\n", encoding="utf-8")
    assert run("apply-delta", str(good), "--db", db).exit_code == 0
    assert run("apply-delta", str(good), "--db", db, "--strict").exit_code == 3


def test_many_skips_are_summarized_and_listed_in_full_only_on_request(tmp_path):
    folder = tmp_path / "bundle"
    folder.mkdir()
    good = {"messageId": "m1", "conversationRef": "g", "senderRef": "a", "sentAt": "2026-01-01T00:00:00+00:00"}
    lines = [json.dumps(good)] + [f'{{"messageId": "bad-{n}"' for n in range(2_000)]
    (folder / "messages.jsonl").write_text("\n".join(lines), encoding="utf-8")
    db = str(tmp_path / "kb.db")
    result = run("ingest", str(folder), "--db", db)
    assert result.exit_code == 0
    assert result.output.count("skipped messages.jsonl:") == 20
    assert "1980 more skipped" in result.output and "2000  not valid JSON" in result.output
    data = json.loads(run("ingest", str(folder), "--db", db, "--json").stdout)
    assert data["skipped"]["count"] == 2000 and len(data["skipped"]["first"]) == 20
    everything = json.loads(run("ingest", str(folder), "--db", db, "--json", "--skips", "all").stdout)
    assert len(everything["skipped"]["first"]) == 2000 and everything["skipped"]["complete"]


def test_max_file_size_is_a_usage_error_when_malformed_and_a_listed_reason_when_hit(tmp_path):
    (tmp_path / "WhatsApp Chat with Ana.txt").write_text(WHATSAPP * 200, encoding="utf-8")
    db = str(tmp_path / "kb.db")
    assert run("ingest", str(tmp_path), "--db", db, "--max-file-size", "lots").exit_code == 2
    result = run("ingest", str(tmp_path), "--db", db, "--max-file-size", "0.001M")
    assert result.exit_code == 1 and "larger than the" in result.output
