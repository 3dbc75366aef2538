"""Synthetic small-group chats with known threads, from separately recorded real dialogues.

    python benchmarks/small_groups.py                       # writes build/small-groups/{zh,en}-{train,dev,heldout}
    python benchmarks/small_groups.py --out /tmp/sg --seed 7

Sources (all in ../shared/bench, real multi-turn dialogues, each recorded on its own):
- Chinese: CrossWOZ customer/agent dialogues (`zh-crosswoz/dev`); agents become shared staff
  accounts, as in a support group.
- English: LoCoMo sessions (two friends chatting, `locomo`) and LongMemEval user/assistant
  sessions (`longmemeval`, turns cut to their first sentences; the assistant becomes a shared
  helper account, like a maintainer answering a team chat).

Each chat interleaves 1-6 dialogues at a drawn density (one at a time, a few overlapping, or
many at once), with varied turn gaps, people, shared staff accounts and @mentions, and inserts
the short turns real small groups are full of and the sources lack: a clarifying question right
after a report and its one-word answer, "let me check" followed by a long pause and the
conclusion, acknowledgements and confirmations (also from a bystander with the same problem).
The inserted phrases come from two disjoint lists: train and dev chats use list A, held-out
chats list B, so held-out figures do not reward learning the phrases by heart.

The split is fixed by a hash of each source dialogue's id (SHA-1, not Python's `hash`), before
any model output is seen: 60 % train, 20 % dev, 20 % held-out. A CrossWOZ dialogue takes the part
of the `zh-crosswoz-mix` chat it belongs to, so that chat set splits the same way
(`mix_parts`). Nothing is chosen on the held-out parts. Gold threads are the source dialogues
with their inserted turns, a CrossWOZ dialogue cut into one thread per request (`request_cuts`),
plus greetings and stickers nobody answers (threads of their own); links point to the previous
turn of the same dialogue (a clarifying answer to its question).
"""

from __future__ import annotations

import argparse
import glob
import hashlib
import json
import os
import random
import re
from dataclasses import dataclass, field
from datetime import datetime, timedelta, timezone
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def shared_bench() -> Path:
    """`$THREADKEEP_BENCH`, else `shared/bench` beside the checkout (or beside the folder holding
    worktrees). Importing this module needs no data, so tests of its pure parts run without it."""
    if "THREADKEEP_BENCH" in os.environ:
        return Path(os.environ["THREADKEEP_BENCH"])
    for folder in ROOT.parents:
        if (folder / "shared" / "bench").is_dir():
            return folder / "shared" / "bench"
    return ROOT.parent / "shared" / "bench"


BENCH = shared_bench()
OUT = ROOT / "build" / "small-groups"
PARTS = ("train", "dev", "heldout")


def part_of(key: str) -> str:
    """The fixed part of a source item: 60 % train, 20 % dev, 20 % held-out."""
    value = int(hashlib.sha1(key.encode("utf-8")).hexdigest()[:8], 16) / 0xFFFFFFFF
    return "train" if value < 0.6 else "dev" if value < 0.8 else "heldout"


def mix_parts() -> dict[str, str]:
    """Part of each `zh-crosswoz-mix` dev chat (by its ref), and of each CrossWOZ dialogue in it."""
    parts: dict[str, str] = {}
    for path in sorted((BENCH / "zh-crosswoz-mix" / "dev" / "gold").glob("*.gold.json")):
        record = json.loads(path.read_text(encoding="utf-8"))
        part = part_of(record["file"])
        parts[record["file"]] = part
        for dialogue in record["source_dialogues"]:
            parts[f"crosswoz-{dialogue}"] = part
    return parts


# ----------------------------------------------------------------------------- sources


@dataclass
class Dialogue:
    key: str
    language: str
    kind: str  # "service" (customer / agent) or "peers"
    turns: list[tuple[int, str]]  # (0 = the one who opens, 1 = the other, text)
    names: tuple[str, str] | None = None  # fixed display names (peers whose texts name each other)
    cuts: tuple[int, ...] = ()  # turns that open a new request: each request is a thread of its own


