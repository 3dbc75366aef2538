"""`ask` on small hand-written corpora no threshold was fitted on: a Chinese smart-lock support group with
its product documents, and an English office chat with assistant sessions and a backup product's documents
(`zh`, `en`); and a second batch written later, of which no part is tuned on: a Chinese e-signature SaaS
customer group and an English climbing-gym staff chat, each with three documents (`zh2`, `en2`); the lead's
corpora (`lead-zh`, `lead-en`, all held out); and two tuning corpora written to be tuned on whole: a Chinese
residential compound's owners group and an English coworking members chat, each with three documents
(`zh3t`, `en3t`: every question counts as tune); and two more, written with questions the way users ask them
(colloquial, paraphrased, numbers written otherwise): a Chinese robot vacuum's user group and an English mesh
wifi community chat (`zh4t`, `en4t`, all tune); and a fresh batch of the same kind, written before any run on it: a
Chinese electric bicycle's owners group and an English espresso machine's owners chat (`zh5t`, `en5t`, all tune);
and another, also written before any run: a Chinese primary school class's parents group and an English self-hosted
server's Discord (`zh6t`, `en6t`, all tune); and a batch split in two before any run on it: a Chinese open-source
tool's maintainers group and an English shared house's chat with its landlord (`zh7t`, `en7t`: the questions at even
positions of the written order, tuned on; `zh7t-check`, `en7t-check`: those at odd positions, the file's `check`
part, run once at the end and printed as totals only).

    nice -n 10 python benchmarks/unseen.py [--stores /tmp/threadkeep-bench] [--corpora zh,en,zh2,en2]
        [--no-dense] [--embedder hash-256] [--show] [--features FILE]

Each corpus is `benchmarks/data/unseen_{name}.json` (chat, recalled messages, documents, questions),
written as an export bundle plus a documents folder and ingested into its own store. Per corpus and split
(benchmarks/splits.py on the question text, fixed before the first run) it prints:

- false refusals of answerable questions and false answers of unanswerable ones;
- thread@3: for questions answered in chat, whether the thread holding the question and its conclusion
  is among the first 3 hits of what `ask` reads (documents and chat interleaved);
- cited right: the answer cites that thread, or a document section stating the expected text;
- newer first: for questions whose fix also exists in an older group, whether the newer copy ranks first.

`--no-dense` runs the same questions as if no chunk had a vector yet (full text only), the state of a
store whose background embedding has not caught up. `--embedder hash-256` runs them with a lexical
stand-in model whose cosines lie on another scale: the decision must not depend on one model's values.
`--show` and `--features` print or write the tuning part's questions only, and nothing of the corpora nobody
tunes on (zh2, en2 and the lead's corpora), whose totals alone are printed. The lead's corpora (`--corpora
lead-zh,lead-en,lead2-zh,lead2-en,lead3-zh,lead3-en,lead4-zh,lead4-en`, not run by default) are held out whole, as
are the check halves (`--corpora zh7t-check,en7t-check`, not run by default).
"""

from __future__ import annotations

import argparse
import json
import sys
from collections import defaultdict
from datetime import datetime, timedelta
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from splits import split_of
from threadkeep.answer import build_answer
from threadkeep.answerability import assess
from threadkeep.api import KnowledgeBase
from threadkeep.search import Retrieval, retrieve
from threadkeep.store import SearchFilters

ROOT = Path(__file__).resolve().parents[1]
DATA = ROOT / "benchmarks" / "data"
CORPORA = ("zh", "en", "zh2", "en2")
# Written to be tuned on: every question is in the tuning part.
TUNING = frozenset({"zh3t", "en3t", "zh4t", "en4t", "zh5t", "en5t", "zh6t", "en6t", "zh7t", "en7t"})
# The other half of a batch split before any run: the file's `check` questions, nobody tunes on them.
CHECK = frozenset({"zh7t-check", "en7t-check"})
# Written by or for the lead: held out whole.
HELD_OUT = frozenset({"lead-zh", "lead-en", "lead2-zh", "lead2-en", "lead3-zh", "lead3-en", "lead4-zh", "lead4-en"})
UNSEEN = frozenset({"zh2", "en2"}) | HELD_OUT | CHECK  # nobody tunes on them: totals only


