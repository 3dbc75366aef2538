"""What every backend does alike with a store's life: opening one that is not there, listing and
forgetting conversations, and knowing a document again wherever it was ingested from."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from conftest import SAMPLES
from threadkeep.api import KnowledgeBase
from threadkeep.embed import HashEmbedder
from threadkeep.store import SearchFilters, StoreNotFound, open_store


def test_opening_without_create_finds_no_store(store_location: str) -> None:
    with pytest.raises(StoreNotFound) as raised:
        open_store(store_location, create=False)
    assert "there is no store at" in str(raised.value)
    open_store(store_location).close()
    open_store(store_location, create=False).close()


def _docs_copy(tmp_path: Path, name: str) -> Path:
    target = tmp_path / name / "docs"
    shutil.copytree(SAMPLES / "docs", target)
    return target


def test_the_same_documents_from_another_folder_are_not_duplicated(store_location: str, tmp_path: Path) -> None:
    with KnowledgeBase.open(store_location, HashEmbedder(64)) as kb:
        first = kb.ingest(SAMPLES / "docs")
        assert first.documents == 3
        before = {item.id for item in kb.store.list_documents()}
        # The parent folder as root: other relative paths, same files.
        kb.ingest(SAMPLES)
        # A copy somewhere else: other absolute paths, same content.
        again = kb.ingest(_docs_copy(tmp_path, "copy"))
        assert again.documents == 3
        documents = kb.store.list_documents()
        sample_docs = [item for item in documents if item.id in before]
        assert len(sample_docs) == 3
        assert {item.id for item in documents} - before <= {"support_group/README.md"}
        hits = kb.search("E1024 文件名", k=20, filters=SearchFilters(source_type="document"))
        chunk_ids = [hit.chunk.id for hit in hits]
        assert len(chunk_ids) == len(set(chunk_ids))
        texts = [hit.chunk.text for hit in hits]
        assert len(texts) == len(set(texts))


def test_a_moved_file_is_the_same_document(store_location: str, tmp_path: Path) -> None:
    folder = tmp_path / "notes"
    folder.mkdir()
    (folder / "setup.md").write_text("# Setup\n\nRun the installer as administrator.\n", encoding="utf-8")
    with KnowledgeBase.open(store_location, HashEmbedder(64)) as kb:
        kb.ingest(folder)
        [before] = kb.store.list_documents()
        moved = tmp_path / "archive" / "old-setup.md"
        moved.parent.mkdir()
        (folder / "setup.md").rename(moved)
        kb.ingest(moved.parent)
        [after] = kb.store.list_documents()
        assert after.id == before.id
        assert after.path == str(moved.resolve())


def test_an_edited_file_in_place_stays_one_document(store_location: str, tmp_path: Path) -> None:
    folder = tmp_path / "notes"
    folder.mkdir()
    page = folder / "faq.md"
    page.write_text("# FAQ\n\nOld answer.\n", encoding="utf-8")
    with KnowledgeBase.open(store_location, HashEmbedder(64)) as kb:
        kb.ingest(folder)
        page.write_text("# FAQ\n\nNew answer.\n", encoding="utf-8")
        report = kb.ingest(page)
        assert report.documents_rebuilt == 1
        assert [item.id for item in kb.store.list_documents()] == ["faq.md"]


def test_different_files_with_the_same_name_keep_apart(store_location: str, tmp_path: Path) -> None:
    for team, text in (("alpha", "Alpha restarts the sync service."), ("beta", "Beta reinstalls the client.")):
        (tmp_path / team).mkdir()
        (tmp_path / team / "README.md").write_text(f"# Readme\n\n{text}\n", encoding="utf-8")
    with KnowledgeBase.open(store_location, HashEmbedder(64)) as kb:
        kb.ingest(tmp_path / "alpha")
        kb.ingest(tmp_path / "beta")
        ids = sorted(item.id for item in kb.store.list_documents())
        assert ids == ["README.md", "beta/README.md"]


def test_forgetting_a_conversation_removes_it_and_leaves_a_record(store_location: str, bundle_factory) -> None:
    from datetime import UTC, datetime

    from conftest import message

    bundle = bundle_factory(
        [
            message("a1", "u1", 0, "点了图标没反应"),
            message("a2", "u2", 1, "结束托盘进程再打开", quotedMessageId="a1"),
            message("b1", "u3", 0, "发票怎么开", conversation="g-2"),
        ],
        conversations=[{"conversationRef": "g-1", "title": "客户群", "kind": "group"}],
    )
    when = datetime(2026, 6, 1, 9, 30, tzinfo=UTC)
    with KnowledgeBase.open(store_location, HashEmbedder(64)) as kb:
        kb.ingest(bundle)
        kb.store.flag_for_review("g-1", "a1", "missing from the latest export", when)
        listed = {item.ref: item for item in kb.store.list_conversations()}
        assert listed["g-1"].metadata == {} and listed["g-1"].title == "客户群"
        record = kb.store.forget_conversation("g-1", when)
        assert record is not None and record.to_dict() == {
            "conversation": "g-1",
            "title": "客户群",
            "source_format": "bundle",
            "messages": 2,
            "forgotten_at": when.isoformat(),
        }
        assert kb.store.forget_conversation("g-1", when) is None
        assert [item.ref for item in kb.store.list_conversations()] == ["g-2"]
        assert kb.store.load_messages("g-1") == [] and kb.store.conversation_record("g-1") is None
        assert kb.store.review_items() == []
        assert kb.store.forgotten_conversations() == [record]
        assert all(hit.chunk.source_ref == "g-2" for hit in kb.search("图标 托盘 发票", k=10))
        assert kb.check() == []
        # The export still holds it: ingesting it again brings it back.
        assert kb.ingest(bundle).conversations_rebuilt == 1
        assert {item.ref for item in kb.store.list_conversations()} == {"g-1", "g-2"}