# CrossWOZ customers chain requests in one dialogue (a hotel, then a restaurant near it, then a
# taxi); in a support group each would be its own thread, and labelling the whole dialogue as one
# thread taught the model to merge a new report into the thread active before it.
_DOMAINS = (
    ("hotel", re.compile(r"酒店|宾馆|住宿|住")),
    ("restaurant", re.compile(r"餐馆|餐厅|饭店|饭庄|吃|菜|美食")),
    ("attraction", re.compile(r"景点|游玩|玩|公园|博物馆")),
    ("taxi", re.compile(r"出租|打车|叫车|车型|车牌")),
    ("metro", re.compile(r"地铁")),
)
_SEARCH = re.compile(r"推荐|找|介绍|想去|想吃|想住|预定|预订|呼叫|打车|坐地铁|叫(?:个|辆)?车|有没有")
_NEARBY = re.compile(r"(?:周边|附近)(?:都|还|的)?(?:有|还有)(?:哪些|什么|其他|没有)")


def _domain(text: str) -> str | None:
    hits = [(match.start(), name) for name, pattern in _DOMAINS if (match := pattern.search(text))]
    return min(hits)[1] if hits else None


def request_cuts(turns: list[tuple[int, str]]) -> tuple[int, ...]:
    """Turns of the opener (role 0) that search afresh in another domain than the request before."""
    cuts: list[int] = []
    current: str | None = None
    for index, (role, text) in enumerate(turns):
        if role != 0:
            continue
        found = _domain(text)
        if current is None:
            current = found
        elif found and found != current and _SEARCH.search(text) and not _NEARBY.search(text):
            cuts.append(index)
            current = found
    return tuple(cuts)


def _jsonl(path: Path) -> list[dict]:
    return [json.loads(line) for line in path.read_text(encoding="utf-8").split("\n") if line.strip()]


def crosswoz() -> list[Dialogue]:
    by_ref: dict[str, list[dict]] = {}
    for message in _jsonl(BENCH / "zh-crosswoz" / "dev" / "bundle" / "messages.jsonl"):
        by_ref.setdefault(message["conversationRef"], []).append(message)
    out = []
    for ref in sorted(by_ref):
        messages = sorted(by_ref[ref], key=lambda m: int(m["messageId"].rpartition(":")[2]))
        turns = [(0 if m["senderRef"].startswith("user") else 1, m["text"]) for m in messages if m.get("text")]
        out.append(Dialogue(ref, "zh", "service", turns, cuts=request_cuts(turns)))
    return out


_SENTENCE = re.compile(r"(?<=[.!?])\s+")
_MARKDOWN = re.compile(r"[*#`_>]+")


def _shorten(text: str, limit: int) -> str:
    text = _MARKDOWN.sub("", text).replace("\n", " ").strip()
    out = ""
    for sentence in _SENTENCE.split(text):
        if out and len(out) + len(sentence) > limit:
            break
        out = f"{out} {sentence}".strip()
    return out[: limit + 40]


def locomo() -> list[Dialogue]:
    by_session: dict[str, list[dict]] = {}
    for message in _jsonl(BENCH / "locomo" / "bundle" / "messages.jsonl"):
        by_session.setdefault(message["messageId"].rpartition(":")[0], []).append(message)
    out = []
    for key in sorted(by_session):
        messages = sorted(by_session[key], key=lambda m: int(m["messageId"].rpartition(":")[2]))
        first = messages[0]["senderRef"]
        other = next((m["senderRef"] for m in messages if m["senderRef"] != first), "friend")
        turns = [(0 if m["senderRef"] == first else 1, _shorten(m["text"], 160)) for m in messages if m.get("text")]
        out.append(Dialogue(f"locomo-{key}", "en", "peers", turns[:18], (first, other)))
    return out