def materialise(corpus: dict, folder: Path) -> tuple[Path, Path]:
    """The corpus as an export bundle and a documents folder under `folder`."""
    bundle, docs = folder / "bundle", folder / "docs"
    bundle.mkdir(parents=True, exist_ok=True)
    docs.mkdir(parents=True, exist_ok=True)
    rows = [(row, False) for row in corpus["messages"]] + [(row, True) for row in corpus.get("recalled", [])]
    rows.sort(key=lambda item: item[0][2])
    lines = []
    for (conversation, mid, when, sender, text), recalled in rows:
        message = {"messageId": mid, "conversationRef": conversation, "senderRef": sender, "sentAt": when}
        message |= {"type": "system" if sender == "system" else "text", "text": text, "recalled": recalled}
        lines.append(json.dumps(message, ensure_ascii=False))
    (bundle / "messages.jsonl").write_text("\n".join(lines) + "\n", encoding="utf-8")
    for name, items in (("conversations", corpus["conversations"]), ("members", corpus["members"])):
        text = "\n".join(json.dumps(item, ensure_ascii=False) for item in items) + "\n"
        (bundle / f"{name}.jsonl").write_text(text, encoding="utf-8")
    manifest = {"format": "chat-export-bundle", "version": 1, "exportedAt": max(row[0][2] for row in rows)}
    (bundle / "manifest.json").write_text(json.dumps(manifest), encoding="utf-8")
    for name, text in corpus["docs"].items():
        (docs / name).write_text(text, encoding="utf-8")
    return bundle, docs


def full_text_only(kb: KnowledgeBase, question: str, now: datetime, k: int) -> Retrieval:
    """What `ask` retrieves while no chunk has a vector: the dense side returns nothing."""
    store = kb.store

    class NoVectors:
        def __getattr__(self, name: str):
            return getattr(store, name)

        def dense_candidates(self, *args, **kwargs):
            return []

        def embeddings_for(self, source_ref: str):
            return {}

    return retrieve(NoVectors(), kb.embedder, question, k, None, now, per_source=k), NoVectors()


def _starts(hit, ids: list[str]) -> bool:
    """Whether the hit holds the thread's opening question (the thread found, however it was cut)."""
    return ids[0] in (hit.chunk.evidence_ids or ())


