"""Hand-written, hand-labelled small group chats (Chinese and English) as export bundles with gold.

    python benchmarks/hand_chats.py                 # writes build/hand-chats/{dev,heldout}/{bundle,gold}
    python benchmarks/hand_chats.py --out /tmp/hc

The chats live in `benchmarks/data/hand_chats/*.chat` (see the README there for how they were
written and labelled). Each file fixes its part (`# split: dev` or `heldout`) in its header; the
parts were set when the files were written, before any assigner was run on them.

File format, one message per line, fields separated by ` | `:

    HH:MM[:SS] | sender | thread label | text [| options]

- header lines `# key: value`: `title`, `split`, `kind` (default group), `tz` (default +08:00),
  `mentions` (`refs`: an `@Display Name` in the text also fills `mentionedRefs`, as WeChat-style
  exports do; `text`: names stay in the text only, as WhatsApp exports), `member: ref = Display
  Name`; `# date: YYYY-MM-DD` may also appear between messages (a new day);
- the thread label groups messages into gold threads; `-` makes the message a thread of its own
  (system lines, advertisements); the sender `system` makes a system line;
- options, space-separated: `q=N` quotes message N (1-based line number among the messages),
  `to=N` the gold parent (default: the previous message of the same thread), `type=image` (or
  video, voice, file, link), `recalled`.

Message ids are `<chat name>:<N>`; the conversation ref is the file name without `.chat`.
"""

from __future__ import annotations

import argparse
import json
import re
from dataclasses import dataclass, field
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
DATA = ROOT / "benchmarks" / "data" / "hand_chats"
OUT = ROOT / "build" / "hand-chats"
PARTS = ("dev", "heldout")
_TIME = re.compile(r"^(\d{1,2}):(\d{2})(?::(\d{2}))?$")


@dataclass
class Chat:
    name: str
    title: str
    split: str
    kind: str
    mentions: str
    members: dict[str, str] = field(default_factory=dict)
    messages: list[dict] = field(default_factory=list)
    labels: list[str] = field(default_factory=list)
    parents: list[int | None] = field(default_factory=list)  # gold parent (message number), None = default


def parse(path: Path) -> Chat:
    chat = Chat(path.stem, path.stem, "", "group", "refs")
    tz, date, last = "+08:00", "", ""
    for number, raw in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
        line = raw.strip()
        if not line:
            continue
        if line.startswith("#"):
            key, _, value = line[1:].partition(":")
            key, value = key.strip(), value.strip()
            if key == "member":
                ref, _, display = value.partition("=")
                chat.members[ref.strip()] = display.strip()
            elif key == "date":
                date = value
            elif key == "tz":
                tz = value
            elif key in ("title", "split", "kind", "mentions"):
                setattr(chat, key, value)
            continue
        fields = [part.strip() for part in line.split(" | ")]
        if len(fields) not in (4, 5):
            raise ValueError(f"{path}:{number}: expected 4 or 5 fields, got {len(fields)}")
        clock, sender, label, text = fields[:4]
        options = fields[4].split() if len(fields) == 5 else []
        match = _TIME.match(clock)
        if not match or not date:
            raise ValueError(f"{path}:{number}: bad time {clock!r} or no date yet")
        hour, minute, second = int(match[1]), int(match[2]), int(match[3] or 0)
        sent = f"{date}T{hour:02d}:{minute:02d}:{second:02d}{tz}"
        if sent < last:
            raise ValueError(f"{path}:{number}: time goes backwards")
        last = sent
        if sender != "system" and sender not in chat.members:
            raise ValueError(f"{path}:{number}: unknown sender {sender!r}")
        index = len(chat.messages) + 1
        message = {
            "messageId": f"{chat.name}:{index}",
            "conversationRef": chat.name,
            "senderRef": sender,
            "sentAt": sent,
            "type": "system" if sender == "system" else "text",
            "text": text,
        }
        parent = None
        for option in options:
            key, _, value = option.partition("=")
            if key == "q":
                message["quotedMessageId"] = f"{chat.name}:{int(value)}"
            elif key == "to":
                parent = int(value)
            elif key == "type":
                message["type"] = value
            elif key == "recalled":
                message["recalled"] = True
            else:
                raise ValueError(f"{path}:{number}: unknown option {option!r}")
        if chat.mentions == "refs":
            by_name = {display: ref for ref, display in chat.members.items()}
            refs = [by_name[name] for name in sorted(by_name, key=len, reverse=True) if f"@{name}" in text]
            if refs:
                message["mentionedRefs"] = sorted(set(refs))
        chat.messages.append(message)
        chat.labels.append(f"-{index}" if label == "-" else label)
        chat.parents.append(parent)
    if chat.split not in PARTS:
        raise ValueError(f"{path}: split must be one of {PARTS}")
    return chat


