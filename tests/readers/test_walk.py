"""A folder or zip is read file by file: every export, every document, and a reason for the rest."""

from __future__ import annotations

import json
import shutil
import zipfile
from pathlib import Path

from threadkeep.api import KnowledgeBase, read_chats
from threadkeep.documents import is_document
from threadkeep.embed import HashEmbedder
from threadkeep.readers import Limits, plan_path, read_path

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures"
SAMPLES = Path(__file__).resolve().parents[2] / "src" / "threadkeep" / "samples"
WHATSAPP = "12/03/2024, 09:15 - Ana: is the release out?\n12/03/2024, 09:17 - Ben: yes, 3.2 shipped\n"
BINARY = bytes(range(256)) * 8
PNG = b"\x89PNG\r\n\x1a\n" + bytes(200)


def mixed_folder(root: Path) -> Path:
    """A Slack workspace, a ChatGPT conversations.json, a WhatsApp chat, two Markdown documents, a binary."""
    shutil.copytree(FIXTURES / "slack" / "workspace", root / "slack")
    (root / "chatgpt").mkdir(parents=True)
    shutil.copy(FIXTURES / "chatgpt" / "export" / "conversations.json", root / "chatgpt" / "conversations.json")
    (root / "WhatsApp Chat with Ana.txt").write_text(WHATSAPP, encoding="utf-8")
    (root / "docs").mkdir()
    (root / "docs" / "install.md").write_text("# Install\n\nRun the installer, then restart.\n", encoding="utf-8")
    (root / "docs" / "faq.md").write_text("# FAQ\n\n## Login\n\nReset the password first.\n", encoding="utf-8")
    (root / "tool.bin").write_bytes(BINARY)
    return root


def _plan_summary(path: Path, **kwargs) -> tuple[dict[str, str], dict[str, str], dict[str, str]]:
    with plan_path(path, is_document=is_document, relative=True, **kwargs) as plan:
        units = {unit.display: unit.reader for unit in plan.units}
        not_read = {skip.file: skip.reason for skip in plan.not_read}
        broken = {skip.file: skip.reason for skip in plan.broken}
    return units, not_read, broken


def test_a_mixed_folder_reads_every_export_and_document_and_lists_the_binary(tmp_path):
    root = mixed_folder(tmp_path / "exports")
    units, not_read, broken = _plan_summary(root)
    assert units == {
        "slack": "slack",
        "chatgpt/conversations.json": "chatgpt",
        "WhatsApp Chat with Ana.txt": "whatsapp",
        "docs/faq.md": "document",
        "docs/install.md": "document",
    }
    assert "binary" in not_read["tool.bin"]
    assert not broken

    result = read_path(root)
    formats = {conversation.source_format for conversation in result.conversations}
    assert formats == {"slack", "chatgpt", "whatsapp"}
    parts = (root / "slack", root / "chatgpt", root / "WhatsApp Chat with Ana.txt")
    assert len(result.messages) == sum(len(read_path(part).messages) for part in parts)


def test_ingest_of_a_mixed_folder_stores_chats_and_documents(tmp_path):
    root = mixed_folder(tmp_path / "exports")
    with KnowledgeBase.open(tmp_path / "kb.db", HashEmbedder(64)) as kb:
        report = kb.ingest(root)
        assert report.documents == 2 and set(report.formats) == {"slack", "chatgpt", "whatsapp", "document"}
        assert report.messages_read == sum(count for name, count in report.formats.items() if name != "document")
        assert [skip.file for skip in report.not_read if "binary" in skip.reason] == ["tool.bin"]
        assert {item.id for item in kb.store.list_documents()} == {"docs/faq.md", "docs/install.md"}


def test_the_packaged_samples_folder_reads_its_chat_and_its_documents(tmp_path):
    with KnowledgeBase.open(tmp_path / "kb.db", HashEmbedder(64)) as kb:
        report = kb.ingest(SAMPLES)
    assert report.formats["bundle"] == report.messages_read > 400
    assert report.documents == 3
    # The bundle's own README and its benchmark files are part of the export, listed, not read.
    listed = {skip.file for skip in report.not_read}
    assert {"support_group/README.md", "support_group/questions.json", "support_group/gold.json"} <= listed