def longmemeval(limit: int) -> list[Dialogue]:
    sessions: dict[str, list[dict]] = {}
    for path in sorted(glob.glob(str(BENCH / "longmemeval" / "bundles" / "*" / "messages.jsonl"))):
        for message in _jsonl(Path(path)):
            sessions.setdefault(message["conversationRef"], []).append(message)
    out = []
    for ref in sorted(sessions):
        messages = sorted({m["messageId"]: m for m in sessions[ref]}.values(), key=lambda m: m["sentAt"])
        turns = [(0 if m["senderRef"] == "user" else 1, _shorten(m.get("text") or "", 140)) for m in messages]
        turns = [turn for turn in turns if turn[1]][:8]
        if len(turns) >= 2:
            out.append(Dialogue(f"lme-{ref}", "en", "service", turns))
    rng = random.Random(0)
    rng.shuffle(out)
    return sorted(out[:limit], key=lambda d: d.key)


# ----------------------------------------------------------------------------- inserted turns

# (list A: train and dev, list B: held-out). Clarifying questions come with answers.
PHRASES: dict[str, dict[str, tuple[list, list]]] = {
    "zh": {
        "clarify": (
            [
                ("你什么版本", ["{v}", "{v} 的", "最新的 {v}"]),
                ("哪个版本的？", ["{v}", "应该是 {v}"]),
                ("安卓还是苹果", ["安卓", "苹果", "iPhone 13", "华为"]),
                ("电脑端还是手机端？", ["电脑", "手机上", "都不行"]),
                ("报错截图发一下", ["[图片]", "[图片] 就这个"]),
                ("重启过吗", ["重启了 没用", "试过了"]),
            ],
            [
                ("版本号多少", ["{v}", "{v} 吧"]),
                ("用的什么系统", ["win10", "Mac", "win11 家庭版"]),
                ("具体哪一步不行", ["登录那步", "一打开就这样"]),
                ("什么时候开始的", ["今天早上", "昨天升级以后"]),
                ("账号是手机号吗", ["是的", "对 手机号"]),
            ],
        ),
        "wait": (
            ["我看看", "稍等", "我查一下", "收到，我找研发看下，稍等", "好的 我问问"],
            ["我问下技术同事", "稍等我确认一下", "好的 我去查下", "我这边看一下哈"],
        ),
        "conclusion": (["找到了，", "久等了，", "查到了，", "问过了，"], ["让您久等了，", "确认了下，", "好了，"]),
        "ack": (["好的", "收到", "谢谢", "好的谢谢", "嗯嗯", "明白了", "ok"], ["好嘞", "感谢", "懂了", "👌", "行"]),
        "confirm": (
            ["好了", "可以了", "搞定了 谢谢", "解决了", "可以了 👍"],
            ["成功了", "没问题了", "正常了 感谢", "行了行了"],
        ),
        "me_too": (["我也好了", "我的也可以了", "+1 我也是这样"], ["我这边也正常了", "同 我也好了"]),
        "close": (["不客气", "有问题随时说", "好的～"], ["👍", "客气了", "不用谢"]),
        "same": (["+1", "我也是", "同问", "我也遇到了"], ["一样", "我这也是", "同"]),
        "chatter": (
            ["大家早", "[表情]", "早上好", "哈哈哈", "周末愉快"],
            ["晚上好各位", "[动画表情]", "来了来了", "冒个泡"],
        ),
    },
    "en": {
        "clarify": (
            [
                ("which version?", ["{v}", "{v} I think", "latest, {v}"]),
                ("android or iphone?", ["android", "iphone", "pixel 7"]),
                ("did you restart it?", ["yes, twice", "yep, no change"]),
                ("any error message?", ["no, nothing happens", "just a blank screen"]),
                ("is it on wifi?", ["yes", "no, mobile data"]),
            ],
            [
                ("what version are you running?", ["{v}", "{v}, just updated"]),
                ("windows or mac?", ["mac", "windows 11"]),
                ("since when?", ["this morning", "since yesterday"]),
                ("can you send a screenshot?", ["[image]", "[image] this one"]),
            ],
        ),
        "wait": (
            ["let me check", "one sec", "looking into it", "ok I'll ask the devs", "hmm let me see"],
            ["give me a few minutes", "checking now", "hang on, let me look", "will ask around"],
        ),
        "conclusion": (["found it: ", "ok so ", "sorry for the wait, "], ["got it - ", "update: ", "right, "]),
        "ack": (["ok", "thanks!", "got it", "ok thanks", "👍", "sure"], ["cool", "thx", "great, thanks", "will do"]),
        "confirm": (
            ["works now", "that fixed it", "all good now 👍", "yes that was it, thanks"],
            ["yep working again", "sorted, thank you", "it's fine now"],
        ),
        "me_too": (["same here, fixed", "mine works too now", "+1 same for me"], ["fixed for me too", "ours too"]),
        "close": (["np", "glad it works", "anytime"], ["👍", "no worries"]),
        "same": (["+1", "same here", "me too"], ["same", "same issue here", "also seeing this"]),
        "chatter": (["morning all", "[sticker]", "lol", "happy friday"], ["hi everyone", "[GIF]", "coffee time"]),
    },
}

