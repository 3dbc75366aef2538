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
import os
from pathlib import Path

import numpy as np

from threadkeep.store import vectors
from threadkeep.store.base import SearchFilters

BENCH = Path(os.environ.get("THREADKEEP_BENCH", Path(__file__).resolve().parents[2] / "shared" / "bench"))


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


def grown(passages: np.ndarray, count: int, seed: int = 5) -> np.ndarray:
    """`count` unit vectors made from real ones: each is a real passage (in turn) plus Gaussian noise in
    the passages' 96 principal directions (each scaled by its spread there), so the set keeps the real
    vectors' common direction and shape. The noise's size makes a made vector's cosine to its passage
    the median cosine of a real passage to its nearest other passage."""
    rng = np.random.default_rng(seed)
    centred = passages - passages.mean(axis=0)
    _, values, directions = np.linalg.svd(centred[:20_000], full_matrices=False)
    basis = (values[:96, None] / np.sqrt(min(len(passages), 20_000))) * directions[:96]
    sample = passages[:2_000]
    nearest = np.sort(sample @ passages.T, axis=1)[:, -2]  # the largest is the passage itself
    target = float(np.median(nearest))

    def made(parents: np.ndarray, size: float) -> np.ndarray:
        out = parents + size * (rng.standard_normal((len(parents), len(basis))).astype(np.float32) @ basis)
        return (out / np.linalg.norm(out, axis=1, keepdims=True)).astype(np.float32)

    low, high = 0.0, 4.0
    for _ in range(30):  # the noise size whose median cosine to the parent is the target
        size = (low + high) / 2
        if np.median(np.einsum("ij,ij->i", made(sample, size), sample)) > target:
            low = size
        else:
            high = size
    out = np.empty((count, passages.shape[1]), dtype=np.float32)
    for start in range(0, count, 65_536):
        parents = passages[np.arange(start, min(start + 65_536, count)) % len(passages)]
        out[start : start + len(parents)] = made(parents, size)
    return out


def segment_of(module, matrix: np.ndarray):
    n = len(matrix)
    rows = module.Rows(np.arange(n, dtype=np.int64), np.zeros(n, np.uint8), ["all"] * n, np.zeros(n), matrix.copy())
    return module.build([rows], matrix.shape[1])


def exact_top(queries: np.ndarray, matrix: np.ndarray, k: int) -> np.ndarray:
    """(queries, k) indexes of the exact top k, in blocks of the vectors (a million at once is 1.5 GB a query set)."""
    best_scores = np.full((len(queries), 0), -np.inf, np.float32)
    best = np.zeros((len(queries), 0), np.int64)
    for start in range(0, len(matrix), 200_000):
        scores = np.hstack([best_scores, queries @ matrix[start : start + 200_000].T])
        index = np.hstack([best, np.broadcast_to(np.arange(start, min(start + 200_000, len(matrix))),
                                                 (len(queries), min(200_000, len(matrix) - start)))])  # fmt: skip
        keep = np.argpartition(-scores, k - 1, axis=1)[:, :k]
        best_scores, best = np.take_along_axis(scores, keep, 1), np.take_along_axis(index, keep, 1)
    return best


def measure(label: str, matrix: np.ndarray, queries: np.ndarray, versions: dict, as_at: int | None) -> None:
    """Recall@10 and @50 of each version's stages against exact search. With `as_at`, every candidate
    count of the bit stages is scaled by len(matrix) / as_at, so each keeps the share of the store it
    would keep in a store of `as_at` vectors."""
    truth = {k: exact_top(queries, matrix, k) for k in (10, 50)}
    scale = f", candidates kept as at {as_at:,} ({100 * len(matrix) / as_at:.1f} % of the counts)" if as_at else ""
    print(f"{label}, {len(matrix):,} vectors, {len(queries)} queries{scale}", flush=True)
    for name, module in versions.items():
        index = module.VectorIndex(segment_of(module, matrix), 0)
        figures = []
        for k in (10, 50):
            recalls = []
            for query, top in zip(queries, truth[k], strict=True):
                candidates = np.array(index.candidates(query, k, SearchFilters()))
                found = candidates[np.argsort(-(matrix[candidates] @ query))[:k]]
                recalls.append(len(set(top.tolist()).intersection(found.tolist())) / k)
            figures.append(f"recall@{k} {np.mean(recalls):.4f} (worst query {min(recalls):.2f})")
        print(f"  {name:12s} " + ", ".join(figures), flush=True)


def scaled(module, share: float):
    """`module` with its bit stages keeping `share` of the candidates they keep."""
    for name in ("hamming_candidates", "bit_candidates"):
        original = getattr(module, f"_unscaled_{name}", getattr(module, name))
        setattr(module, f"_unscaled_{name}", original)
        setattr(module, name, lambda k, original=original: max(1, round(share * original(k))))
    return module


def other_version(path: Path):
    """Another version of threadkeep/store/vectors.py, imported under its file's name."""
    import importlib.util
    import sys

    name = f"other_vectors_{path.stem}"
    spec = importlib.util.spec_from_file_location(name, path)
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module  # dataclasses look their module up there
    spec.loader.exec_module(module)
    return module


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--vectors", required=True, help="PREFIX of PREFIX-passages.npy and PREFIX-queries.npy")
    parser.add_argument("--more", nargs="*", default=[], help="more passage .npy files (other windows)")
    parser.add_argument("--embed", type=int, help="embed this many passages (and the queries)")
    parser.add_argument("--further", type=int, help="with --embed: the windows from this one on, no queries")
    parser.add_argument("--others", type=Path, nargs="*", default=[], help="other versions of vectors.py")
    parser.add_argument("--as-at", type=int, default=1_000_000, help="also keep the candidate share of this size")
    parser.add_argument("--grow", type=int, nargs="*", default=[], help="also measure made sets of these sizes")
    parser.add_argument("--synthetic", action="store_true", help="also the benchmark's synthetic vectors")
    args = parser.parse_args()
    if args.embed:
        embed(args.embed, args.vectors, args.further)
        return
    versions = {path.stem: other_version(path) for path in args.others} | {"this tree": vectors}
    for module in versions.values():
        module.INT8_SCAN = 0  # the bit stages even where a store this small would score every int8 row
    matrix = np.vstack([np.load(f"{args.vectors}-passages.npy"), *(np.load(path) for path in args.more)])
    queries = np.load(f"{args.vectors}-queries.npy")
    sets = [("real e5, IRC lines as queries", queries[:200]), ("real e5, LoCoMo questions as queries", queries[200:])]
    for label, chosen in sets:
        measure(label, matrix, chosen, versions, None)
        if args.as_at > len(matrix):
            share = len(matrix) / args.as_at
            measure(label, matrix, chosen, {name: scaled(m, share) for name, m in versions.items()}, args.as_at)
            for module in versions.values():
                scaled(module, 1.0)
    for size in args.grow:
        made = grown(matrix, size)
        for label, chosen in sets:
            measure(f"{label}, made from the real passages", made, chosen, versions, None)
    if args.synthetic:
        from store_scale import synthetic

        data = synthetic(len(matrix), matrix.shape[1], 200, seed=7)
        measure("synthetic (store_scale.py)", data.vectors, data.queries, versions, None)
        data = synthetic(len(matrix), matrix.shape[1], 0, seed=11, clusters=40)
        unlike = synthetic(200, matrix.shape[1], 0, seed=12, clusters=40).vectors  # another subspace, other centres
        measure("synthetic, 40 clusters, queries unlike them (as the tests draw them)", data.vectors, unlike,
                versions, None)  # fmt: skip


if __name__ == "__main__":
    main()
