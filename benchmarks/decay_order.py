"""Does the chat decay reorder near-equal fixes, and only those? Product fusion against the old RRF fusion.

    nice -n 10 python benchmarks/decay_order.py [--days 75]

For each answerable question of the sample (questions.json), its gold thread is copied into a new
group chat, every message `--days` later: the copy is an equally good fix, newer. Each source group's
threads go into a later group of their own: copied into one group, threads of two groups that ran at
the same hours interleave and the assigner cuts them differently from their originals (a copy's
question and its fix in different chunks is no longer an equal fix). A second thread
from another topic is copied the same way: a weak new thread. With the clock a day after the
copies, the script counts (chat hits only):

- newer first: the copy of the gold thread ranks above the original;
- closer old first: the original gold thread ranks above every weak new copy.

It reports both for the product's fusion (relevance scaled per retriever, decay bounded by
`decay_floor`) and for the former fusion (reciprocal rank, k = 5, decay on the fused score), from
the same candidates. The sample store is built once (embedding only the copies on reruns).
"""

from __future__ import annotations

import argparse
import json
import re
import shutil
import tempfile
from datetime import datetime, timedelta
from pathlib import Path

from threadkeep.api import KnowledgeBase
from threadkeep.search import SearchSettings, decay, retrieve
from threadkeep.store import SearchFilters

ROOT = Path(__file__).resolve().parents[1]
SAMPLE = ROOT / "src" / "threadkeep" / "samples" / "support_group"
DOCS = ROOT / "src" / "threadkeep" / "samples" / "docs"
COPY = "yunshu-later"


def untimed(text: str) -> str:
    return re.sub(r"^\[[^\]]+\] ", "", text, flags=re.M)


def rrf_order(kb: KnowledgeBase, retrieval, now: datetime, k: int = 5, half_life: float = 180.0) -> list[str]:
    """The former fusion: 1 / (k + rank) summed over both rankings, times the age decay for chat."""
    fused: dict[str, float] = {}
    for ranking in (retrieval.dense, retrieval.lexical):
        for rank, (chunk_id, _) in enumerate(ranking):
            fused[chunk_id] = fused.get(chunk_id, 0.0) + 1.0 / (k + rank + 1)
    chunks = kb.store.get_chunks(fused)
    for chunk_id, chunk in chunks.items():
        fused[chunk_id] *= decay((now - chunk.occurred_at).total_seconds() / 86400, half_life)
    return sorted(fused, key=lambda chunk_id: -fused[chunk_id])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--days", type=float, default=75.0)
    parser.add_argument("--store", type=Path, default=Path(tempfile.gettempdir()) / "threadkeep-decay-order.db")
    args = parser.parse_args()
    questions = [q for q in json.loads((SAMPLE / "questions.json").read_text(encoding="utf-8")) if q["thread"]]
    gold = {thread[0]: thread for thread in json.loads((SAMPLE / "gold.json").read_text(encoding="utf-8"))["threads"]}
    messages = {m["messageId"]: m for m in map(json.loads, (SAMPLE / "messages.jsonl").open(encoding="utf-8"))}
    shift = timedelta(days=args.days)
    starters = [q["thread"] for q in questions]
    weak_of = {starter: starters[(i + 1) % len(starters)] for i, starter in enumerate(starters)}
    copies: list[dict] = []
    for starter in starters:
        for message_id in gold[starter]:
            original = messages[message_id]
            moved = datetime.fromisoformat(original["sentAt"]) + shift
            copies.append(
                {
                    key: value
                    for key, value in original.items()
                    if key not in ("quotedMessageId", "replyTo", "mentionedRefs")
                }
                | {
                    "messageId": f"{COPY}:{message_id}",
                    "conversationRef": f"{COPY}:{original['conversationRef']}",
                    "sentAt": moved.isoformat(),
                }
            )
    copies.sort(key=lambda m: m["sentAt"])
    with tempfile.TemporaryDirectory() as folder:
        bundle = Path(folder) / "later"
        bundle.mkdir()
        (bundle / "messages.jsonl").write_text(
            "\n".join(json.dumps(m, ensure_ascii=False) for m in copies) + "\n", encoding="utf-8"
        )
        shutil.copy(SAMPLE / "members.jsonl", bundle / "members.jsonl")
        with KnowledgeBase.open(args.store) as kb:
            kb.ingest(SAMPLE)
            kb.ingest(DOCS)
            kb.ingest(bundle)
            now = max(datetime.fromisoformat(m["sentAt"]) for m in copies) + timedelta(days=1)
            settings = SearchSettings()
            counts = {"product": [0, 0], "former RRF": [0, 0]}
            pairs = identical = 0
            for question in questions:
                starter = question["thread"]
                retrieval = retrieve(
                    kb.store, kb.embedder, question["question"], 50, SearchFilters(source_type="chat"), now, settings
                )
                product = [hit.chunk.id for hit in retrieval.hits]
                former = rrf_order(kb, retrieval, now)
                chunks = kb.store.get_chunks(set(product) | set(former))
                for name, order in (("product", product), ("former RRF", former)):
                    holding = [set(chunks[chunk_id].evidence_ids or ()) for chunk_id in order]
                    original = next((i for i, ids in enumerate(holding) if starter in ids), None)
                    copy = next((i for i, ids in enumerate(holding) if f"{COPY}:{starter}" in ids), None)
                    weak = next((i for i, ids in enumerate(holding) if f"{COPY}:{weak_of[starter]}" in ids), None)
                    if original is not None and copy is not None and name == "product":
                        same = untimed(chunks[order[original]].text) == untimed(chunks[order[copy]].text)
                        identical += same
                    if original is None or copy is None:
                        continue
                    counts[name][0] += copy < original
                    counts[name][1] += weak is None or original < weak
                pairs += 1
    print(f"{pairs} questions, copies {args.days:g} days newer (chat hits); {identical} copies chunked exactly alike")
    for name, (newer, closer) in counts.items():
        print(
            f"{name:>10}: newer of two equal fixes first {newer}/{pairs};"
            f" closer old fix above a weak new one {closer}/{pairs}"
        )


if __name__ == "__main__":
    main()