ZH_NAMES = [
    "小雨",
    "大刘",
    "老孟",
    "思思",
    "彭工",
    "豆豆",
    "韩冰",
    "阿飞",
    "王姐",
    "一凡",
    "周末",
    "钱总",
    "小贾",
    "春花",
    "大鹏",
    "晨晨",
    "阿秀",
    "老杨",
    "可乐",
    "小七",
    "橘子",
    "海涛",
    "佳佳",
    "木木",
    "老胡",
    "阿宝",
]
ZH_STAFF = ["客服-小麦", "客服-橙子", "技术-老K", "小助理", "运营-阿紫"]
EN_NAMES = [
    "mike",
    "anna",
    "jo",
    "priya",
    "tom",
    "sara",
    "dave",
    "lin",
    "kev",
    "maria",
    "omar",
    "ben",
    "chloe",
    "raj",
    "nina",
    "sam",
    "ella",
    "pete",
    "zoe",
    "alex",
]
EN_STAFF = ["helpdesk", "ops-dan", "maintainer-kim", "support"]


# ----------------------------------------------------------------------------- chats


@dataclass
class Turn:
    thread: int
    sender: str
    text: str
    at: float  # seconds
    parent: int | None = None  # index among the thread's turns (None: the previous one)
    mentions: list[str] = field(default_factory=list)


def _version(rng: random.Random) -> str:
    return f"{rng.randint(1, 5)}.{rng.randint(0, 9)}.{rng.randint(0, 12)}"


def _gap(rng: random.Random, text: str, language: str) -> float:
    """Seconds before a turn: mostly quick, sometimes minutes (a question answered 2-4 min later)."""
    roll = rng.random()
    if roll < 0.12:
        return rng.uniform(90, 300)
    if roll < 0.15:
        return rng.uniform(300, 1200)
    per_char = 0.4 if language == "zh" else 0.15
    return rng.uniform(4, 40) + per_char * len(text) * rng.uniform(0.3, 1.0)


def dialogue_turns(
    dialogue: Dialogue, people: tuple[str, str], staff: bool, phrases: int, rng: random.Random
) -> list[tuple[str, str, float, bool, int]]:
    """One dialogue's turns with inserted short turns: (sender, text, gap before, addressed, request)."""
    table = PHRASES[dialogue.language]

    def pick(kind: str) -> str:
        return rng.choice(table[kind][phrases])

    opener, other = people
    out: list[tuple[str, str, float, bool, int]] = []
    bystander_slot = rng.random() < 0.25
    request = 0
    for number, (role, text) in enumerate(dialogue.turns):
        request += number in dialogue.cuts
        sender = opener if role == 0 else other
        gap = _gap(rng, text, dialogue.language) if number else 0.0
        addressed = False
        if role == 1 and staff and number > 0:
            roll = rng.random()
            if number == 1 and roll < 0.35:  # clarifying question right after the report
                question, answers = rng.choice(table["clarify"][phrases])
                out.append((other, question, gap, False, request))
                answer = rng.choice(answers).format(v=_version(rng))
                out.append((opener, answer, rng.uniform(8, 200), False, request))
                gap = _gap(rng, text, dialogue.language)
            elif roll < 0.22:  # "let me check", a long pause, the conclusion
                out.append((other, pick("wait"), gap, False, request))
                gap = rng.uniform(240, 1700)
                if rng.random() < 0.5:
                    text = pick("conclusion") + text
                addressed = rng.random() < 0.6
            else:
                addressed = rng.random() < 0.15
        out.append((sender, text, gap, addressed, request))
        if number == 0 and staff and bystander_slot and rng.random() < 0.5:  # "+1" before anyone answers
            out.append(("<bystander>", pick("same"), rng.uniform(10, 240), False, request))
        if role == 1 and rng.random() < 0.12:
            out.append((opener, pick("ack"), rng.uniform(5, 120), False, request))
    if staff and rng.random() < 0.4:
        out.append((opener, pick("confirm"), rng.uniform(20, 600), False, request))
        if bystander_slot:
            out.append(("<bystander>", pick("me_too"), rng.uniform(10, 300), False, request))
        if rng.random() < 0.4:
            out.append((other, pick("close"), rng.uniform(5, 90), False, request))
    return out


