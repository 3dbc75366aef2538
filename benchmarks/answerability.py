"""False answers and false refusals of `ask`, per corpus, on the tuning and the held-out split.

    nice -n 10 python benchmarks/answerability.py [--stores /tmp/threadkeep-bench] [--features out.jsonl]

Corpora (each question goes through the same retrieval and decision as `KnowledgeBase.ask`):

- sample: the shipped support group + documents; answerable = questions.json with a thread and the
  hand-written answerable questions in benchmarks/data/sample_answerability.json; unanswerable = the
  rest of both files, plus every 8th LoCoMo question (off-topic).
- locomo: queries.jsonl (answerable) in their conversation; adversarial.jsonl (unanswerable: refused
  or flagged "about someone else" counts); every 2nd LongMemEval question (another person's life,
  unanswerable) in the first LoCoMo conversation.
- longmemeval: each question in its own haystack (answerable); the next two questions whose evidence
  sessions are not in that haystack (unanswerable).

Stores are built once under --stores and reused (ingest skips unchanged conversations). The split is
benchmarks/splits.py; thresholds in threadkeep.answerability were chosen on "tune" only.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
from collections import defaultdict
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from splits import split_of
from threadkeep.answerability import ABOUT_SOMEONE_ELSE, assess
from threadkeep.api import KnowledgeBase
from threadkeep.search import retrieve
from threadkeep.store import SearchFilters

ROOT = Path(__file__).resolve().parents[1]
BENCH = Path(os.environ.get("THREADKEEP_BENCH", ROOT.parent / "shared" / "bench"))
SAMPLES = ROOT / "src" / "threadkeep" / "samples"
SAMPLE_NOW = datetime(2026, 5, 18, tzinfo=UTC)


@dataclass(frozen=True, slots=True)
class Item:
    corpus: str
    kind: str  # "answerable" | "unanswerable" | "adversarial"
    key: str  # split key
    question: str
    store: str  # store file name under --stores
    conversation: str | None = None
    now: datetime | None = None


def jsonl(path: Path) -> list[dict]:
    return [json.loads(line) for line in path.open(encoding="utf-8")]


def question_time(query: dict) -> datetime | None:
    if not query.get("question_date"):
        return None
    moment = datetime.fromisoformat(query["question_date"])
    return moment if moment.tzinfo else moment.replace(tzinfo=UTC)


def sample_items() -> list[Item]:
    items = []
    for entry in json.loads((SAMPLES / "support_group" / "questions.json").read_text(encoding="utf-8")):
        kind = "answerable" if entry["thread"] else "unanswerable"
        items.append(Item("sample", kind, entry["question"], entry["question"], "sample.db", now=SAMPLE_NOW))
    written = json.loads((ROOT / "benchmarks" / "data" / "sample_answerability.json").read_text(encoding="utf-8"))
    for kind in ("answerable", "unanswerable"):
        items += [Item("sample", kind, q, q, "sample.db", now=SAMPLE_NOW) for q in written[kind]]
    for query in jsonl(BENCH / "locomo" / "queries.jsonl")[::8]:
        items.append(Item("sample", "unanswerable", query["qid"], query["question"], "sample.db", now=SAMPLE_NOW))
    return items


def locomo_items() -> list[Item]:
    items = []
    for name, kind in (("queries.jsonl", "answerable"), ("adversarial.jsonl", "adversarial")):
        for query in jsonl(BENCH / "locomo" / name):
            conversation = query["scope"]["conversationRef"]
            items.append(Item("locomo", kind, query["qid"], query["question"], "locomo.db", conversation))
    for query in jsonl(BENCH / "longmemeval" / "queries.jsonl")[::2]:
        items.append(Item("locomo", "unanswerable", "lme-" + query["qid"], query["question"], "locomo.db", "conv-26"))
    return items


def haystack_sessions(bundle: Path) -> set[str]:
    return {json.loads(line)["conversationRef"] for line in (bundle / "messages.jsonl").open(encoding="utf-8")}


def longmemeval_items(limit: int = 0) -> list[Item]:
    queries = jsonl(BENCH / "longmemeval" / "queries.jsonl")
    if limit:
        queries = queries[:limit]
    items = []
    for position, query in enumerate(queries):
        store = f"longmemeval/{query['qid']}.db"
        now = question_time(query)
        items.append(Item("longmemeval", "answerable", query["qid"], query["question"], store, now=now))
        sessions = haystack_sessions(BENCH / "longmemeval" / "bundles" / query["qid"])
        others = queries[position + 1 :] + queries[:position]
        foreign = [other for other in others if not set(other.get("evidence_sessions") or []) & sessions][:2]
        for other in foreign:
            # The key is the asking haystack's qid, so a haystack and all its questions fall in one split.
            items.append(Item("longmemeval", "unanswerable", query["qid"], other["question"], store, now=now))
    return items


def last_message_time(kb: KnowledgeBase, conversation: str | None) -> datetime:
    times = [
        str(item.last_message_at)
        for item in kb.store.list_conversations()
        if item.last_message_at and conversation in (None, item.ref)
    ]
    return max(datetime.fromisoformat(t) for t in times)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--stores", type=Path, default=Path("/tmp/threadkeep-bench"))
    parser.add_argument("--corpora", default="sample,locomo,longmemeval")
    parser.add_argument("--longmemeval-limit", type=int, default=0)
    parser.add_argument("--features", type=Path, default=None, help="write each question's features here (JSONL)")
    parser.add_argument("--k", type=int, default=10)
    args = parser.parse_args()
    corpora = args.corpora.split(",")
    items: list[Item] = []
    if "sample" in corpora:
        items += sample_items()
    if "locomo" in corpora:
        items += locomo_items()
    if "longmemeval" in corpora:
        items += longmemeval_items(args.longmemeval_limit)
    opened: dict[str, KnowledgeBase] = {}
    counts: dict[tuple[str, str, str], list[int]] = defaultdict(lambda: [0, 0, 0])  # n, refused, flagged
    out = args.features.open("w", encoding="utf-8") if args.features else None
    for item in items:
        path = args.stores / item.store
        if not path.exists():
            continue
        if item.store not in opened:
            opened[item.store] = KnowledgeBase.open(path)
        kb = opened[item.store]
        filters = SearchFilters(conversation=item.conversation)
        now = item.now or last_message_time(kb, item.conversation)
        retrieval = retrieve(kb.store, kb.embedder, item.question, args.k, filters, now, per_source=args.k)
        assessment = assess(item.question, retrieval, kb.store, filters)
        flagged = ABOUT_SOMEONE_ELSE in assessment.flags
        tally = counts[(item.corpus, item.kind, split_of(item.key))]
        tally[0] += 1
        tally[1] += not assessment.answerable
        tally[2] += flagged and assessment.answerable
        if out:
            record = {
                "corpus": item.corpus,
                "kind": item.kind,
                "split": split_of(item.key),
                "question": item.question,
                "answerable": assessment.answerable,
                "flagged": flagged,
                "reason": assessment.reason,
                **assessment.features,
            }
            out.write(json.dumps(record, ensure_ascii=False) + "\n")
    for kb in opened.values():
        kb.close()
    if out:
        out.close()
    print(f"{'corpus':<12} {'questions':<13} {'split':<8} {'n':>4}  result")
    for (corpus, kind, split), (n, refused, flagged) in sorted(counts.items()):
        if kind == "answerable":
            result = f"false refusals {refused}/{n} = {refused / n:.1%}  (flagged, answered: {flagged})"
        elif kind == "unanswerable":
            result = f"false answers {n - refused}/{n} = {(n - refused) / n:.1%}"
        else:
            caught = refused + flagged
            result = f"refused {refused}, flagged {flagged}: {caught}/{n} = {caught / n:.1%} caught"
        print(f"{corpus:<12} {kind:<13} {split:<8} {n:>4}  {result}")


if __name__ == "__main__":
    main()
