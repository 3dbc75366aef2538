"""What the commands print: who said what and when, text verbatim, plurals, one error style."""

from __future__ import annotations

import json
from pathlib import Path

from conftest import message, write_bundle
from threadkeep.transcript import parse_transcript

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures"


def test_normalize_shows_speaker_and_time_for_group_chats(cli) -> None:
    result = cli("normalize", str(FIXTURES / "wechat" / "项目群.txt"))
    assert result.exit_code == 0
    lines = result.stdout.splitlines()
    assert lines[0] == "# 项目群"
    assert "[2024-01-15 09:05] 张三: 大家好，测试环境的部署又失败了" in lines
    assert "    日志里是锁等待超时" in lines  # the second line of the same message, under it


def test_normalize_keeps_the_transcript_for_assistant_chats(cli) -> None:
    result = cli("normalize", str(FIXTURES / "claude_code" / "session.jsonl"))
    assert result.exit_code == 0
    assert result.stdout.startswith("> Why does the CI build fail on the cache step?\n")
    turns = parse_transcript(result.stdout)
    assert turns[0].role == "user" and turns[1].role == "assistant"


def test_stored_text_is_shown_verbatim(cli, tmp_path: Path) -> None:
    said = "restart it :smile: [bold]not markup[/bold] and [red]E2001[/red]"
    bundle = write_bundle(
        tmp_path / "chat",
        [message("a1", "u1", 0, "the client hangs on start E2001 error"), message("a2", "u2", 1, said)],
    )
    assert cli("ingest", str(bundle)).exit_code == 0
    search = cli("search", "E2001")
    assert said in search.stdout
    assert "\N{SMILING FACE WITH OPEN MOUTH AND SMILING EYES}" not in search.stdout
    normalized = cli("normalize", str(bundle))
    assert said in normalized.stdout


def test_counts_are_singular_or_plural(cli, tmp_path: Path) -> None:
    notes = tmp_path / "notes"
    notes.mkdir()
    (notes / "howto.md").write_text("# How to\n\nRestart it.\n", encoding="utf-8")
    one = cli("ingest", str(notes))
    assert "1 document read" in one.stdout and "1 documents" not in one.stdout
    bundle = write_bundle(tmp_path / "chat", [message("a1", "u1", 0, "hello there, anyone?")])
    chat = cli("ingest", str(bundle))
    assert "1 message read in 1 conversation" in chat.stdout


def test_errors_share_one_style_and_are_not_wrapped(cli, tmp_path: Path) -> None:
    long_name = tmp_path / ("a-rather-long-folder-name-" * 4) / "team.db"
    missing = cli("stats", "--db", str(long_name))
    assert missing.stderr.startswith("error: ") and missing.stderr.count("\n") == 1
    usage = cli("search", "x", "--source-type", "pictures")
    assert usage.exit_code == 2
    assert "error: " in usage.stderr and "Error:" not in usage.stderr


def test_search_json_is_one_shape(cli, tmp_path: Path) -> None:
    bundle = write_bundle(tmp_path / "chat", [message("a1", "u1", 0, "the sync client hangs at E2001")])
    cli("ingest", str(bundle))
    [hit] = json.loads(cli("search", "E2001", "--json").stdout)["hits"]
    assert hit["title"] == "g-1" and hit["source_type"] == "chat"