def make_chat(
    ref: str, dialogues: list[Dialogue], language: str, phrases: int, rng: random.Random
) -> tuple[list[dict], dict[str, str], dict]:
    """Messages, display names and gold of one chat."""
    names = list(ZH_NAMES if language == "zh" else EN_NAMES)
    rng.shuffle(names)
    staff_names = list(ZH_STAFF if language == "zh" else EN_STAFF)
    rng.shuffle(staff_names)
    staff_accounts = staff_names[: rng.choice((1, 1, 2))]
    shared_staff = rng.random() < 0.8
    density = rng.choice(("sequential", "overlap", "overlap", "busy"))
    display: dict[str, str] = {}
    turns: list[Turn] = []
    start = 0.0
    for number, dialogue in enumerate(dialogues):
        staff = dialogue.kind == "service"
        if dialogue.names is not None:
            people = dialogue.names
        elif staff and shared_staff:
            people = (names.pop(), staff_accounts[number % len(staff_accounts)])
        else:
            people = (names.pop(), names.pop())
        if density == "sequential":
            start = start + rng.uniform(0, 3600) if number else 0.0
        elif density == "overlap":
            start = number * rng.uniform(60, 600)
        else:
            start = rng.uniform(0, 240) * number
        at = start
        bystander = names[-1] if names else people[0]
        thread_turns = dialogue_turns(dialogue, people, staff, phrases, rng)
        for sender, text, gap, addressed, request in thread_turns:
            sender = bystander if sender == "<bystander>" else sender
            at += gap
            target = people[0] if sender != people[0] else people[1]
            mention = []
            if addressed:
                text = f"@{target} {text}"
                mention = [target]
            turns.append(Turn(number * 100 + request, sender, text, at, mentions=mention))
        for person in (*people, bystander):
            display[person] = person
    # Greetings and stickers nobody answers: threads of their own between the reports.
    people_now = sorted(display)
    end = max((turn.at for turn in turns), default=0.0)
    for extra in range(rng.choice((0, 0, 1, 2, 3))):
        turns.append(
            Turn(
                10_000 + extra,
                rng.choice(people_now),
                rng.choice(PHRASES[language]["chatter"][phrases]),
                rng.uniform(0, end),
            )
        )
    turns.sort(key=lambda turn: (turn.at, turn.thread))
    base = datetime(2026, 4, 6, 9, 0, tzinfo=timezone(timedelta(hours=8 if language == "zh" else 0)))
    base += timedelta(days=rng.randint(0, 60))
    refs = {name: f"{'u' if language == 'zh' else 'p'}{index}" for index, name in enumerate(sorted(display))}
    messages, threads, links = [], {}, []
    last_of: dict[int, str] = {}
    for index, turn in enumerate(turns):
        message_id = f"{ref}:{index}"
        messages.append(
            {
                "messageId": message_id,
                "conversationRef": ref,
                "senderRef": refs[turn.sender],
                "sentAt": (base + timedelta(seconds=round(turn.at))).isoformat(),
                "type": "image" if turn.text.startswith("[im") or turn.text.startswith("[图片]") else "text",
                "text": turn.text,
                **({"mentionedRefs": [refs[name] for name in turn.mentions]} if turn.mentions else {}),
            }
        )
        threads.setdefault(turn.thread, []).append(message_id)
        links.append([message_id, last_of.get(turn.thread, message_id)])
        last_of[turn.thread] = message_id
    gold = {
        "file": ref,
        "annotated_ids": [m["messageId"] for m in messages],
        "threads": list(threads.values()),
        "links": links,
        "links_source": "previous turn of the same source dialogue",
        "sources": [d.key for d in dialogues],
    }
    return messages, {refs[name]: name for name in display}, gold