def test_a_folder_that_is_one_export_is_read_whole(tmp_path):
    """Discord thread files need their parent channel's file: the export folder goes to its reader whole."""
    shutil.copytree(FIXTURES / "discord" / "export", tmp_path / "discord")
    (tmp_path / "notes.md").write_text("# Notes\n\nThe staging move is done.\n", encoding="utf-8")
    (tmp_path / "discord" / "README.md").write_text("# Exported with DiscordChatExporter\n", encoding="utf-8")
    units, not_read, _ = _plan_summary(tmp_path)
    assert units == {"discord": "discord", "notes.md": "document"}
    assert "inside a discord export" in not_read["discord/README.md"]
    walked = read_path(tmp_path)
    whole = read_path(FIXTURES / "discord" / "export")
    assert [m.id for m in walked.messages] == [m.id for m in whole.messages]
    assert [(m.platform_thread, m.reply_to) for m in walked.messages] == [
        (m.platform_thread, m.reply_to) for m in whole.messages
    ]


def test_an_export_folder_with_another_format_inside_is_split(tmp_path):
    """A Discord channel file next to a WhatsApp chat: neither reader gets the other's file."""
    folder = tmp_path / "mixed"
    shutil.copytree(FIXTURES / "discord" / "export", folder)
    (folder / "WhatsApp Chat with Ana.txt").write_text(WHATSAPP, encoding="utf-8")
    units, _, _ = _plan_summary(folder)
    assert sorted(set(units.values())) == ["discord", "whatsapp"]
    assert len([name for name, reader in units.items() if reader == "discord"]) == 3


def test_an_irc_log_folder_with_an_annotation_file_reads_the_log_and_lists_the_rest(tmp_path):
    folder = tmp_path / "irc"
    folder.mkdir()
    shutil.copy(FIXTURES / "irc" / "#python.2004-11-15.log", folder)
    (folder / "2004-11-15.annotation.txt").write_text("1000 1000 -\n1001 1000 -\n1002 1001 -\n", encoding="utf-8")
    (folder / "capture.pcap").write_bytes(BINARY)
    result = read_chats(folder)
    assert result.messages and {c.source_format for c in result.conversations} == {"irc"}
    reasons = {Path(skip.file).name: skip.reason for skip in result.not_read}
    assert all(skip.file.startswith(str(folder)) for skip in result.not_read)  # as given, when not ingesting
    assert set(reasons) == {"2004-11-15.annotation.txt", "capture.pcap"}
    assert "annotation" in reasons["2004-11-15.annotation.txt"] and "binary" in reasons["capture.pcap"]


