"""Resolution states (resolved / workaround / open) against hand labels, per corpus.

    python benchmarks/resolution.py                  # the sample and the tuning parts
    python benchmarks/resolution.py --predicted      # also on predicted threads (majority overlap)
    python benchmarks/resolution.py --heldout        # adds the held-out chats: run once, at the end

Corpora: `sample` (the shipped support group, labels in its gold.json); `tune-zh` / `tune-en`
(the dev parts of `benchmarks/data/hand_chats` and all of `hand_chats_dev2` and
`hand_chats_dev3`); with `--heldout`, `heldout-zh` / `heldout-en` (the heldout parts of
`hand_chats`), `lead-zh` / `lead-en` (`hand_chats_lead`) and `lead2-zh` / `lead2-en`
(`hand_chats_lead2`). The hand chats' labels are in `benchmarks/data/resolution_labels.json`
(its `_notes` give the conventions); threads labelled
`none` (asking nothing: greetings, banter, announcements) are counted apart, not scored.

Each gold thread of two or more messages is classified on its own (gold boundaries), so the
figure measures the classifier, not thread reconstruction. With `--predicted`, each labelled gold
thread is also scored on the predicted thread that holds most of its messages.
"""

from __future__ import annotations

import argparse
import json
import sys
from collections import Counter, defaultdict
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

from threadkeep.model import Message
from threadkeep.readers import read_path
from threadkeep.readers.bundle import parse_message
from threadkeep.threads import reconstruct
from threadkeep.threads.resolution import resolution_state

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "benchmarks"))
from hand_chats import parse  # noqa: E402

SAMPLE = ROOT / "src" / "threadkeep" / "samples" / "support_group"
DATA = ROOT / "benchmarks" / "data"
LABELS = DATA / "resolution_labels.json"
STATES = ("resolved", "workaround", "open")
TUNE_FOLDERS = ("hand_chats", "hand_chats_dev2", "hand_chats_dev3")
HELDOUT_FOLDERS = {"hand_chats": "heldout", "hand_chats_lead": "lead", "hand_chats_lead2": "lead2"}


@dataclass
class Corpus:
    name: str
    messages: list[Message]  # every message, in time order per conversation
    gold: list[tuple[list[str], str]]  # (gold thread's message ids, label)


def _sample() -> Corpus:
    messages = read_path(SAMPLE).messages
    gold = json.loads((SAMPLE / "gold.json").read_text(encoding="utf-8"))
    states = gold["resolution"]
    labelled = [(thread, states[thread[0]]) for thread in gold["threads"] if thread[0] in states]
    return Corpus("sample", list(messages), labelled)


def _chat_corpora(heldout: bool) -> Iterator[Corpus]:
    labels = json.loads(LABELS.read_text(encoding="utf-8"))
    corpora: dict[str, Corpus] = {}
    folders = dict.fromkeys((*TUNE_FOLDERS, *(HELDOUT_FOLDERS if heldout else ())))  # hand_chats holds both parts
    for folder in folders:
        for path in sorted((DATA / folder).glob("*.chat")):
            chat = parse(path)
            part = "tune" if chat.split == "dev" else HELDOUT_FOLDERS[folder]
            if part != "tune" and not heldout:
                continue
            language = path.stem.split("-")[0]
            corpus = corpora.setdefault(f"{part}-{language}", Corpus(f"{part}-{language}", [], []))
            corpus.messages.extend(parse_message(raw, chat.members) for raw in chat.messages)
            threads: dict[str, list[str]] = defaultdict(list)
            for raw, letter in zip(chat.messages, chat.labels, strict=True):
                threads[letter].append(raw["messageId"])
            for letter, state in labels[f"{folder}/{path.name}"].items():
                corpus.gold.append((threads[letter], state))
    order = ["tune-zh", "tune-en", *(f"{part}-{lang}" for part in HELDOUT_FOLDERS.values() for lang in ("zh", "en"))]
    yield from (corpora[name] for name in order if name in corpora)


def _report(name: str, confusion: Counter[tuple[str, str]], unscored: Counter[str]) -> None:
    total = sum(confusion.values())
    correct = sum(count for (truth, guess), count in confusion.items() if truth == guess)
    print(f"{name}: accuracy {correct / total:.3f} ({correct}/{total})", end="")
    print(f"; unscored 'none' threads: {dict(unscored)}" if unscored else "")
    print("  gold \\ predicted  " + "  ".join(f"{state:>10}" for state in STATES))
    for truth in STATES:
        print(f"  {truth:>16}  " + "  ".join(f"{confusion[(truth, guess)]:>10}" for guess in STATES))


def score(corpus: Corpus, predicted: bool) -> None:
    by_id = {message.id: message for message in corpus.messages}
    confusion: Counter[tuple[str, str]] = Counter()
    unscored: Counter[str] = Counter()
    for thread, label in corpus.gold:
        guess = resolution_state([by_id[mid] for mid in thread])
        if label == "none":
            unscored[guess] += 1
        else:
            confusion[(label, guess)] += 1
    _report(f"{corpus.name} (gold threads)", confusion, unscored)
    if not predicted:
        return
    home = {mid: thread.message_ids for thread in reconstruct(corpus.messages) for mid in thread.message_ids}
    confusion = Counter()
    for thread, label in corpus.gold:
        if label == "none":
            continue
        votes = Counter(home[mid] for mid in thread)
        best = max(votes, key=votes.__getitem__)  # a tie goes to the thread of the earliest message
        confusion[(label, resolution_state([by_id[mid] for mid in best]))] += 1
    _report(f"{corpus.name} (predicted threads, majority overlap)", confusion, Counter())


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--predicted", action="store_true", help="also score on predicted threads")
    parser.add_argument("--heldout", action="store_true", help="add the held-out chats (run once, at the end)")
    args = parser.parse_args()
    score(_sample(), args.predicted)
    for corpus in _chat_corpora(args.heldout):
        score(corpus, args.predicted)


if __name__ == "__main__":
    main()
