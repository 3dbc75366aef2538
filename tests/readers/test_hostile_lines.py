"""Long hostile lines are read or rejected in time linear in their length.

Each case runs the reader in a child process with a generous time limit: a
quadratic pattern takes hours on these lines, a linear one well under a second.
The assertions are on behaviour (the child finished and reported); speed itself
is measured by the fuzz benchmark, not asserted here.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

RUN = """
import json, sys
from pathlib import Path
from threadkeep.readers import {module} as reader
out = []
for path in sys.argv[1:]:
    result = reader.read(Path(path))
    out.append([len(result.messages), len(result.skipped)])
print(json.dumps(out))
"""
TIME_LIMIT = 120
MODULES = {"signal_txt": "signal_export"}  # a second set of cases for a reader with two line formats
SPACES = " " * 200_000
KAKAO_PC = "A 님과 카카오톡 대화\n\n--------------- 2024년 3월 9일 토요일 ---------------\n[A] [오전 8:05] ok\n"


def _read_in_child(name: str, folder: Path, files: dict[str, str]) -> list[list[int]]:
    paths = []
    for index, (file_name, text) in enumerate(files.items()):
        case = folder / str(index)
        case.mkdir()
        path = case / file_name
        path.write_text(text, encoding="utf-8")
        paths.append(str(path))
    done = subprocess.run(
        [sys.executable, "-c", RUN.format(module=MODULES.get(name, name)), *paths],
        capture_output=True,
        text=True,
        timeout=TIME_LIMIT,
        check=False,
    )
    assert done.returncode == 0, done.stderr[-2000:]
    return json.loads(done.stdout)


CASES: dict[str, dict[str, str]] = {
    "wechat": {
        "spaces.txt": "甲 2023/09/16 2:51 PM\n好\n乙" + SPACES + "x\n",
        "spaces_before_date.txt": "甲 2023/09/16 14:51\n好\n乙" + SPACES + "2023/09/16 14:52\n",
        "separators.txt": "甲 2023/09/16 14:51\n" + "2023/09/16 " * 20_000 + "\n",
        "system.txt": "甲 2023/09/16 14:51\n" + "撤回了一条消息" * 30_000 + "\n",
        "mentions.txt": "甲 2023/09/16 14:51\n好\n乙 2023/09/16 14:52\n" + "@" * 200_000 + "\n",
    },
    "irc": {
        "opened.log": "[10:00] <ann> hi\n--- Log opened" + SPACES + "x\n",
        "day_changed.log": "[10:00] <ann> hi\n--- Day changed" + SPACES + "x\n",
        "begin.log": "[10:00] <ann> hi\n**** BEGIN LOGGING AT" + SPACES + "x\n",
        "joins.log": "[10:00] <ann> hi\n[10:01] *** " + "Joins: " * 30_000 + "\n",
        "untimed.log": "[10:00] <ann> hi\n=== " + "a " * 100_000 + "\n",
        "speech.log": "[10:00] <ann> hi\n[10:01] <bob>" + SPACES + "x\n[10:02]" + SPACES + "\n",
    },
    "kakaotalk": {
        "dashes.txt": KAKAO_PC + "----- " + "-" * 200_000 + " x\n",
        "separators.txt": KAKAO_PC + " -----x" * 30_000 + "\n",
        "events.txt": KAKAO_PC + "님이 " * 60_000 + "\n",
        "mobile.txt": "2024. 3. 9. 오후 7:40, A : ok\n2024. 3. 9. 오후 7:41, " + " : " * 60_000 + SPACES + "\n",
        "bracket.txt": KAKAO_PC + "[" + "]" * 100_000 + SPACES + "\n",
    },
    "line": {
        "header.txt": "[LINE] Chat history with" + SPACES + "とのトーク履歴\n\n2023/09/15(Fri)\n09:15\tA\tok\n",
        "message.txt": "2023/09/15(Fri)\n09:15\tA\tok\n09:16\t" + "\t" * 100_000 + SPACES + "\n",
        "unsent.txt": "2023/09/15(Fri)\n09:15\tA\tok\n09:16\tA\t" + "unsent a message " * 20_000 + "\n",
        "spaces.txt": "2023/09/15(Fri)\n09:15 A ok\n09:16" + SPACES + "A\n",
    },
    "messenger": {
        "message_1.json": '{"participants": [{"name": "a"}], "messages": [{"sender_name": "a", "timestamp_ms": '
        '1700000000000, "content": "ok"}, {"sender_name": "a", "timestamp_ms": 1700000000001, "content": "'
        + "\\u00c5" * 100_000
        + '"}]}'
        + SPACES,
    },
    "signal_export": {
        "chat.md": "[2024-05-29 15:04:00] Me: ok\n[2024-05-29 15:05:00] Me: "
        + "![" * 50_000
        + "](" * 50_000
        + SPACES
        + "\n(- "
        + ": " * 50_000
        + "\n[2024-05-29 15:06:00] "
        + ":" * 100_000
        + "\n",
    },
    "signal_txt": {
        "Chat (_id1).txt": "[Mar 02, 2024 09:00:05] <A> ok\n[Mar 02, 2024 09:00:06] <A> x"
        + " (a: b;" * 30_000
        + SPACES
        + "\n[Mar 02, 2024 09:00:07] *** <"
        + "<" * 100_000
        + "\n",
    },
    "slack": {
        "2013-01-23.json": json.dumps(
            [
                {"type": "message", "user": "U1", "ts": "1358877400.000005", "text": "ok"},
                {"type": "message", "user": "U1", "ts": "1358877401.000005", "text": "<" + "a" * 200_000},
                {"type": "message", "user": "U1", "ts": "1358877402.000005", "text": "<@" * 100_000},
            ]
        )
        + SPACES,
    },
    "telegram": {
        "result.json": '{"name": "x", "type": "private_group", "id": 1, "messages": [{"id": 1, "type": "message", '
        '"date": "2024-01-01T00:00:00", "from": "a", "from_id": "user1", "text": "ok"},'
        + SPACES
        + '"messages"'
        + SPACES,
    },
    "discord": {
        "channel.json": '{"guild": {"id": "1", "name": "g"}, "channel": {"id": "2", "type": "GuildTextChat", '
        '"name": "c"}, "messages": [{"id": "3", "type": "Default", "timestamp": "2024-01-01T00:00:00+00:00", '
        '"content": "ok", "author": {"id": "4", "name": "a"}},' + SPACES + '"messages"' + SPACES,
    },
    "whatsapp": {
        "edited.txt": "1/2/24, 10:00 - Ann: x" + SPACES + "y\n",
        "edited_marker.txt": "1/2/24, 10:00 - Ann: x" + SPACES + "<This message was edite\n",
        "header.txt": "1/2/24, 10:00 - Ann: x\n1/2/24," + SPACES + "10:00 - Ann: x\n",
        "ios.txt": "[1/2/24, 10:00:00] Ann: x\n[1/2/24," + SPACES + "]\n",
        "mentions.txt": "1/2/24, 10:00 - Ann: x\n1/2/24, 10:01 - Bob: " + "@" * 200_000 + "\n",
        "attached.txt": "1/2/24, 10:00 - Ann: " + "x." * 100_000 + " (file attached\n",
        "angles.txt": "1/2/24, 10:00 - Ann: " + "<" * 200_000 + "\n",
    },
}


@pytest.mark.parametrize("name", sorted(CASES))
def test_long_hostile_lines_finish(tmp_path: Path, name: str):
    counts = _read_in_child(name, tmp_path, CASES[name])
    assert len(counts) == len(CASES[name])
    # The first, well-formed header of each file is always read.
    assert all(messages >= 1 for messages, _ in counts), counts
