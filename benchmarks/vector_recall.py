"""Recall of the embedded store's vector stages on real e5 vectors, beside the synthetic ones.

    nice -n 19 python benchmarks/vector_recall.py --embed 30000 --vectors /tmp/irc   # embed once (slow)
    nice -n 19 python benchmarks/vector_recall.py --embed 16000 --further 31000 --vectors /tmp/irc2
    python benchmarks/vector_recall.py --vectors /tmp/irc --more /tmp/irc2-passages.npy   # then measure

Passages are windows of 2 consecutive text messages of the IRC train split
(`../shared/bench/irc/train`, "sender: text" lines), a random sample of them;
queries are 200 first lines of other windows and the first 200 LoCoMo
questions, embedded as queries. `--embed N` embeds N passages (2,048 at a time,
saved as it goes, so a stopped run keeps what it made) into PREFIX-passages.npy
and the queries into PREFIX-queries.npy; with `--further F`, windows F to
F + N in file order instead (past those the sample is drawn from), and no
queries: such files are added with --more. Without --embed, the files are read
and measured.

For each vector set it prints where the true top 10 rank by Hamming distance
and by the signed-bit score (as a share of the vectors), and recall@10 /
recall@50 against exact search of: the store's stages as they are
(`VectorIndex.candidates`: Hamming distance, signed-bit score, int8, exact),
and Hamming distance straight to int8 (the stages before the signed-bit
score), both with the int8-only path for small stores switched off so the
bits always take part. The benchmark's synthetic vectors (`store_scale.py`) of
the same count are measured the same way, and 40-cluster ones with queries
drawn from other clusters in another subspace (as
`tests/contract/test_search_at_scale.py` draws them): queries unlike every
stored vector, so that many are nearly equally close, the hard case for sign
bits.
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path

import numpy as np

from threadkeep.store import vectors
from threadkeep.store.base import SearchFilters

BENCH = Path(__file__).resolve().parents[2] / "shared" / "bench"


def windows(limit: int, size: int = 2) -> list[str]:
    """The first `limit` windows of `size` text messages of one conversation, in file order."""
    found: list[str] = []
    window: list[str] = []
    conversation = None
    with open(BENCH / "irc" / "train" / "bundle" / "messages.jsonl", encoding="utf-8") as source:
        for line in source:
            message = json.loads(line)
            if message.get("type") != "text" or not message.get("text"):
                continue
            if message["conversationRef"] != conversation or len(window) == size:
                if window:
                    found.append("\n".join(window))
                window, conversation = [], message["conversationRef"]
            window.append(f"{message['senderRef']}: {message['text']}")
            if len(found) >= limit:
                break
    return found


def embed(count: int, prefix: str, further: int | None) -> None:
    from threadkeep.embed import E5Embedder

    model = E5Embedder()
    if further is not None:
        passages = windows(further + count)[further:]
    else:
        texts = windows(count + 300)
        order = np.random.default_rng(3).permutation(len(texts))
        passages = [texts[i] for i in order[:count]]
        lines = [texts[i].split("\n")[0].split(": ", 1)[-1] for i in order[count : count + 200]]
        with open(BENCH / "locomo" / "queries.jsonl", encoding="utf-8") as source:
            questions = [json.loads(line)["question"] for line in source][:200]
        np.save(f"{prefix}-queries.npy", np.vstack([model.embed_query(text) for text in lines + questions]))
    made = []
    for start in range(0, count, 2048):
        made.append(model.embed_passages(passages[start : start + 2048]))
        np.save(f"{prefix}-passages.npy", np.vstack(made))
        print(f"{start + len(made[-1]):,} passages embedded", flush=True)


def segment_of(matrix: np.ndarray) -> vectors.Segment:
    n = len(matrix)
    rows = vectors.Rows(np.arange(n, dtype=np.int64), np.zeros(n, np.uint8), ["all"] * n, np.zeros(n), matrix.copy())
    return vectors.build([rows], matrix.shape[1])


def hamming_to_int8(index: vectors.VectorIndex, query: np.ndarray, k: int) -> np.ndarray:
    """The stages before the signed-bit score: the bit_candidates(k) nearest by Hamming distance, int8."""
    segment = index.segment
    words = vectors.signs(query[None, :], segment.mean)[:, 0]
    near = np.sort(vectors._nearest(vectors.hamming(segment.bits, words), vectors.bit_candidates(k)))
    scores = (segment.codes[near].astype(np.float32) @ query) * segment.scales[near]
    return near[vectors._smallest(-scores, vectors.rescore_count(k))]


def measure(label: str, matrix: np.ndarray, queries: np.ndarray) -> None:
    segment = segment_of(matrix)
    index = vectors.VectorIndex(segment, 0)
    exact = queries @ matrix.T
    hamming_ranks, signed_ranks = [], []
    weights = np.zeros(segment.bits.shape[0] * 64, dtype=np.float32)
    for query, scores in zip(queries, exact, strict=True):
        top = np.argpartition(-scores, 10)[:10]
        distance = vectors.hamming(segment.bits, vectors.signs(query[None, :], segment.mean)[:, 0])
        weights[: len(query)] = (query - segment.mean) * index._spread
        signed = vectors.sign_scores(segment.bits, np.arange(len(matrix)), weights)
        hamming_ranks.append(max(int((distance < distance[i]).sum()) for i in top) / len(matrix))
        signed_ranks.append(max(int((signed > signed[i]).sum()) for i in top) / len(matrix))

    def share(ranks: list[float]) -> str:
        return f"p50 {100 * np.median(ranks):.1f} %, p95 {100 * np.percentile(ranks, 95):.1f} %"

    print(f"{label}, {len(matrix):,} vectors, {len(queries)} queries: worst of the true top 10 ranks "
          f"by Hamming distance {share(hamming_ranks)}, by signed-bit score {share(signed_ranks)} down")  # fmt: skip
    for name, stages in (("as the store searches", None), ("Hamming straight to int8", hamming_to_int8)):
        figures = []
        for k in (10, 50):
            recalls = []
            for query, scores in zip(queries, exact, strict=True):
                truth = set(np.argpartition(-scores, k)[:k].tolist())
                if stages is None:
                    candidates = np.array(index.candidates(query, k, SearchFilters()))
                else:
                    candidates = stages(index, query, k)
                found = candidates[np.argsort(-scores[candidates])[:k]]
                recalls.append(len(truth.intersection(found.tolist())) / k)
            figures.append(f"recall@{k} {np.mean(recalls):.4f} (worst query {min(recalls):.2f})")
        print(f"  {name:26s} " + ", ".join(figures))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--vectors", required=True, help="PREFIX of PREFIX-passages.npy and PREFIX-queries.npy")
    parser.add_argument("--more", nargs="*", default=[], help="more passage .npy files (other windows)")
    parser.add_argument("--embed", type=int, help="embed this many passages (and the queries)")
    parser.add_argument("--further", type=int, help="with --embed: the windows from this one on, no queries")
    args = parser.parse_args()
    if args.embed:
        embed(args.embed, args.vectors, args.further)
        return
    vectors.INT8_SCAN = 0  # the bit stages even where a store this small would score every int8 row
    matrix = np.vstack([np.load(f"{args.vectors}-passages.npy"), *(np.load(path) for path in args.more)])
    queries = np.load(f"{args.vectors}-queries.npy")
    measure("real e5, IRC lines as queries", matrix, queries[:200])
    measure("real e5, LoCoMo questions as queries", matrix, queries[200:])
    from store_scale import synthetic

    data = synthetic(len(matrix), matrix.shape[1], 200, seed=7)
    measure("synthetic (store_scale.py)", data.vectors, data.queries)
    data = synthetic(len(matrix), matrix.shape[1], 0, seed=11, clusters=40)
    unlike = synthetic(200, matrix.shape[1], 0, seed=12, clusters=40).vectors  # another subspace, other centres
    measure("synthetic, 40 clusters, queries unlike them (as the tests draw them)", data.vectors, unlike)


if __name__ == "__main__":
    main()
