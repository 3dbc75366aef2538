"""Thread-boundary figures: the labelled sample corpus and IRC disentanglement (dev by default).

    python benchmarks/thread_boundaries.py                 # sample + ../shared/bench/irc/dev
    python benchmarks/thread_boundaries.py --split train
    python benchmarks/thread_boundaries.py --model /tmp/reply_model.json   # a freshly trained model

Prints the official metrics from `score_threads.py` (VI, 1-1, exact P/R/F, link P/R/F)
for the learned assigner (the default) and the rule-based fallback side by side, and
each one's speed in messages per second.
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from threadkeep.api import threads_of
from threadkeep.model import ReadResult, Thread
from threadkeep.readers import read_path
from threadkeep.threads import ThreadSettings
from threadkeep.threads.mentions import NameIndex

ROOT = Path(__file__).resolve().parents[1]
SHARED = ROOT.parent / "shared"
SAMPLE = ROOT / "src" / "threadkeep" / "samples" / "support_group"
SCORER = SHARED / "bench" / "tools" / "score_threads.py"
METRICS = ["VI", "ARI", "1-1", "exact_P", "exact_R", "exact_F", "link_P", "link_R", "link_F"]


def write_prediction(threads: list[Thread], path: Path) -> None:
    with path.open("w", encoding="utf-8") as out:
        for number, thread in enumerate(threads):
            for message_id in thread.message_ids:
                out.write(
                    json.dumps(
                        {"id": message_id, "thread": number, "reply_to": thread.reply_to.get(message_id, message_id)}
                    )
                    + "\n"
                )


def score(gold: Path, prediction: Path) -> dict:
    result = subprocess.run(
        [sys.executable, str(SCORER), str(gold), "--pred", str(prediction), "--json"],
        capture_output=True,
        text=True,
        check=True,
    )
    return json.loads(result.stdout)


def sample_gold(folder: Path, target: Path) -> Path:
    """The sample's gold.json in the scorer's per-file gold format."""
    target.mkdir(parents=True, exist_ok=True)
    gold = json.loads((folder / "gold.json").read_text(encoding="utf-8"))
    by_file: dict[str, list[list[str]]] = {}
    for thread in gold["threads"]:
        by_file.setdefault(thread[0].rpartition(":")[0], []).append(thread)
    for name, threads in by_file.items():
        ids = [mid for thread in threads for mid in thread]
        links = [[mid, thread[max(i - 1, 0)]] for thread in threads for i, mid in enumerate(thread)]
        record = {"file": name, "annotated_ids": ids, "threads": threads, "links": links}
        (target / f"{name}.gold.json").write_text(json.dumps(record, ensure_ascii=False), encoding="utf-8")
    return target


def learned_threads_of(bundle: Path, model_path: Path) -> tuple[ReadResult, list[Thread]]:
    """Like `threads_of`, with a reply model from a file (system lines stand alone)."""
    from threadkeep.threads.learned import ReplyModel, assign_learned

    model = ReplyModel.load(model_path)
    settings = ThreadSettings()
    result = read_path(bundle)
    by_conversation: dict[str, list] = {}
    for message in result.messages:
        by_conversation.setdefault(message.conversation, []).append(message)
    threads: list[Thread] = []
    for ref, messages in by_conversation.items():
        free = [message for message in messages if not message.is_system]
        threads += [Thread(ref, (message.id,)) for message in messages if message.is_system]
        groups, links = assign_learned(free, NameIndex(messages), settings, model)
        threads += [Thread(ref, tuple(group), {m: links[m] for m in group if m in links}) for group in groups]
    return result, threads


def run(name: str, bundle: Path, gold: Path, work: Path, assigner: str, model: Path | None = None) -> None:
    started = time.perf_counter()
    if assigner == "learned" and model is not None:
        result, threads = learned_threads_of(bundle, model)
    else:
        result, threads = threads_of(bundle, None, ThreadSettings(assigner=assigner))
    elapsed = time.perf_counter() - started
    prediction = work / f"{name}-{assigner}.jsonl"
    write_prediction(threads, prediction)
    figures = score(gold, prediction)
    row = "  ".join(f"{metric} {figures[metric]:.1f}" for metric in METRICS if metric in figures)
    label = "rules " if assigner == "rules" else "learned"
    print(
        f"{name:<12} {label}  {row}  ({len(result.messages):,} messages, {len(result.messages) / elapsed:,.0f} msg/s "
        f"incl. reading)"
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--split", default="dev", choices=["dev", "train"])
    parser.add_argument("--model", type=Path, help="a reply model file other than the packaged one")
    args = parser.parse_args()
    assigners = ["learned", "rules"]
    with tempfile.TemporaryDirectory() as folder:
        work = Path(folder)
        if (SAMPLE / "gold.json").exists():
            gold = sample_gold(SAMPLE, work / "sample-gold")
            for assigner in assigners:
                run("sample", SAMPLE, gold, work, assigner, args.model)
        irc = SHARED / "bench" / "irc" / args.split
        for assigner in assigners:
            run(f"irc-{args.split}", irc / "bundle", irc / "gold", work, assigner, args.model)


if __name__ == "__main__":
    main()