def shown(hits, ids: list[str]) -> bool:
    """Whether these chat hits together show the question and its conclusion (a thread the assigner split
    in two counts when both halves are shown)."""
    return set(ids) <= {mid for hit in hits if hit.chunk.source_type == "chat" for mid in hit.chunk.evidence_ids or ()}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--stores", type=Path, default=Path("/tmp/threadkeep-bench"))
    parser.add_argument("--corpora", default=",".join(CORPORA))
    parser.add_argument("--no-dense", action="store_true", help="as if no chunk had a vector yet")
    parser.add_argument("--show", action="store_true", help="print every question's outcome (tuning part only)")
    parser.add_argument("--k", type=int, default=10)
    parser.add_argument("--features", type=Path, default=None, help="write tuning questions' features here (JSONL)")
    parser.add_argument("--embedder", default=None, help="another model (e.g. hash-256): cosines on another scale")
    args = parser.parse_args()
    tallies: dict[tuple[str, str, str], list[int]] = defaultdict(lambda: [0, 0])
    out = args.features.open("w", encoding="utf-8") if args.features else None
    for name in args.corpora.split(","):
        source = name.removesuffix("-check") if name in CHECK else name
        corpus = json.loads((DATA / f"unseen_{source}.json").read_text(encoding="utf-8"))
        asked = corpus["check"] if name in CHECK else corpus["questions"]
        folder = args.stores / f"unseen-{name}"
        bundle, docs = materialise(corpus, folder)
        latest = max(datetime.fromisoformat(row[2]) for row in corpus["messages"])
        now = latest + timedelta(days=1)
        suffix = f"-{args.embedder}" if args.embedder else ""
        with KnowledgeBase.open(args.stores / f"unseen-{name}{suffix}.db", args.embedder) as kb:
            kb.ingest(bundle)
            kb.ingest(docs)
            questions = [(item["q"], item) for item in asked["answerable"]]
            questions += [(text, None) for text in asked["unanswerable"]]
            for question, gold in questions:
                split = "tune" if name in TUNING else "heldout" if name in HELD_OUT | CHECK else split_of(question)
                seen = split == "tune" and name not in UNSEEN
                if args.no_dense:
                    retrieval, store = full_text_only(kb, question, now, args.k)
                else:
                    store = kb.store
                    retrieval = retrieve(store, kb.embedder, question, args.k, None, now, per_source=args.k)
                assessment = assess(question, retrieval, store, SearchFilters())
                answer = build_answer(question, retrieval.hits, {}, assessment)
                answered = answer.status == "answered"
                if gold is None:
                    tallies[(name, "false answers", split)][0] += answered
                    tallies[(name, "false answers", split)][1] += 1
                    outcome = "ANSWERED (false)" if answered else "refused"
                else:
                    tallies[(name, "false refusals", split)][0] += not answered
                    tallies[(name, "false refusals", split)][1] += 1
                    cited = answer.documents + answer.chat
                    if "thread" in gold:
                        chunks = {hit.chunk.id: hit for hit in retrieval.hits}
                        right = shown([chunks[c.chunk_id] for c in answer.chat if c.chunk_id in chunks], gold["thread"])
                        top3 = shown(retrieval.hits[:3], gold["thread"])
                        tallies[(name, "thread@3", split)][0] += top3
                        tallies[(name, "thread@3", split)][1] += 1
                        if "older" in gold:
                            chat = [hit for hit in retrieval.hits if hit.chunk.source_type == "chat"]
                            new = next((i for i, hit in enumerate(chat) if _starts(hit, gold["thread"])), len(chat))
                            old = next((i for i, hit in enumerate(chat) if _starts(hit, gold["older"])), len(chat))
                            tallies[(name, "newer first", split)][0] += new < old
                            tallies[(name, "newer first", split)][1] += 1
                            if args.show and seen:
                                scores = [
                                    f"{chat[i].score:.3f}, cosine {chat[i].dense_score or 0:.3f}, "
                                    f"full-text rank {chat[i].lexical_rank}"
                                    if i < len(chat)
                                    else "-"
                                    for i in (new, old)
                                ]
                                print(f"[{name}] {question} -> newer copy at chat rank {new} ({scores[0]}), "
                                      f"older at {old} ({scores[1]})")  # fmt: skip
                    else:
                        right = any(gold["doc"] in _full(retrieval, c.chunk_id) for c in cited)
                    tallies[(name, "cited right", split)][0] += answered and right
                    tallies[(name, "cited right", split)][1] += 1
                    outcome = ("answered" + ("" if right else " (wrong citation)")) if answered else "REFUSED (false)"
                if out and seen:
                    record = {"corpus": name, "answerable": gold is not None, "question": question, "outcome": outcome}
                    out.write(json.dumps(record | assessment.features, ensure_ascii=False) + "\n")
                if args.show and seen:
                    features = {key: round(value, 2) for key, value in assessment.features.items()}
                    print(f"[{name}] {question} -> {outcome}; {answer.reason or ''} {features}")
    if out:
        out.close()
    mode = ("full text only" if args.no_dense else "hybrid") + (f", {args.embedder}" if args.embedder else "")
    options = (" --no-dense" if args.no_dense else "") + (f" --embedder {args.embedder}" if args.embedder else "")
    print(f"unseen corpora, {mode}: python benchmarks/unseen.py{options}")
    print(f"{'corpus':<7} {'figure':<15} {'tune':>14} {'held out':>14}")
    for name in args.corpora.split(","):
        for figure in ("false refusals", "false answers", "thread@3", "cited right", "newer first"):
            cells = []
            for split in ("tune", "heldout"):
                count, total = tallies.get((name, figure, split), [0, 0])
                cells.append(f"{count}/{total}" + (f" ({count / total:.0%})" if total else ""))
            print(f"{name:<7} {figure:<15} {cells[0]:>14} {cells[1]:>14}")


def _full(retrieval: Retrieval, chunk_id: str) -> str:
    return next((hit.chunk.text for hit in retrieval.hits if hit.chunk.id == chunk_id), "")


if __name__ == "__main__":
    main()
