from __future__ import annotations

import hashlib
import os
from datetime import UTC, datetime
from pathlib import Path

import pytest

from threadkeep.documents import DocumentError, is_document, iter_documents, read_document

SAMPLE_DOCS = Path(__file__).resolve().parents[2] / "src" / "threadkeep" / "samples" / "docs"
INSTALL = SAMPLE_DOCS / "安装与升级说明.md"


def write(folder: Path, name: str, text: str) -> Path:
    path = folder / name
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text, encoding="utf-8")
    return path


def paths(document) -> list[tuple[str, ...]]:
    return [section.heading_path for section in document.sections]


def test_sample_manual_has_three_heading_levels() -> None:
    document = read_document(INSTALL, SAMPLE_DOCS)
    assert document.id == "安装与升级说明.md"
    assert document.title == "安装与升级说明"
    assert document.path == str(INSTALL)
    assert document.content_hash == hashlib.sha256(INSTALL.read_bytes()).hexdigest()
    assert paths(document)[:3] == [
        ("安装与升级说明",),
        ("安装与升级说明", "1 安装", "1.1 系统要求"),
        ("安装与升级说明", "1 安装", "1.2 Windows 安装步骤"),
    ]
    assert ("安装与升级说明", "2 升级", "2.1 升级前准备") in paths(document)
    intro = document.sections[0].text
    assert intro.startswith("本文介绍「云枢同步」桌面客户端")


def test_front_matter_updated_date_is_used_as_utc() -> None:
    document = read_document(INSTALL)
    assert document.updated_at == datetime(2026, 3, 2, tzinfo=UTC)
    assert document.id == INSTALL.name


def test_date_field_is_used_when_updated_is_absent(tmp_path: Path) -> None:
    path = write(tmp_path, "notes.md", "---\ndate: 2026-02-20T09:30:00+08:00\n---\n# 发布说明\n\n正文。\n")
    assert read_document(path).updated_at == datetime(2026, 2, 20, 1, 30, tzinfo=UTC)


def test_chinese_date_in_front_matter(tmp_path: Path) -> None:
    path = write(tmp_path, "notes.md", "---\nupdated: 2026年3月2日\n---\n正文。\n")
    assert read_document(path).updated_at == datetime(2026, 3, 2, tzinfo=UTC)


def test_modification_time_without_front_matter(tmp_path: Path) -> None:
    path = write(tmp_path, "plain.md", "# 标题\n\n正文。\n")
    os.utime(path, (1_767_225_600, 1_767_225_600))
    document = read_document(path)
    assert document.updated_at == datetime(2026, 1, 1, tzinfo=UTC)
    assert document.updated_at.tzinfo is not None


def test_title_from_front_matter_then_h1_then_file_stem(tmp_path: Path) -> None:
    with_meta = write(tmp_path, "a.md", "---\ntitle: 用户手册\n---\n# 第一章\n\n正文。\n")
    with_h1 = write(tmp_path, "b.md", "前言。\n\n# 云枢同步手册\n\n正文。\n")
    bare = write(tmp_path, "备忘.md", "## 小节\n\n正文。\n")
    assert read_document(with_meta).title == "用户手册"
    assert read_document(with_h1).title == "云枢同步手册"
    assert read_document(bare).title == "备忘"
    assert paths(read_document(bare)) == [("备忘", "小节")]


def test_text_before_the_first_heading_is_a_section_under_the_title(tmp_path: Path) -> None:
    path = write(tmp_path, "doc.md", "---\ntitle: 手册\n---\n开头的说明。\n\n## 安装\n\n步骤。\n")
    assert [(s.heading_path, s.text) for s in read_document(path).sections] == [
        (("手册",), "开头的说明。"),
        (("手册", "安装"), "步骤。"),
    ]


def test_several_h1_headings_sit_under_the_title(tmp_path: Path) -> None:
    path = write(tmp_path, "faq.md", "# 安装\n\n甲。\n\n# 卸载\n\n乙。\n\n### 细节\n\n丙。\n")
    assert paths(read_document(path)) == [("安装",), ("安装", "卸载"), ("安装", "卸载", "细节")]


def test_hash_inside_code_fence_is_not_a_heading() -> None:
    document = read_document(INSTALL)
    assert not any("静默安装" in part for path in paths(document) for part in path)
    windows = next(s for s in document.sections if s.heading_path[-1] == "1.2 Windows 安装步骤")
    assert "```powershell\n# 静默安装到默认目录" in windows.text
    assert windows.text.rstrip().endswith('/D="D:\\Apps\\YunshuSync"\n```')


