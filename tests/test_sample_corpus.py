"""End to end on the bundled sample corpus with the real embedding model."""

import json
import shutil
from datetime import UTC, datetime
from pathlib import Path

import pytest

from conftest import SAMPLES
from threadkeep.api import KnowledgeBase
from threadkeep.readers import read_path
from threadkeep.text import is_noise

NOW = datetime(2026, 5, 18, tzinfo=UTC)
QUESTIONS = json.loads((SAMPLES / "support_group" / "questions.json").read_text(encoding="utf-8"))


@pytest.fixture(scope="module")
def kb(tmp_path_factory):
    folder = tmp_path_factory.mktemp("sample")
    docs = folder / "docs"
    shutil.copytree(SAMPLES / "docs", docs)
    with KnowledgeBase.open(folder / "kb.db") as knowledge:
        knowledge.ingest(SAMPLES / "support_group")
        knowledge.ingest(docs)
        yield knowledge


def test_ingesting_the_sample_again_changes_no_count(kb):
    before = kb.stats()
    report = kb.ingest(SAMPLES / "support_group")
    assert report.conversations_rebuilt == 0 and report.embedded == 0
    assert kb.stats() == before
    assert before["messages"] == len(read_path(SAMPLES / "support_group").messages)


# The sample's two resolved icon threads: report, the staff's fix and the asker's confirmation,
# each reached minutes after the report with other talk between.
ICON_THREADS = (
    ("yunshu-support-1:6", "yunshu-support-1:40", "yunshu-support-1:43"),
    ("yunshu-support-1:212", "yunshu-support-1:214", "yunshu-support-1:220"),
)


@pytest.mark.parametrize("query", ["点图标没反应", "我这边点了图标一点反应都没有"])
def test_the_icon_question_finds_one_chunk_with_report_fix_and_confirmation(kb, query):
    hits = kb.search(query, k=3, now=NOW)
    holding_all = [
        hit
        for hit in hits
        if hit.chunk.source_type == "chat"
        and any(set(thread) <= set(hit.chunk.evidence_ids) for thread in ICON_THREADS)
    ]
    assert holding_all, [hit.chunk.text[:80] for hit in hits]
    assert holding_all[0].chunk.resolution_state == "resolved"


@pytest.mark.parametrize("query", ["+1 我也是", "收到 谢谢", "同问", "点图标没反应", "E1024", "发票"])
def test_no_noise_message_is_in_any_top_five_embedding_input(kb, query):
    hits = kb.search(query, k=5, now=NOW)
    assert hits
    for hit in hits:
        assert hit.chunk.embedding_input.strip()
        if hit.chunk.source_type == "chat":
            for line in hit.chunk.embedding_input.splitlines():
                assert not is_noise(line.partition(": ")[2]), line


@pytest.mark.parametrize("item", [q for q in QUESTIONS if q["thread"]], ids=lambda q: q["question"][:12])
def test_sample_questions_find_their_thread_in_the_top_five(kb, item):
    hits = kb.search(item["question"], k=5, now=NOW)
    found = [hit for hit in hits if item["thread"] in (hit.chunk.evidence_ids or ())]
    related = [hit for hit in hits if set(item.get("related", [])) & set(hit.chunk.evidence_ids or ())]
    assert found or related


def test_a_document_section_answers_in_the_top_three(kb):
    hits = kb.search("点击托盘图标没有反应怎么处理", k=3, now=NOW)
    documents = [hit.chunk for hit in hits if hit.chunk.source_type == "document"]
    assert documents
    assert documents[0].heading_path[-1] == "点击托盘图标没有反应"
    assert documents[0].title and documents[0].occurred_at.year == 2026


def test_editing_one_document_changes_only_its_chunks(kb, tmp_path):
    db = kb.store.db
    faq = next(Path(row[0]) for row in db.execute("SELECT path FROM documents WHERE id LIKE '%FAQ%'"))
    others_before = db.execute(
        "SELECT id, text FROM chunks WHERE source_type = 'document' AND source_ref NOT LIKE '%FAQ%' ORDER BY id"
    ).fetchall()
    faq_before = {row[0] for row in db.execute("SELECT id FROM chunks WHERE source_ref LIKE '%FAQ%'")}
    text = faq.read_text(encoding="utf-8")
    faq.write_text(text.replace("结束任务", "结束进程"), encoding="utf-8")
    report = kb.ingest(faq.parent)
    assert report.documents_rebuilt == 1
    faq_after = {row[0] for row in db.execute("SELECT id FROM chunks WHERE source_ref LIKE '%FAQ%'")}
    assert faq_after != faq_before and len(faq_after) == len(faq_before)
    assert len(faq_after - faq_before) == 1  # only the edited section's chunk
    assert (
        db.execute(
            "SELECT id, text FROM chunks WHERE source_type = 'document' AND source_ref NOT LIKE '%FAQ%' ORDER BY id"
        ).fetchall()
        == others_before
    )
    assert kb.store.list_documents() and kb.ingest(faq.parent).documents_rebuilt == 0


def test_a_question_answered_by_documents_and_chat_gets_two_dated_groups(kb):
    answer = kb.ask("装客户端报0x80070005怎么办", now=NOW)
    assert answer.status == "answered"
    assert answer.documents and answer.chat
    assert all(c.date and c.source_type == "document" and c.heading_path for c in answer.documents)
    assert all(c.date and c.source_type == "chat" and c.evidence_ids for c in answer.chat)
    text = answer.text
    assert text.index("From the documents:") < text.index("From chat discussions:")
    assert all(f"{c.date:%Y-%m-%d}" in text for c in answer.documents + answer.chat)


def test_an_open_thread_is_shown_but_never_as_the_fix(kb):
    answer = kb.ask("M4 芯片的 Mac 上 CPU 占用 100% 风扇狂转", now=NOW)
    open_threads = [c for c in answer.chat if c.resolution_state == "open"]
    assert open_threads, [c.label for c in answer.chat]
    assert all("no conclusion at the time" in c.label and c.label.startswith("Reported in") for c in open_threads)
    unconfirmed = [c for c in answer.chat if c.resolution_state == "workaround"]
    assert all("unconfirmed" in c.label for c in unconfirmed)


def test_a_thread_with_an_unread_image_carries_the_media_note(kb):
    answer = kb.ask("上传速度特别慢，只有一百多KB每秒", now=NOW)
    media = [c for c in answer.chat if c.notes]
    assert media and "attachment whose content was not read: [图片]" in media[0].notes[0]
    assert media[0].notes[0] in answer.text


@pytest.mark.parametrize("item", [q for q in QUESTIONS if not q["thread"]], ids=lambda q: q["question"][:12])
def test_questions_the_corpus_cannot_answer_get_no_answer(kb, item):
    answer = kb.ask(item["question"], now=NOW)
    assert answer.status == "no_answer"
    assert not answer.documents and not answer.chat


@pytest.mark.parametrize("item", [q for q in QUESTIONS if q["thread"]], ids=lambda q: q["question"][:12])
def test_questions_the_corpus_answers_are_answered(kb, item):
    assert kb.ask(item["question"], now=NOW).status == "answered"