def chats(dialogues: list[Dialogue], language: str, part: str, copies: int, rng: random.Random) -> list[list[Dialogue]]:
    """Groups of 1-6 dialogues; LoCoMo sessions of one conversation never share a chat (same two people)."""
    groups: list[list[Dialogue]] = []
    for _ in range(copies):
        pool = list(dialogues)
        rng.shuffle(pool)
        while pool:
            size = rng.choice((1, 2, 2, 3, 3, 4, 5, 6))
            group: list[Dialogue] = []
            seen: set[tuple[str, str] | None] = set()
            for dialogue in list(pool):
                if len(group) == size:
                    break
                if dialogue.names is not None and dialogue.names in seen:
                    continue
                seen.add(dialogue.names)
                group.append(dialogue)
                pool.remove(dialogue)
            groups.append(group)
    return groups


def write_part(out: Path, name: str, groups: list[list[Dialogue]], language: str, phrases: int, rng) -> int:
    bundle = out / name / "bundle"
    gold_dir = out / name / "gold"
    bundle.mkdir(parents=True, exist_ok=True)
    gold_dir.mkdir(parents=True, exist_ok=True)
    all_messages, members, conversations = [], {}, []
    for number, group in enumerate(groups):
        ref = f"sg-{name}-{number:04d}"
        messages, display, gold = make_chat(ref, group, language, phrases, rng)
        # Sender refs are per chat; prefix them so one bundle never merges two chats' people.
        for message in messages:
            message["senderRef"] = f"{ref}/{message['senderRef']}"
            if "mentionedRefs" in message:
                message["mentionedRefs"] = [f"{ref}/{r}" for r in message["mentionedRefs"]]
        members.update({f"{ref}/{r}": n for r, n in display.items()})
        all_messages += messages
        conversations.append({"conversationRef": ref, "title": f"synthetic small group {ref}", "kind": "group"})
        (gold_dir / f"{ref}.gold.json").write_text(json.dumps(gold, ensure_ascii=False), encoding="utf-8")
    lines = [json.dumps(m, ensure_ascii=False) for m in all_messages]
    (bundle / "messages.jsonl").write_text("\n".join(lines) + "\n", encoding="utf-8")
    (bundle / "conversations.jsonl").write_text(
        "\n".join(json.dumps(c, ensure_ascii=False) for c in conversations) + "\n", encoding="utf-8"
    )
    (bundle / "members.jsonl").write_text(
        "\n".join(json.dumps({"senderRef": r, "displayName": n}, ensure_ascii=False) for r, n in members.items())
        + "\n",
        encoding="utf-8",
    )
    return len(all_messages)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--out", type=Path, default=OUT)
    parser.add_argument("--seed", type=int, default=13)
    parser.add_argument("--train-copies", type=int, default=2, help="interleavings of each train dialogue")
    parser.add_argument("--longmemeval", type=int, default=900, help="LongMemEval sessions used")
    args = parser.parse_args()
    parts = mix_parts()
    sources = {"zh": crosswoz(), "en": locomo() + longmemeval(args.longmemeval)}
    for language, dialogues in sources.items():
        for part in PARTS:
            chosen = [d for d in dialogues if parts.get(d.key, part_of(d.key)) == part]
            # Separate generators per (language, part): a part's chats do not depend on the others.
            rng = random.Random(f"{args.seed}/{language}/{part}")
            groups = chats(chosen, language, part, args.train_copies if part == "train" else 1, rng)
            count = write_part(args.out, f"{language}-{part}", groups, language, 1 if part == "heldout" else 0, rng)
            print(f"{language}-{part}: {len(chosen)} dialogues, {len(groups)} chats, {count} messages")


if __name__ == "__main__":
    main()