def test_tables_are_kept_as_written() -> None:
    document = read_document(INSTALL)
    requirements = next(s for s in document.sections if s.heading_path[-1] == "1.1 系统要求")
    assert "| 项目 | Windows | macOS |\n| --- | --- | --- |\n| 操作系统 |" in requirements.text


def test_heading_markup_is_reduced_to_text(tmp_path: Path) -> None:
    path = write(tmp_path, "doc.md", "# 手册\n\n## 使用 `yunshu` 命令与 **同步**\n\n正文。\n")
    assert paths(read_document(path)) == [("手册", "使用 yunshu 命令与 同步")]


def test_editor_comments_and_empty_sections_are_dropped(tmp_path: Path) -> None:
    path = write(tmp_path, "doc.md", "# 手册\n\n<!-- TODO 补充截图 -->\n\n## 空小节\n\n## 有内容\n\n正文。\n")
    document = read_document(path)
    assert [(s.heading_path, s.text) for s in document.sections] == [(("手册", "有内容"), "正文。")]


def test_gbk_encoded_markdown_is_decoded(tmp_path: Path) -> None:
    path = tmp_path / "旧文档.md"
    path.write_bytes("# 旧版说明\n\n请先结束进程。\n".encode("gbk"))
    document = read_document(path)
    assert document.sections[0].text == "请先结束进程。"


def test_invalid_front_matter_names_the_file(tmp_path: Path) -> None:
    path = write(tmp_path, "broken.md", "---\ntitle: [unclosed\n---\n# x\n")
    with pytest.raises(DocumentError, match=r"broken\.md.*front matter"):
        read_document(path)


def test_bad_date_names_the_file_and_field(tmp_path: Path) -> None:
    path = write(tmp_path, "broken.md", "---\nupdated: soon\n---\n# x\n")
    with pytest.raises(DocumentError, match=r"broken\.md: updated"):
        read_document(path)


def test_missing_and_unsupported_files_raise_document_error(tmp_path: Path) -> None:
    with pytest.raises(DocumentError, match=r"missing\.md"):
        read_document(tmp_path / "missing.md")
    with pytest.raises(DocumentError, match="unsupported"):
        read_document(write(tmp_path, "data.csv", "a,b\n"))
    binary = tmp_path / "binary.txt"
    binary.write_bytes(b"\x00\xff\xfe\x00garbage")
    with pytest.raises(DocumentError, match=r"binary\.txt"):
        read_document(binary)


def test_plain_text_is_paragraphs_under_the_file_name(tmp_path: Path) -> None:
    path = write(tmp_path, "客服话术.txt", "第一段第一行\n第一段第二行\n\n\n第二段。\n")
    document = read_document(path)
    assert document.title == "客服话术"
    assert [(s.heading_path, s.text) for s in document.sections] == [
        (("客服话术",), "第一段第一行\n第一段第二行\n\n第二段。")
    ]


def test_iter_documents_is_sorted_recursive_and_skips_hidden(tmp_path: Path) -> None:
    write(tmp_path, "b.md", "b")
    write(tmp_path, "a/guide.html", "<p>a</p>")
    write(tmp_path, "a/notes.txt", "n")
    write(tmp_path, ".hidden.md", "h")
    write(tmp_path, ".git/readme.md", "g")
    write(tmp_path, "~$draft.docx", "lock")
    write(tmp_path, "image.png", "png")
    found = [path.relative_to(tmp_path).as_posix() for path in iter_documents(tmp_path)]
    assert found == ["a/guide.html", "a/notes.txt", "b.md"]
    assert read_document(tmp_path / "a" / "guide.html", tmp_path).id == "a/guide.html"


def test_is_document() -> None:
    assert is_document("手册.MD")
    assert is_document(Path("x/y.pdf"))
    assert not is_document(".secret.md")
    assert not is_document("photo.jpg")


def test_sample_folder_reads_cleanly() -> None:
    documents = [read_document(path, SAMPLE_DOCS) for path in iter_documents(SAMPLE_DOCS)]
    assert len(documents) >= 3
    faq = next(document for document in documents if "FAQ" in document.id)
    tray = next(section for section in faq.sections if section.heading_path[-1] == "点击托盘图标没有反应")
    assert "结束任务" in tray.text
    assert "cache" in tray.text
    assert any("0x80070005" in section.heading_path[-1] for section in faq.sections)
    assert any("E1024" in section.heading_path[-1] for section in faq.sections)
