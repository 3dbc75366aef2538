"""Retrieval quality on the shared benchmarks (LoCoMo, LongMemEval), scored by `score_retrieval.py`.

    python benchmarks/retrieval.py locomo
    python benchmarks/retrieval.py longmemeval --limit 10
    python benchmarks/retrieval.py locomo --embedder hash-256
    python benchmarks/retrieval.py locomo --stores /tmp/threadkeep-bench --split heldout

The tuning / held-out split is benchmarks/splits.py (by qid); --split scores one part only.

Each bundle is ingested into its own store (kept under runs/stores/ so a rerun
reuses it), every query is searched in its scope with the clock set to the
question date when the data gives one (else just after the conversation's last
message), a run file is written to runs/, and the scorer's table is printed.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import time
from datetime import UTC, datetime
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from splits import split_of
from threadkeep.api import KnowledgeBase
from threadkeep.search import SearchSettings
from threadkeep.store import SearchFilters

ROOT = Path(__file__).resolve().parents[1]
BENCH = Path(os.environ.get("THREADKEEP_BENCH", ROOT.parent / "shared" / "bench"))
RUNS = ROOT / "runs"


def question_time(query: dict) -> datetime | None:
    if not query.get("question_date"):
        return None
    moment = datetime.fromisoformat(query["question_date"])
    return moment if moment.tzinfo else moment.replace(tzinfo=UTC)


def last_message_time(kb: KnowledgeBase, conversation: str | None) -> datetime:
    """Without a question date, the question is asked right after the conversation's last message."""
    times = [
        str(item.last_message_at)
        for item in kb.store.list_conversations()
        if item.last_message_at and conversation in (None, item.ref)
    ]
    return max(datetime.fromisoformat(t) for t in times)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("dataset", choices=["locomo", "longmemeval"])
    parser.add_argument("--embedder", default=None)
    parser.add_argument("--k", type=int, default=10)
    parser.add_argument("--limit", type=int, default=0, help="only the first N queries")
    parser.add_argument("--label", default="")
    parser.add_argument("--qids", default="", help="only these queries, comma-separated, in this order")
    parser.add_argument(
        "--half-life-days", type=float, default=None, help="chat time decay (default: the product's half-life)"
    )
    parser.add_argument("--decay-floor", type=float, default=None, help="least relevance an old chat chunk keeps")
    parser.add_argument("--dense-weight", type=float, default=None, help="dense share of the fused relevance")
    parser.add_argument("--repeat-factor", type=float, default=None, help="share kept per higher hit of a source")
    parser.add_argument("--off-time-factor", type=float, default=None, help="share kept outside a named time")
    parser.add_argument("--split", choices=["tune", "heldout"], default=None, help="only one part of the split")
    parser.add_argument("--stores", type=Path, default=None, help="reuse stores here (default runs/stores/LABEL)")
    parser.add_argument("--skip-missing", action="store_true", help="skip queries whose store is not built yet")
    parser.add_argument("--no-ingest", action="store_true", help="search existing stores as they are")
    args = parser.parse_args()

    queries = [json.loads(line) for line in (BENCH / args.dataset / "queries.jsonl").open(encoding="utf-8")]
    if args.split:
        queries = [query for query in queries if split_of(query["qid"]) == args.split]
    if args.qids:
        by_qid = {query["qid"]: query for query in queries}
        queries = [by_qid[qid] for qid in args.qids.split(",") if qid in by_qid]
    if args.limit:
        queries = queries[: args.limit]
    label = args.label or f"{args.dataset}-{args.embedder or 'default'}{'-' + args.split if args.split else ''}"
    stores = args.stores or RUNS / "stores" / label
    stores.mkdir(parents=True, exist_ok=True)
    RUNS.mkdir(exist_ok=True)
    run_path = RUNS / f"{label}.jsonl"
    opened: dict[str, KnowledgeBase] = {}
    changes = {
        name: value
        for name, value in (
            ("half_life_days", args.half_life_days),
            ("decay_floor", args.decay_floor),
            ("dense_weight", args.dense_weight),
            ("repeat_factor", args.repeat_factor),
            ("off_time_factor", args.off_time_factor),
        )
        if value is not None
    }
    settings = SearchSettings(**changes)
    started = time.perf_counter()
    search_seconds = 0.0
    with run_path.open("w", encoding="utf-8") as run:
        for query in queries:
            scope = query["scope"]
            bundle_name = scope.get("bundle", "bundle")
            if bundle_name not in opened:
                bundle = BENCH / args.dataset / ("bundles/" + bundle_name if "bundle" in scope else "bundle")
                path = stores / f"{bundle_name}.db"
                if args.skip_missing and not path.exists():
                    continue
                kb = KnowledgeBase.open(path, args.embedder)
                if not (args.no_ingest and path.exists()):
                    kb.ingest(bundle)
                opened[bundle_name] = kb
            kb = opened[bundle_name]
            filters = SearchFilters(conversation=scope.get("conversationRef"))
            tick = time.perf_counter()
            now = question_time(query) or last_message_time(kb, scope.get("conversationRef"))
            hits = kb.search(query["question"], k=args.k, filters=filters, now=now, settings=settings)
            search_seconds += time.perf_counter() - tick
            retrieved = [list(hit.chunk.evidence_ids or ()) for hit in hits]
            run.write(json.dumps({"qid": query["qid"], "retrieved": retrieved}) + "\n")
    for kb in opened.values():
        kb.close()
    total = time.perf_counter() - started
    print(
        f"{label}: {len(queries)} queries, {total:.0f} s in all (ingest included), "
        f"{1000 * search_seconds / max(len(queries), 1):.0f} ms per query; run file {run_path}"
    )
    subprocess.run(
        [
            sys.executable,
            str(BENCH / "tools" / "score_retrieval.py"),
            "--queries",
            str(BENCH / args.dataset / "queries.jsonl"),
            "--run",
            str(run_path),
            "--run-qids-only",
            "--label",
            label,
        ],
        check=True,
    )


if __name__ == "__main__":
    main()
