"""Where to put the relevance threshold that decides `no_answer`.

    python benchmarks/refusal_threshold.py

Answerable questions: the sample corpus' questions with a gold thread. Unanswerable:
its questions marked unanswerable, plus the LoCoMo questions (about two people's private
lives) asked of the sample store, which cannot answer them. For each question the best
cosine similarity among the retrieved chunks is the score; the script prints both
distributions and the threshold with the best balanced accuracy.
"""

from __future__ import annotations

import json
import shutil
import tempfile
from datetime import UTC, datetime
from pathlib import Path

from threadkeep.api import KnowledgeBase

ROOT = Path(__file__).resolve().parents[1]
SAMPLES = ROOT / "src" / "threadkeep" / "samples"
LOCOMO = ROOT.parent / "shared" / "bench" / "locomo" / "queries.jsonl"
NOW = datetime(2026, 5, 18, tzinfo=UTC)


def best_similarity(kb: KnowledgeBase, question: str) -> float:
    scores = [hit.dense_score for hit in kb.search(question, k=10, now=NOW) if hit.dense_score is not None]
    return max(scores, default=0.0)


def main() -> None:
    questions = json.loads((SAMPLES / "support_group" / "questions.json").read_text(encoding="utf-8"))
    off_topic = [json.loads(line)["question"] for line in LOCOMO.open(encoding="utf-8")][::4]
    with tempfile.TemporaryDirectory() as folder:
        shutil.copytree(SAMPLES / "docs", Path(folder) / "docs")
        with KnowledgeBase.open(Path(folder) / "kb.db") as kb:
            kb.ingest(SAMPLES / "support_group")
            kb.ingest(Path(folder) / "docs")
            positive = [best_similarity(kb, q["question"]) for q in questions if q["thread"]]
            negative = [best_similarity(kb, q["question"]) for q in questions if not q["thread"]]
            negative += [best_similarity(kb, question) for question in off_topic]
    print(f"answerable   n={len(positive):3d}  min {min(positive):.3f}  max {max(positive):.3f}")
    print(f"unanswerable n={len(negative):3d}  min {min(negative):.3f}  max {max(negative):.3f}")

    def balanced_accuracy(threshold: float) -> float:
        return sum(p >= threshold for p in positive) / len(positive) + sum(n < threshold for n in negative) / len(
            negative
        )

    candidates = sorted({round(score, 3) for score in positive + negative})
    top = max(balanced_accuracy(t) for t in candidates)
    best = [t for t in candidates if balanced_accuracy(t) == top]
    # The middle of the best range leaves the same margin on both sides.
    middle = (best[0] + max(n for n in negative if n < best[0])) / 2 if best[0] > min(negative) else best[0]
    recall = sum(p >= middle for p in positive) / len(positive)
    rejection = sum(n < middle for n in negative) / len(negative)
    print(f"threshold {middle:.3f}: answers {recall:.1%} of answerable, refuses {rejection:.1%} of unanswerable")
    for threshold in (0.87, 0.875, 0.88, 0.885, 0.89, 0.895):
        recall = sum(p >= threshold for p in positive) / len(positive)
        rejection = sum(n < threshold for n in negative) / len(negative)
        print(f"  threshold {threshold:.3f}: answers {recall:.1%}, refuses {rejection:.1%}")


if __name__ == "__main__":
    main()
