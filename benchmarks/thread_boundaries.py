"""Thread-boundary figures on every labelled corpus, learned model and rules side by side.

    python benchmarks/small_groups.py                      # once: the synthetic small-group chats
    taskset -c 0 python benchmarks/thread_boundaries.py    # every corpus, one core
    python benchmarks/thread_boundaries.py --only irc-dev,sample --model /tmp/reply_model.json

Corpora (`use` says what each may be used for):
- irc-dev: Ubuntu IRC disentanglement dev (model selection);
- gitter-dev: Gitter rooms with their whole log as context; gitter-manual: the annotated
  dialogues only (selection; their links are derived, not annotated);
- zh-mix-dev / zh-mix-heldout: the `zh-crosswoz-mix` dev chats in the dev / held-out part of
  `small_groups.part_of` (its train part is training data);
- sg-zh-dev, sg-en-dev / sg-zh-heldout, sg-en-heldout: synthetic small groups
  (`benchmarks/small_groups.py`), dev / held-out parts;
- hand-zh-dev, hand-en-dev / hand-zh-heldout, hand-en-heldout: the hand-written, hand-labelled
  small group chats of `benchmarks/data/hand_chats` (`benchmarks/hand_chats.py`), dev / held-out;
- hand2-zh-dev, hand2-en-dev: the second, harder set of hand-written dev chats
  (`benchmarks/data/hand_chats_dev2`, all dev);
- hand3-zh-dev, hand3-en-dev: the third set of hand-written dev chats
  (`benchmarks/data/hand_chats_dev3`, all dev);
- train1-zh, train1-en, train2-…, …, train6-…: the hand-written training sets
  (`benchmarks/data/hand_chats_train*`), trained on only by `train_reply_model.py --hand-train`;
- lead-zh, lead-en, lead2-…, …, lead12-…: the lead's held-out sets of hand-written chats
  (`benchmarks/data/hand_chats_lead*`, every chat held out: totals only, nothing chosen on them);
- sample: the Chinese support group shipped in the package (a check, looked at while building
  the features; no parameter is fitted on it).

Threads come from `threadkeep.api.threads_of`, as `threadkeep threads EXPORT --jsonl` prints
them, scored with the official `score_threads.py` (VI, 1-1, exact P/R/F, link F), and two figures of issue
13's goals for small chats: `q_a`, the share of questions (a line with a question mark) whose answer (the next line
of its gold thread by someone else, at most 5 minutes later) is in the question's thread; `confirm`, the share of
confirmations and thanks (a short line of its own word list, not the gold thread's first) in the thread of the
line they answer (the gold thread's line before, by someone else). Both word lists are this file's, not the
product's cues, so the figures do not share the model's blind spots. Speeds include
reading the bundle: messages per wall-clock second and per CPU second of this process (run
under `taskset -c 0` the two agree on an idle machine; on a shared one the CPU figure is the fair one).
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import re
import sys
import time
from collections.abc import Sequence
from dataclasses import dataclass, replace
from datetime import timedelta
from pathlib import Path

import hand_chats
from small_groups import BENCH, OUT, part_of
from threadkeep.api import threads_of
from threadkeep.model import Message, Thread
from threadkeep.threads import ThreadSettings
from threadkeep.threads import learned as L

ROOT = Path(__file__).resolve().parents[1]
SAMPLE = ROOT / "src" / "threadkeep" / "samples" / "support_group"
METRICS = ("VI", "1-1", "exact_P", "exact_R", "exact_F", "link_F", "q_a", "confirm")
ANSWER_WITHIN = timedelta(minutes=5)
_CONFIRMS = re.compile(
    r"\b(?:works?|worked|working now|fixed|that did it|it's back|is back|solved|perfect|thanks|thank you|thx|ty)\b"
    r"|好了|可以了|解决了|搞定|成功了|谢谢|多谢|感谢|行了|正常了",
    re.IGNORECASE,
)
CONFIRM_CHARS = 60


def scorer():
    spec = importlib.util.spec_from_file_location("score_threads", BENCH / "tools" / "score_threads.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


@dataclass(frozen=True)
class Corpus:
    name: str
    use: str
    bundle: Path
    gold: dict  # file -> gold record (the scorer's format)


def gold_of(folder: Path, keep=lambda name: True) -> dict:
    out = {}
    for path in sorted(folder.glob("*.gold.json")):
        record = json.loads(path.read_text(encoding="utf-8"))
        if keep(record["file"]):
            out[record["file"]] = record
    return out


def sample_gold(folder: Path) -> dict:
    """The sample's gold.json in the scorer's per-file format."""
    gold = json.loads((folder / "gold.json").read_text(encoding="utf-8"))
    by_file: dict[str, list[list[str]]] = {}
    for thread in gold["threads"]:
        by_file.setdefault(thread[0].rpartition(":")[0], []).append(thread)
    out = {}
    for name, threads in by_file.items():
        ids = [mid for thread in threads for mid in thread]
        links = [[mid, thread[max(i - 1, 0)]] for thread in threads for i, mid in enumerate(thread)]
        out[name] = {"file": name, "annotated_ids": ids, "threads": threads, "links": links}
    return out


def by_language(name: str, use: str, folder: Path) -> list[Corpus]:
    """One corpus per language of a written hand-chat part (`name` has a {} for the language)."""
    out = []
    for language in ("zh", "en"):
        gold = gold_of(folder / "gold", lambda f, lang=language: f.startswith(lang + "-"))
        out.append(Corpus(name.format(language), use, folder / "bundle", gold))
    return out


def corpora(synthetic: Path) -> list[Corpus]:
    mix = BENCH / "zh-crosswoz-mix" / "dev"
    out = [
        Corpus("irc-dev", "dev", BENCH / "irc" / "dev" / "bundle", gold_of(BENCH / "irc" / "dev" / "gold")),
        Corpus("gitter-dev", "dev", BENCH / "gitter" / "dev" / "bundle", gold_of(BENCH / "gitter" / "dev" / "gold")),
        Corpus(
            "gitter-manual",
            "dev",
            BENCH / "gitter-manual" / "dev" / "bundle",
            gold_of(BENCH / "gitter-manual" / "dev" / "gold"),
        ),
        Corpus("zh-mix-dev", "dev", mix / "bundle", gold_of(mix / "gold", lambda f: part_of(f) == "dev")),
        Corpus("zh-mix-heldout", "held-out", mix / "bundle", gold_of(mix / "gold", lambda f: part_of(f) == "heldout")),
    ]
    for part, use in (("dev", "dev"), ("heldout", "held-out")):
        for language in ("zh", "en"):
            folder = synthetic / f"{language}-{part}"
            if folder.is_dir():
                out.append(Corpus(f"sg-{language}-{part}", use, folder / "bundle", gold_of(folder / "gold")))
    first = hand_chats.build("hand_chats")
    for part, use in (("dev", "dev"), ("heldout", "held-out")):
        out += by_language(f"hand-{{}}-{part}", use, first / part)
    # The second and third dev sets (benchmarks/data/hand_chats_dev2, _dev3): dev chats only.
    for number in (2, 3):
        out += by_language(f"hand{number}-{{}}-dev", "dev", hand_chats.build(f"hand_chats_dev{number}") / "dev")
    # The hand-written training sets (`train_reply_model.py --hand-train`) and the lead's held-out
    # sets (every chat held out: totals only), benchmarks/data/hand_chats_train*, _lead*.
    for pattern, use, part in (("train", "train", "dev"), ("lead", "held-out", "heldout")):
        for data in sorted(hand_chats.DATA.parent.glob(f"hand_chats_{pattern}*")):
            name = data.name.removeprefix("hand_chats_")
            out += by_language(f"{name}-{{}}", use, hand_chats.build(data.name) / part)
    if (SAMPLE / "gold.json").exists():
        out.append(Corpus("sample", "check", SAMPLE, sample_gold(SAMPLE)))
    return out


def predict(
    bundle: Path, assigner: str, resume: bool = True, base: ThreadSettings | None = None
) -> tuple[list[Message], list[Thread], float, float]:
    """Messages read, threads, wall-clock and CPU seconds (the CPU figure holds on a loaded machine);
    `base` gives the settings other than the assigner and resume (default: the product's)."""
    started, cpu = time.perf_counter(), time.process_time()
    settings = replace(base or ThreadSettings(), assigner=assigner, resume_paused=resume)
    result, threads = threads_of(bundle, None, settings)
    return result.messages, threads, time.perf_counter() - started, time.process_time() - cpu


def small_chat_pairs(gold: dict, messages: Sequence[Message]) -> tuple[list[tuple[str, str]], list[tuple[str, str]]]:
    """(question, answer) and (line, confirmation) pairs of the gold threads (see the module's docstring)."""
    by_id = {message.id: message for message in messages}
    answers, confirmations = [], []
    for record in gold.values():
        for thread in record["threads"]:
            said = [by_id[mid] for mid in thread if mid in by_id]
            said.sort(key=lambda message: message.sent_at)
            for i, message in enumerate(said):
                later = [other for other in said[i + 1 :] if other.sender != message.sender]
                asks = "?" in message.text or "？" in message.text
                if asks and later and later[0].sent_at - message.sent_at <= ANSWER_WITHIN:
                    answers.append((message.id, later[0].id))
                earlier = [other for other in said[:i] if other.sender != message.sender]
                if earlier and len(message.text) <= CONFIRM_CHARS and _CONFIRMS.search(message.text):
                    confirmations.append((earlier[-1].id, message.id))
    return answers, confirmations


def figures(score_threads, corpus: Corpus, threads: list[Thread], messages: Sequence[Message]) -> dict:
    labels: dict[str, tuple] = {}
    links: dict[str, list[str]] = {}
    for number, thread in enumerate(threads):
        for message_id in thread.message_ids:
            labels[message_id] = ("L", str(number))
            links[message_id] = [thread.reply_to.get(message_id, message_id)]
    result = score_threads.score(corpus.gold, labels, links)
    for name, pairs in zip(("q_a", "confirm"), small_chat_pairs(corpus.gold, messages), strict=True):
        joined = sum(labels.get(a) is not None and labels.get(a) == labels.get(b) for a, b in pairs)
        result[f"{name}_pairs"] = (joined, len(pairs))
        if pairs:
            result[name] = 100.0 * joined / len(pairs)
    return result


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--model", type=Path, help="a reply model file other than the packaged one")
    parser.add_argument("--synthetic", type=Path, default=OUT, help="output of benchmarks/small_groups.py")
    parser.add_argument("--only", default="", help="comma-separated corpus names")
    parser.add_argument("--assigners", default="learned,rules")
    parser.add_argument("--no-resume", action="store_true", help="without threads/resume.py's merges")
    parser.add_argument(
        "--per-chat", action="store_true", help="also each chat of the dev and check corpora (held-out: totals only)"
    )
    args = parser.parse_args()
    if args.model is not None:
        L._model = L.ReplyModel.load(args.model)
    score_threads = scorer()
    chosen = [name for name in args.only.split(",") if name]
    pooled: dict[tuple[str, str, str, str], list[int]] = {}  # (use, language, assigner, figure) -> joined, pairs
    print(f"{'corpus':<15} {'use':<9} {'assigner':<8} " + " ".join(f"{m:>8}" for m in METRICS) + "    msg/s  msg/cpu-s")
    for corpus in corpora(args.synthetic):
        if chosen and corpus.name not in chosen:
            continue
        for assigner in args.assigners.split(","):
            messages, threads, elapsed, cpu = predict(corpus.bundle, assigner, not args.no_resume)
            count = len(messages)
            result = figures(score_threads, corpus, threads, messages)
            row = " ".join(f"{result[m]:8.1f}" if m in result else f"{'':>8}" for m in METRICS)
            speed = f"{count / elapsed:8,.0f} {count / cpu:10,.0f}"
            print(f"{corpus.name:<15} {corpus.use:<9} {assigner:<8} {row} {speed}", flush=True)
            written = corpus.name.startswith(("hand", "train", "lead", "sample"))
            language = "en" if corpus.name.endswith("-en") or "-en-" in corpus.name else "zh"
            for name in ("q_a", "confirm") if written else ():
                total = pooled.setdefault((corpus.use, language, assigner, name), [0, 0])
                total[0] += result[f"{name}_pairs"][0]
                total[1] += result[f"{name}_pairs"][1]
            if args.per_chat and corpus.use != "held-out" and len(corpus.gold) > 1:
                for name in sorted(corpus.gold):
                    part = Corpus(name, corpus.use, corpus.bundle, {name: corpus.gold[name]})
                    result = figures(score_threads, part, threads, messages)
                    row = " ".join(f"{result[m]:8.1f}" if m in result else f"{'':>8}" for m in METRICS)
                    print(f"  {name[:31]:<31} {row}", flush=True)
    print("\npairs joined, pooled over the hand-written chats of each use (IRC, Gitter and synthetic left out):")
    for (use, language, assigner, name), (joined, pairs) in sorted(pooled.items()):
        if pairs:
            share = f"{100 * joined / pairs:5.1f} %"
            print(f"  {use:<9} {language} {assigner:<8} {name:<8} {joined:>5} / {pairs:<5} {share}")
    if not args.synthetic.is_dir():
        print(f"(no synthetic chats in {args.synthetic}: run benchmarks/small_groups.py)", file=sys.stderr)


if __name__ == "__main__":
    main()
