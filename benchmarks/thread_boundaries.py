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
them, scored with the official `score_threads.py` (VI, 1-1, exact P/R/F, link F). Speeds include
reading the bundle: messages per wall-clock second and per CPU second of this process (run
under `taskset -c 0` the two agree on an idle machine; on a shared one the CPU figure is the fair one).
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import sys
import time
from dataclasses import dataclass
from pathlib import Path

import hand_chats
from small_groups import BENCH, OUT, part_of
from threadkeep.api import threads_of
from threadkeep.model import Thread
from threadkeep.threads import ThreadSettings
from threadkeep.threads import learned as L

ROOT = Path(__file__).resolve().parents[1]
SAMPLE = ROOT / "src" / "threadkeep" / "samples" / "support_group"
METRICS = ("VI", "1-1", "exact_P", "exact_R", "exact_F", "link_F")


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


def predict(bundle: Path, assigner: str, resume: bool = True) -> tuple[int, list[Thread], float, float]:
    """Messages read, threads, wall-clock and CPU seconds (the CPU figure holds on a loaded machine)."""
    started, cpu = time.perf_counter(), time.process_time()
    result, threads = threads_of(bundle, None, ThreadSettings(assigner=assigner, resume_paused=resume))
    return len(result.messages), threads, time.perf_counter() - started, time.process_time() - cpu


def figures(score_threads, corpus: Corpus, threads: list[Thread]) -> dict:
    labels: dict[str, tuple] = {}
    links: dict[str, list[str]] = {}
    for number, thread in enumerate(threads):
        for message_id in thread.message_ids:
            labels[message_id] = ("L", str(number))
            links[message_id] = [thread.reply_to.get(message_id, message_id)]
    return score_threads.score(corpus.gold, labels, links)


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
    print(f"{'corpus':<15} {'use':<9} {'assigner':<8} " + " ".join(f"{m:>8}" for m in METRICS) + "    msg/s  msg/cpu-s")
    for corpus in corpora(args.synthetic):
        if chosen and corpus.name not in chosen:
            continue
        for assigner in args.assigners.split(","):
            count, threads, elapsed, cpu = predict(corpus.bundle, assigner, not args.no_resume)
            result = figures(score_threads, corpus, threads)
            row = " ".join(f"{result[m]:8.1f}" if m in result else f"{'':>8}" for m in METRICS)
            speed = f"{count / elapsed:8,.0f} {count / cpu:10,.0f}"
            print(f"{corpus.name:<15} {corpus.use:<9} {assigner:<8} {row} {speed}", flush=True)
            if args.per_chat and corpus.use != "held-out" and len(corpus.gold) > 1:
                for name in sorted(corpus.gold):
                    part = Corpus(name, corpus.use, corpus.bundle, {name: corpus.gold[name]})
                    result = figures(score_threads, part, threads)
                    row = " ".join(f"{result[m]:8.1f}" if m in result else f"{'':>8}" for m in METRICS)
                    print(f"  {name[:31]:<31} {row}", flush=True)
    if not args.synthetic.is_dir():
        print(f"(no synthetic chats in {args.synthetic}: run benchmarks/small_groups.py)", file=sys.stderr)


if __name__ == "__main__":
    main()
