"""Given a folder, a reader reads nothing outside it: symlinks leading out are listed, not followed."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from threadkeep.readers import discord, irc, telegram, wechat, whatsapp

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures"
CASES = [
    (whatsapp, FIXTURES / "whatsapp" / "WhatsApp Chat with Project Team.txt", "WhatsApp Chat with Outsiders.txt"),
    (wechat, FIXTURES / "wechat" / "twelve_hour.txt", "chat.txt"),
    (irc, FIXTURES / "irc" / "weechat.log", "#ops.log"),
    (discord, FIXTURES / "discord" / "dm.json", "dm.json"),
    (telegram, FIXTURES / "telegram" / "ChatExport_2024-02-01" / "result.json", "result.json"),
]


@pytest.mark.parametrize(("reader", "source", "link_name"), CASES, ids=[case[0].NAME for case in CASES])
def test_symlink_out_of_the_folder_is_not_followed(tmp_path: Path, reader, source: Path, link_name: str):
    outside = tmp_path / "outside"
    outside.mkdir()
    shutil.copy(source, outside / link_name)
    given = tmp_path / "given"
    given.mkdir()
    (given / link_name).symlink_to(outside / link_name)
    result = reader.read(given)
    assert result.messages == []
    assert (str(given / link_name), "symlink to outside the folder given; not followed") in [
        (skip.file, skip.reason) for skip in result.skipped
    ]
    assert not any(str(outside) in str(skip) for skip in result.skipped)
    # The same file copied inside is read: the link, not the content, is what was refused.
    (given / link_name).unlink()
    shutil.copy(source, given / link_name)
    assert reader.read(given).messages
