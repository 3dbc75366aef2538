"""PDF and DOCX fixtures are generated here: DOCX with python-docx, PDF with pypdf itself
(a Helvetica text page written as a raw content stream), so no extra PDF writer is needed.
Helvetica carries no CJK glyphs, so the PDF text is English; the outline titles are not limited.
"""

from __future__ import annotations

import io
from pathlib import Path

import docx
import pytest
from pypdf import PdfWriter
from pypdf.generic import ContentStream, DictionaryObject, NameObject

from threadkeep.documents import DocumentError, read_document


def _pdf_string(text: str) -> str:
    return "(" + text.replace("\\", "\\\\").replace("(", "\\(").replace(")", "\\)") + ")"


def make_pdf(pages: list[list[str]], outline: tuple[tuple[int, str, int], ...] = (), title: str | None = None) -> bytes:
    """A PDF with one line of text per entry; outline entries are (level, title, page index)."""
    writer = PdfWriter()
    font = DictionaryObject(
        {
            NameObject("/Type"): NameObject("/Font"),
            NameObject("/Subtype"): NameObject("/Type1"),
            NameObject("/BaseFont"): NameObject("/Helvetica"),
        }
    )
    for lines in pages:
        page = writer.add_blank_page(612, 792)
        page[NameObject("/Resources")] = DictionaryObject(
            {NameObject("/Font"): DictionaryObject({NameObject("/F1"): font})}
        )
        content = ContentStream(None, None)
        shows = " ".join(f"{_pdf_string(line)} Tj T*" for line in lines)
        content.set_data(f"BT /F1 12 Tf 14 TL 72 720 Td {shows} ET".encode("latin-1"))
        page.replace_contents(content)
    parents: dict[int, object] = {}
    for level, text, page_index in outline:
        parents[level] = writer.add_outline_item(title=text, page_number=page_index, parent=parents.get(level - 1))
    if title:
        writer.add_metadata({"/Title": title})
    buffer = io.BytesIO()
    writer.write(buffer)
    return buffer.getvalue()


def write(path: Path, data: bytes) -> Path:
    path.write_bytes(data)
    return path


def test_pdf_without_outline_has_one_section_per_page(tmp_path: Path) -> None:
    path = write(
        tmp_path / "release-notes.pdf", make_pdf([["Selective sync is new."], [], ["LAN transfer is faster."]])
    )
    document = read_document(path, tmp_path)
    assert document.id == "release-notes.pdf"
    assert document.title == "release-notes"
    assert [(s.heading_path, s.text) for s in document.sections] == [
        (("release-notes", "Page 1"), "Selective sync is new."),
        (("release-notes", "Page 3"), "LAN transfer is faster."),
    ]


def test_pdf_outline_gives_the_heading_path(tmp_path: Path) -> None:
    pages = [
        ["Yunshu Sync Guide", "This guide covers setup.", "1 Install", "Download the installer."],
        ["2 Upgrade", "Pause sync first.", "2.1 Automatic upgrade", "The client checks daily."],
    ]
    outline = ((1, "1 Install", 0), (1, "2 Upgrade", 1), (2, "2.1 Automatic upgrade", 1))
    document = read_document(write(tmp_path / "guide.pdf", make_pdf(pages, outline, title="Sync Guide")))
    assert document.title == "Sync Guide"
    assert [(s.heading_path, s.text) for s in document.sections] == [
        (("Sync Guide",), "Yunshu Sync Guide\nThis guide covers setup."),
        (("Sync Guide", "1 Install"), "Download the installer."),
        (("Sync Guide", "2 Upgrade"), "Pause sync first."),
        (("Sync Guide", "2 Upgrade", "2.1 Automatic upgrade"), "The client checks daily."),
    ]


def test_pdf_without_text_is_reported(tmp_path: Path) -> None:
    with pytest.raises(DocumentError, match=r"scan\.pdf.*no extractable text"):
        read_document(write(tmp_path / "scan.pdf", make_pdf([[], []])))


def test_corrupt_pdf_is_reported(tmp_path: Path) -> None:
    with pytest.raises(DocumentError, match=r"broken\.pdf"):
        read_document(write(tmp_path / "broken.pdf", b"%PDF-1.7\nthis is not a pdf"))


def make_docx() -> bytes:
    document = docx.Document()
    document.add_paragraph("云枢同步用户手册", style="Title")
    document.add_paragraph("本手册适用于 3.2.0 版本。")
    document.add_heading("1 安装", level=1)
    document.add_heading("1.1 系统要求", level=2)
    table = document.add_table(rows=3, cols=3)
    for row, cells in enumerate([("项目", "Windows", "macOS"), ("内存", "4 GB", "4 GB"), ("磁盘", "500 MB", "500 MB")]):
        for column, text in enumerate(cells):
            table.cell(row, column).text = text
    document.add_heading("1.1.1 网络", level=3)
    document.add_paragraph("需要访问 443 端口。")
    document.add_paragraph("打开防火墙设置", style="List Number")
    document.add_paragraph("允许云枢同步", style="List Number")
    document.add_heading("2 升级", level=1)
    document.add_paragraph("直接覆盖安装即可。")
    buffer = io.BytesIO()
    document.save(buffer)
    return buffer.getvalue()


def test_docx_heading_styles_give_the_hierarchy(tmp_path: Path) -> None:
    document = read_document(write(tmp_path / "manual.docx", make_docx()), tmp_path)
    assert document.id == "manual.docx"
    assert document.title == "云枢同步用户手册"
    assert [section.heading_path for section in document.sections] == [
        ("云枢同步用户手册",),
        ("云枢同步用户手册", "1 安装", "1.1 系统要求"),
        ("云枢同步用户手册", "1 安装", "1.1 系统要求", "1.1.1 网络"),
        ("云枢同步用户手册", "2 升级"),
    ]
    assert document.sections[2].text == "需要访问 443 端口。\n\n1. 打开防火墙设置\n1. 允许云枢同步"


def test_docx_tables_are_text_rows(tmp_path: Path) -> None:
    document = read_document(write(tmp_path / "manual.docx", make_docx()))
    assert document.sections[1].text == (
        "| 项目 | Windows | macOS |\n| --- | --- | --- |\n| 内存 | 4 GB | 4 GB |\n| 磁盘 | 500 MB | 500 MB |"
    )


def test_corrupt_docx_is_reported(tmp_path: Path) -> None:
    with pytest.raises(DocumentError, match=r"broken\.docx"):
        read_document(write(tmp_path / "broken.docx", b"PK\x03\x04 not really a zip"))


def test_password_protected_pdf_is_reported(tmp_path: Path) -> None:
    writer = PdfWriter()
    writer.add_blank_page(612, 792)
    writer.encrypt("secret")
    buffer = io.BytesIO()
    writer.write(buffer)
    with pytest.raises(DocumentError, match=r"locked\.pdf: the PDF is password-protected"):
        read_document(write(tmp_path / "locked.pdf", buffer.getvalue()))