def gold(chat: Chat) -> dict:
    threads: dict[str, list[str]] = {}
    links = []
    for message, label, parent in zip(chat.messages, chat.labels, chat.parents, strict=True):
        thread = threads.setdefault(label, [])
        mid = message["messageId"]
        target = f"{chat.name}:{parent}" if parent else (thread[-1] if thread else mid)
        links.append([mid, target])
        thread.append(mid)
    return {
        "file": chat.name,
        "annotated_ids": [m["messageId"] for m in chat.messages],
        "threads": list(threads.values()),
        "links": links,
        "split": chat.split,
    }


def chats(folder: Path = DATA) -> list[Chat]:
    return [parse(path) for path in sorted(folder.glob("*.chat"))]


def write(out: Path, folder: Path = DATA) -> dict[str, int]:
    """Write one bundle and gold folder per part; returns messages per part."""
    counts: dict[str, int] = {}
    loaded = chats(folder)
    for part in PARTS:
        chosen = [chat for chat in loaded if chat.split == part]
        bundle, gold_folder = out / part / "bundle", out / part / "gold"
        bundle.mkdir(parents=True, exist_ok=True)
        gold_folder.mkdir(parents=True, exist_ok=True)
        for stale in gold_folder.glob("*.gold.json"):
            stale.unlink()
        members: dict[str, str] = {}
        with (bundle / "messages.jsonl").open("w", encoding="utf-8") as handle:
            for chat in chosen:
                members.update({ref: display for ref, display in chat.members.items() if ref not in members})
                for message in chat.messages:
                    handle.write(json.dumps(message, ensure_ascii=False) + "\n")
        (bundle / "conversations.jsonl").write_text(
            "".join(
                json.dumps({"conversationRef": c.name, "title": c.title, "kind": c.kind}, ensure_ascii=False) + "\n"
                for c in chosen
            ),
            encoding="utf-8",
        )
        (bundle / "members.jsonl").write_text(
            "".join(
                json.dumps({"senderRef": ref, "displayName": display}, ensure_ascii=False) + "\n"
                for ref, display in members.items()
            ),
            encoding="utf-8",
        )
        (bundle / "manifest.json").write_text(
            json.dumps({"format": "chat-export-bundle", "version": 1, "source": "benchmarks/hand_chats.py"}) + "\n",
            encoding="utf-8",
        )
        for chat in chosen:
            (gold_folder / f"{chat.name}.gold.json").write_text(
                json.dumps(gold(chat), ensure_ascii=False, indent=1) + "\n", encoding="utf-8"
            )
        counts[part] = sum(len(chat.messages) for chat in chosen)
    return counts


def build(name: str) -> Path:
    """Write the set `benchmarks/data/<name>` into `build/<name with dashes>` and return that folder."""
    out = OUT.with_name(name.replace("_", "-"))
    write(out, DATA.with_name(name))
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--out", type=Path, default=OUT)
    parser.add_argument("--data", type=Path, default=DATA, help="folder of .chat files (default: %(default)s)")
    args = parser.parse_args()
    for part, count in write(args.out, args.data).items():
        print(f"{part}: {count} messages -> {args.out / part}")


if __name__ == "__main__":
    main()
