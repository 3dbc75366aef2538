"""How fast every reader gets through one long hostile line, by reader and shape.

    nice -n 19 python benchmarks/reader_long_lines.py --mb 10         # every reader, every shape
    python benchmarks/reader_long_lines.py --mb 1 --readers wechat irc

Two sets of shapes. The named shapes are runs of what once made a pattern backtrack (spaces,
separators, repeated markers) inside an otherwise valid file of one group-chat format. The
generic shapes cover every reader: a run of each filler of the fuzz test (tests/readers/mutations.py:
spaces, tabs, separators, digits, brackets, quotes, backslashes, letters, CJK, U+200E) and of
repeated markers (links, mentions, markup, date headers) placed in
the reader's first seed file as a line of its own, in the middle of its first line, and (JSON
seeds) as its longest string value, so the run reaches the code that reads message text. A linear
reader keeps the same speed as the line grows. Times are CPU seconds of this process (a loaded
machine does not inflate them). Prints one row per named shape, and per reader and placement the
slowest filler; every case slower than `--flag` s/MB is listed.
"""

from __future__ import annotations

import argparse
import importlib
import json
import sys
import tempfile
import time
from collections.abc import Callable, Iterator
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests" / "readers"))

from mutations import FILLERS, _json_documents, _replace, reader_module, seeds, stage

from threadkeep.readers import READER_MODULES

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
            lambda n: (
                '{"participants": [{"name": "a"}], "messages": [{"sender_name": "a", "timestamp_ms": '
                '1700000000000, "content": "' + "\\u00c5" * (n // 6) + '"}]}'
            ),
        )
    },
}


def _longest_string(raw: bytes) -> tuple[list, bool, tuple] | None:
    """The seed's JSON documents and the path of its longest string value (None if not JSON)."""
    parsed = _json_documents(raw)
    if not parsed:
        return None
    documents, jsonl, targets = parsed
    best, best_length = None, -1
    for index, path in targets:
        value = documents[index]
        for step in path:
            value = value[step]
        if isinstance(value, str) and len(value) > best_length:
            best, best_length = (index, path), len(value)
    return (documents, jsonl, best) if best else None


# Besides the fuzz fillers: repeated markers the readers look for (links, mentions, markup, headers).
MARKERS = [
    "[a](",
    "![",
    "<@U1>",
    "<http://",
    "**",
    "```",
    "_",
    "#",
    "> ",
    "|",
    "@a ",
    "=",
    "~",
    "*",
    "1/2/24, 10:00 - ",
    "2023/09/16 ",
    "[10:00] ",
    "--- ",
    "오전 ",
    "\\u00",
    "\r",
]


def generic_cases(raw: bytes, size: int) -> Iterator[tuple[str, str, bytes]]:
    """(placement, filler, new bytes) for each filler: own line, mid first line, longest JSON string."""
    lines = raw.split(b"\n")
    json_shape = _longest_string(raw)  # (documents, jsonl, (document, path)): documents re-read per case
    for filler in [*FILLERS, *MARKERS]:
        run = filler * (size // len(filler.encode()) + 1)
        encoded = run.encode()
        yield "own line", filler, b"\n".join([lines[0], encoded, *lines[1:]])
        first = lines[0]
        yield (
            "mid first line",
            filler,
            b"\n".join([first[: len(first) // 2] + encoded + first[len(first) // 2 :], *lines[1:]]),
        )
        if json_shape:
            documents, jsonl, _ = _json_documents(raw)
            index, path = json_shape[2]
            _replace(documents[index], path, run)
            if jsonl:
                text = "\n".join(json.dumps(document, ensure_ascii=False) for document in documents)
            else:
                text = json.dumps(documents[0], ensure_ascii=False)
            yield "longest JSON string", filler, text.encode()


def _timed(reader, path: Path) -> tuple[float, str]:
    started = time.process_time()
    result = reader.read(path)
    return time.process_time() - started, f"{len(result.messages)} messages, {len(result.skipped)} skips"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--mb", type=float, action="append", help="line length in MB (repeatable; default 1 and 4)")
    parser.add_argument("--readers", nargs="*", default=list(READER_MODULES), help="reader names (default: all)")
    parser.add_argument("--flag", type=float, default=1.0, help="list every case slower than this (s/MB)")
    args = parser.parse_args()
    sizes = args.mb or [1.0, 4.0]
    print(f"{'reader':<14} {'shape':<30} " + " ".join(f"{f'{size:g} MB: CPU s, MB/s':>22}" for size in sizes))
    slow: list[str] = []
    with tempfile.TemporaryDirectory(prefix="threadkeep-long-lines-") as folder:
        for name in args.readers:
            reader = importlib.import_module(f"threadkeep.readers.{name}")
            for shape, (file_name, build) in SHAPES.get(name, {}).items():
                cells = []
                for size in sizes:
                    path = Path(folder) / f"{name}-{size:g}" / file_name
                    path.parent.mkdir(parents=True, exist_ok=True)
                    path.write_text(build(int(size * 1_000_000)), encoding="utf-8")
                    megabytes = path.stat().st_size / 1_000_000
                    seconds, outcome = _timed(reader, path)
                    cells.append(f"{seconds:8.2f} {megabytes / seconds if seconds else float('inf'):11.1f}")
                    if seconds / megabytes > args.flag:
                        slow.append(f"{name} / {shape} / {size:g} MB: {seconds / megabytes:.2f} s/MB ({outcome})")
                print(f"{name:<14} {shape:<30} " + " ".join(f"{cell:>22}" for cell in cells), flush=True)
            chosen = [seed for seed in seeds(reader_module(name)) if seed.is_file()][:1]
            for seed in chosen:
                place = Path(folder) / f"{name}-generic"
                place.mkdir()
                target, _ = stage(seed, place)
                raw = target.read_bytes()
                worst: dict[tuple[str, float], tuple[float, str]] = {}
                for size in sizes:
                    for placement, filler, data in generic_cases(raw, int(size * 1_000_000)):
                        target.write_bytes(data)
                        seconds, outcome = _timed(reader, target)
                        per_mb = seconds / (len(data) / 1e6)
                        if per_mb > worst.get((placement, size), (-1.0, ""))[0]:
                            worst[(placement, size)] = (per_mb, f"{filler!r}")
                        if per_mb > args.flag:
                            case = f"{name} / {placement} of {filler!r} / {size:g} MB"
                            slow.append(f"{case}: {per_mb:.2f} s/MB ({outcome})")
                target.write_bytes(raw)
                for placement in dict.fromkeys(placement for placement, _ in worst):
                    cells = [f"{worst[placement, size][0]:6.3f} s/MB {worst[placement, size][1]:>8}" for size in sizes]
                    print(
                        f"{name:<14} {'worst filler, ' + placement:<30} " + " ".join(f"{cell:>22}" for cell in cells),
                        flush=True,
                    )
    print(f"cases slower than {args.flag:g} s/MB: {len(slow)}")
    for line in slow:
        print(f"    {line}")


if __name__ == "__main__":
    main()
