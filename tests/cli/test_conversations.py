"""Listing conversations, forgetting one on request, and how conversations are named in what is printed."""

from __future__ import annotations

import json
from pathlib import Path

from threadkeep.api import KnowledgeBase

from .conftest import SAMPLES

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures"


def test_conversations_lists_refs_titles_and_counts(cli) -> None:
    assert cli("ingest", str(SAMPLES / "support_group")).exit_code == 0
    text = cli("conversations")
    assert text.exit_code == 0
    assert "yunshu-support-1  云枢同步用户交流1群  (group, 326 messages" in text.output
    listed = json.loads(cli("conversations", "--json").output)
    assert {item["ref"] for item in listed} == {"yunshu-support-1", "yunshu-support-2"}
    assert all(item["title"] and item["messages"] > 0 and "metadata" not in item for item in listed)


def test_forget_asks_first_and_a_no_keeps_everything(cli) -> None:
    cli("ingest", str(SAMPLES / "support_group"))
    refused = cli("forget", "yunshu-support-2", input="n\n")
    assert refused.exit_code != 0 and "stopped" in refused.stderr
    assert "Forget yunshu-support-2" in refused.stderr
    assert len(json.loads(cli("conversations", "--json").output)) == 2


def test_forget_removes_the_conversation_and_records_it(cli, default_db: Path) -> None:
    cli("ingest", str(SAMPLES / "support_group"))
    done = cli("forget", "yunshu-support-2", input="y\n")
    assert done.exit_code == 0, done.output
    assert "forgot yunshu-support-2" in done.output
    assert [item["ref"] for item in json.loads(cli("conversations", "--json").output)] == ["yunshu-support-1"]
    with KnowledgeBase.open(default_db) as kb:
        assert kb.store.load_messages("yunshu-support-2") == []
        assert kb.check() == []
        hits = kb.search("企业版", k=50)
        assert all(hit.chunk.source_ref != "yunshu-support-2" for hit in hits)
    review = json.loads(cli("review", "--json").output)
    record = [item for item in review if item["reason"] == "forgotten on request"]
    assert [(item["conversation"], item["messages"]) for item in record] == [("yunshu-support-2", 172)]
    assert "text" in record[0] and record[0]["text"] is None
    assert "forgotten on request" in cli("review").output


def test_forget_with_yes_and_an_unknown_ref(cli) -> None:
    cli("ingest", str(SAMPLES / "support_group"))
    unknown = cli("forget", "no-such-chat", "--yes")
    assert unknown.exit_code == 1 and unknown.stderr.startswith("error: no conversation 'no-such-chat'")
    assert cli("forget", "yunshu-support-1", "--yes").exit_code == 0


def test_missing_from_an_export_still_deletes_nothing(cli, tmp_path: Path, default_db: Path) -> None:
    cli("ingest", str(SAMPLES / "support_group"))
    partial = tmp_path / "partial"
    partial.mkdir()
    for name in ("manifest.json", "members.jsonl", "conversations.jsonl"):
        (partial / name).write_bytes((SAMPLES / "support_group" / name).read_bytes())
    lines = (SAMPLES / "support_group" / "messages.jsonl").read_text(encoding="utf-8").splitlines()
    (partial / "messages.jsonl").write_text("\n".join(lines[:10]) + "\n", encoding="utf-8")
    cli("ingest", str(partial))
    with KnowledgeBase.open(default_db) as kb:
        assert kb.stats()["messages"] == 498


def test_search_names_chat_conversations_by_title(cli) -> None:
    cli("ingest", str(SAMPLES / "support_group"))
    text = cli("search", "点图标没反应", "--source-type", "chat", "--k", "2")
    assert text.exit_code == 0
    assert "chat: 云枢同步" in text.output and "chat: yunshu-support" not in text.output
    hits = json.loads(cli("search", "点图标没反应", "--source-type", "chat", "--json").output)["hits"]
    assert hits and all(hit["title"].startswith("云枢同步") for hit in hits)


def test_assistant_sessions_are_not_labelled_like_group_discussions(cli) -> None:
    cli("ingest", str(FIXTURES / "claude_code" / "session.jsonl"))
    [listed] = json.loads(cli("conversations", "--json").output)
    assert listed["kind"] == "assistant" and listed["project"] == "/home/ana/shop"
    assert listed["title"].endswith("(in /home/ana/shop)")
    hits = json.loads(cli("search", "CI cache step", "--json").output)["hits"]
    assert hits and hits[0]["title"] == listed["title"]


def test_assistant_citations_carry_no_resolution_claim() -> None:
    from datetime import UTC, datetime

    from threadkeep.answer import build_answer
    from threadkeep.answerability import Assessment
    from threadkeep.model import Chunk, Hit

    chunk = Chunk(
        id="s#1",
        source_type="chat",
        source_ref="s",
        text="[2025-11-30 11:09] ana: why does CI fail\\n[2025-11-30 11:10] Claude: the cache key",
        embedding_input="x",
        occurred_at=datetime(2025, 11, 30, tzinfo=UTC),
        evidence_ids=("u-1",),
        resolution_state="workaround",
    )
    hit = Hit(chunk, 1.0, dense_score=0.95)
    answerable = Assessment(True)
    answer = build_answer("why does CI fail", [hit], {"s": "Fix CI"}, answerable, conversation_kinds={"s": "assistant"})
    [citation] = answer.chat
    assert citation.label == "From the assistant session Fix CI on 2025-11-30"
    assert citation.resolution_state is None
    assert "unconfirmed" not in answer.text and "Suggested" not in answer.text
    group = build_answer("why does CI fail", [hit], {"s": "#dev"}, answerable)
    assert "unconfirmed" in group.chat[0].label
