"""How fast the group-chat readers get through one long hostile line, by reader and shape.

    python benchmarks/reader_long_lines.py            # 1 MB and 4 MB lines
    python benchmarks/reader_long_lines.py --mb 10    # one size

Each shape is a run of what once made a pattern backtrack (spaces, separators,
repeated markers) inside an otherwise valid file. A linear reader keeps the same
MB/s as the line grows; a quadratic one drops by half per doubling. Prints one row
per reader and shape: seconds and MB/s per size, and messages / skips read.
"""

from __future__ import annotations

import argparse
import importlib
import json
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

KAKAO = "A 님과 카카오톡 대화\n\n--------------- 2024년 3월 9일 토요일 ---------------\n[A] [오전 8:05] ok\n"
SIGNAL = "[2024-05-29 15:04:00] Me: ok\n[2024-05-29 15:05:00] Me: "


def _telegram(filler: str) -> str:
    return (
        '{"name": "x", "type": "private_group", "id": 1, "messages": [{"id": 1, "type": "message", '
        '"date": "2024-01-01T00:00:00", "from": "a", "from_id": "user1", "text": "ok"},' + filler + '"messages"'
    )


def _discord(filler: str) -> str:
    return (
        '{"guild": {"id": "1", "name": "g"}, "channel": {"id": "2", "type": "GuildTextChat", "name": "c"}, '
        '"messages": [{"id": "3", "type": "Default", "timestamp": "2024-01-01T00:00:00+00:00", "content": "ok", '
        '"author": {"id": "4", "name": "a"}},' + filler + '"messages"'
    )


def _slack(filler: str) -> str:
    return json.dumps(
        [
            {"type": "message", "user": "U1", "ts": "1358877400.000005", "text": "ok"},
            {"type": "message", "user": "U1", "ts": "1358877401.000005", "text": filler},
        ]
    )


# reader -> shape -> (file name, text for a filler of n characters)
SHAPES: dict[str, dict[str, tuple[str, Callable[[int], str]]]] = {
    "wechat": {
        "spaces in a header": ("chat.txt", lambda n: "甲 2023/09/16 14:51\n好\n乙" + " " * n + "2023/09/16 14:52\n"),
        "repeated dates": ("chat.txt", lambda n: "甲 2023/09/16 14:51\n" + "2023/09/16 " * (n // 11) + "\n"),
        "repeated @": ("chat.txt", lambda n: "甲 2023/09/16 14:51\n好\n乙 2023/09/16 14:52\n" + "@" * n + "\n"),
    },
    "whatsapp": {
        "spaces before an edit marker": ("chat.txt", lambda n: "1/2/24, 10:00 - Ann: x" + " " * n + "<x\n"),
        "spaces in a header": ("chat.txt", lambda n: "1/2/24, 10:00 - Ann: x\n1/2/24," + " " * n + "10:00 - A: x\n"),
        "repeated @": ("chat.txt", lambda n: "1/2/24, 10:00 - Ann: x\n1/2/24, 10:01 - Bob: " + "@" * n + "\n"),
    },
    "irc": {
        "spaces in Log opened": ("#x.log", lambda n: "[10:00] <ann> hi\n--- Log opened" + " " * n + "x\n"),
        "spaces in Day changed": ("#x.log", lambda n: "[10:00] <ann> hi\n--- Day changed" + " " * n + "x\n"),
        "repeated Joins:": ("#x.log", lambda n: "[10:00] <ann> hi\n[10:01] *** " + "Joins: " * (n // 7) + "\n"),
    },
    "line": {
        "tabs and spaces": ("chat.txt", lambda n: "2023/09/15(Fri)\n09:15\tA\tok\n09:16\t" + "\t " * (n // 2) + "\n"),
    },
    "kakaotalk": {
        "dashes": ("chat.txt", lambda n: KAKAO + "----- " + "-" * n + " x\n"),
        "repeated separators": ("chat.txt", lambda n: KAKAO + " -----x" * (n // 7) + "\n"),
    },
    "signal_export": {
        "repeated link openers": ("chat.md", lambda n: SIGNAL + "![" * (n // 2) + "\n"),
        "repeated link middles": ("chat.md", lambda n: SIGNAL + "[a](" * (n // 4) + "\n"),
    },
    "telegram": {"spaces in JSON": ("result.json", lambda n: _telegram(" " * n))},
    "discord": {"spaces in JSON": ("channel.json", lambda n: _discord(" " * n))},
    "slack": {"unclosed <": ("2013-01-23.json", lambda n: _slack("<" + "a" * n))},
    "messenger": {
        "escaped bytes": (
            "message_1.json",
            lambda n: '{"participants": [{"name": "a"}], "messages": [{"sender_name": "a", "timestamp_ms": '
            '1700000000000, "content": "' + "\\u00c5" * (n // 6) + '"}]}',
        )
    },
}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--mb", type=float, action="append", help="line length in MB (repeatable; default 1 and 4)")
    sizes = parser.parse_args().mb or [1.0, 4.0]
    print(f"{'reader':<14} {'shape':<30} " + " ".join(f"{f'{size:g} MB: s, MB/s':>20}" for size in sizes) + "  read")
    with tempfile.TemporaryDirectory(prefix="threadkeep-long-lines-") as folder:
        for name, shapes in SHAPES.items():
            reader = importlib.import_module(f"threadkeep.readers.{name}")
            for shape, (file_name, build) in shapes.items():
                cells = []
                outcome = ""
                for size in sizes:
                    path = Path(folder) / f"{name}-{size:g}" / file_name
                    path.parent.mkdir(parents=True, exist_ok=True)
                    path.write_text(build(int(size * 1_000_000)), encoding="utf-8")
                    megabytes = path.stat().st_size / 1_000_000
                    started = time.perf_counter()
                    result = reader.read(path)
                    seconds = time.perf_counter() - started
                    cells.append(f"{seconds:8.2f} {megabytes / seconds:9.1f}")
                    outcome = f"{len(result.messages)} messages, {len(result.skipped)} skips"
                print(f"{name:<14} {shape:<30} " + " ".join(f"{cell:>20}" for cell in cells) + f"  {outcome}")


if __name__ == "__main__":
    main()