def test_a_truncated_export_is_reported_as_broken_json_at_its_line_and_column(tmp_path):
    whole = (FIXTURES / "chatgpt" / "export" / "conversations.json").read_text(encoding="utf-8")
    # Cut before any key a detector looks for: no reader claims it, and it is still broken JSON.
    (tmp_path / "conversations.json").write_text('[\n  {\n    "title": "Deploy', encoding="utf-8")
    (tmp_path / "late.json").write_text(whole[: len(whole) // 2], encoding="utf-8")
    result = read_chats(tmp_path)
    skips = {Path(skip.file).name: skip for skip in result.skipped}
    assert skips["conversations.json"].line == 3 and "not valid JSON" in skips["conversations.json"].reason
    assert "column" in skips["conversations.json"].reason and "cut short" in skips["conversations.json"].reason
    assert skips["late.json"].line is not None and "not valid JSON" in skips["late.json"].reason
    assert not result.not_read


def test_media_hidden_and_outside_links_are_listed_not_read(tmp_path):
    folder = tmp_path / "export"
    folder.mkdir()
    (folder / "WhatsApp Chat with Ana.txt").write_text(WHATSAPP, encoding="utf-8")
    (folder / "IMG-20240312-WA0001.jpg").write_bytes(PNG)
    (folder / ".DS_Store").write_bytes(BINARY)
    (folder / "empty.json").write_bytes(b"")
    secret = tmp_path / "secret.md"
    secret.write_text("# Secret\n\nnot for the store\n", encoding="utf-8")
    (folder / "linked.md").symlink_to(secret)
    units, not_read, _ = _plan_summary(folder)
    assert units == {"WhatsApp Chat with Ana.txt": "whatsapp"}
    assert "media" in not_read["IMG-20240312-WA0001.jpg"]
    assert "hidden" in not_read[".DS_Store"]
    assert not_read["empty.json"] == "file is empty"
    assert "outside" in not_read["linked.md"]


def test_a_zip_is_walked_like_a_folder_and_paths_name_the_zip(tmp_path):
    root = mixed_folder(tmp_path / "exports")
    archive = tmp_path / "exports.zip"
    with zipfile.ZipFile(archive, "w", zipfile.ZIP_DEFLATED) as zipped:
        for file in sorted(root.rglob("*")):
            if file.is_file():
                zipped.write(file, "exports/" + file.relative_to(root).as_posix())
    units, not_read, _ = _plan_summary(archive)
    assert units["exports.zip/exports/slack"] == "slack"
    assert units["exports.zip/exports/chatgpt/conversations.json"] == "chatgpt"
    assert units["exports.zip/exports/docs/faq.md"] == "document"
    assert "binary" in not_read["exports.zip/exports/tool.bin"]
    with KnowledgeBase.open(tmp_path / "kb.db", HashEmbedder(64)) as kb:
        report = kb.ingest(archive)
        assert report.documents == 2 and report.messages_read == len(read_path(root).messages)
        documents = kb.store.list_documents()
    expected = {f"exports.zip/exports/docs/{name}" for name in ("faq.md", "install.md")}
    assert {item.id for item in documents} == expected
    paths = [str(skip.file) for skip in [*report.skipped, *report.not_read]]
    assert all("threadkeep-zip-" not in path and str(tmp_path) not in path for path in paths)


def test_a_zip_inside_a_folder_is_opened_too(tmp_path):
    folder = tmp_path / "downloads"
    folder.mkdir()
    with zipfile.ZipFile(folder / "chat.zip", "w") as zipped:
        zipped.writestr("WhatsApp Chat with Ana.txt", WHATSAPP)
    assert _plan_summary(folder)[0] == {"chat.zip/WhatsApp Chat with Ana.txt": "whatsapp"}


def test_zip_limits_refuse_bombs_and_huge_archives_with_a_clear_message(tmp_path):
    bomb = tmp_path / "bomb.zip"
    with zipfile.ZipFile(bomb, "w", zipfile.ZIP_DEFLATED) as zipped:
        zipped.writestr("zeros.txt", b"0" * (40 << 20))
        zipped.writestr("WhatsApp Chat with Ana.txt", WHATSAPP)
    units, not_read, _ = _plan_summary(bomb)
    assert units == {"bomb.zip/WhatsApp Chat with Ana.txt": "whatsapp"}
    assert "zip bomb" in not_read["bomb.zip/zeros.txt"] and "200:1" in not_read["bomb.zip/zeros.txt"]

    many = tmp_path / "many.zip"
    with zipfile.ZipFile(many, "w") as zipped:
        for number in range(5):
            zipped.writestr(f"{number}.txt", "hello")
    _, _, broken = _plan_summary(many, limits=Limits(max_zip_members=4))
    assert "5 files, more than the 4 limit" in broken["many.zip"]

    total = tmp_path / "total.zip"
    with zipfile.ZipFile(total, "w") as zipped:
        for number in range(3):
            zipped.writestr(f"WhatsApp Chat with {number}.txt", WHATSAPP)
    units, not_read, _ = _plan_summary(total, limits=Limits(max_zip_bytes=2 * len(WHATSAPP)))
    assert len(units) == 2 and "unpack past" in not_read["total.zip/WhatsApp Chat with 2.txt"]


def test_a_damaged_zip_is_reported_not_raised(tmp_path):
    damaged = tmp_path / "export.zip"
    good = tmp_path / "good.zip"
    with zipfile.ZipFile(good, "w", zipfile.ZIP_DEFLATED) as zipped:
        zipped.writestr("WhatsApp Chat with Ana.txt", WHATSAPP * 50)
    data = bytearray(good.read_bytes())
    data[60:90] = bytes(30)  # inside the compressed member
    damaged.write_bytes(bytes(data))
    _, _, broken = _plan_summary(damaged)
    assert any("cannot unpack" in reason for reason in broken.values())
    result = read_path(damaged)
    assert not result.messages and any("cannot unpack" in skip.reason for skip in result.skipped)


def test_files_over_the_size_limit_are_listed_not_read(tmp_path):
    (tmp_path / "WhatsApp Chat with Ana.txt").write_text(WHATSAPP * 100, encoding="utf-8")
    (tmp_path / "small.md").write_text("# Small\n\nfits\n", encoding="utf-8")
    units, not_read, _ = _plan_summary(tmp_path, limits=Limits(max_file_bytes=1000))
    assert units == {"small.md": "document"}
    assert "larger than the 1000 bytes limit" in not_read["WhatsApp Chat with Ana.txt"]
    # A reader that loads a file itself (an export folder read whole) meets the same limit.
    shutil.copytree(FIXTURES / "slack" / "workspace", tmp_path / "slack")
    result = read_path(tmp_path / "slack", limits=Limits(max_file_bytes=200))
    assert any("limit" in skip.reason for skip in result.skipped)


def test_forcing_a_format_reads_the_whole_path_with_that_reader(tmp_path):
    root = mixed_folder(tmp_path / "exports")
    assert not read_path(root, format="irc").messages
    assert {c.source_format for c in read_path(root / "slack", format="slack").conversations} == {"slack"}
    with KnowledgeBase.open(tmp_path / "kb.db", HashEmbedder(64)) as kb:
        report = kb.ingest(root, format="document")
    assert report.documents == 2 and not report.messages_read
    assert any("slack export; not read with --format document" in skip.reason for skip in report.not_read)


def test_skip_reports_stay_small_however_many_lines_are_bad(tmp_path):
    folder = tmp_path / "bundle"
    folder.mkdir()
    good = {"messageId": "m1", "conversationRef": "g", "senderRef": "a", "sentAt": "2026-01-01T00:00:00+00:00"}
    lines = [json.dumps(good)] + [f'{{"messageId": "bad-{n}"' for n in range(300_000)]
    (folder / "messages.jsonl").write_text("\n".join(lines), encoding="utf-8")
    with KnowledgeBase.open(tmp_path / "kb.db", HashEmbedder(64)) as kb:
        report = kb.ingest(folder)
    assert len(report.skipped) == 300_000
    data = report.to_dict()
    assert len(json.dumps(data)) < 20_000
    assert data["skipped"]["count"] == 300_000 and len(data["skipped"]["first"]) == 20
    assert data["skipped"]["by_reason"][0]["count"] == 300_000 and not data["skipped"]["complete"]
    first = data["skipped"]["first"][0]
    assert (first["file"], first["line"]) == ("messages.jsonl", 2) and "not valid JSON" in first["reason"]
    assert len(report.to_dict(None)["skipped"]["first"]) == 300_000


def test_gemini_projects_and_messenger_threads_stay_whole_in_a_mixed_folder(tmp_path):
    """A Gemini CLI project (logs.json beside chats/) and a Messenger thread of several files are one unit each."""
    shutil.copytree(FIXTURES / "gemini_cli" / "tmp", tmp_path / "gemini")
    shutil.copytree(FIXTURES / "messenger" / "messages", tmp_path / "facebook" / "messages")
    (tmp_path / "WhatsApp Chat with Ana.txt").write_text(WHATSAPP, encoding="utf-8")
    units, _, _ = _plan_summary(tmp_path)
    assert sorted(units.values()) == ["gemini_cli", "messenger", "messenger", "whatsapp"]
    assert all(units[name] != "messenger" or name.startswith("facebook/messages/inbox/") for name in units)
    walked = read_path(tmp_path)
    alone = [read_path(FIXTURES / "gemini_cli" / "tmp"), read_path(FIXTURES / "messenger")]
    assert {m.id for m in walked.messages} >= {m.id for result in alone for m in result.messages}
