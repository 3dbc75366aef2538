"""Do two checkouts build the same threads, chunks and full-text terms? For speed work that must not
change results.

    PYTHONPATH=/old/src python benchmarks/same_outputs.py --write /tmp/old.json    # the reference
    PYTHONPATH=src python benchmarks/same_outputs.py --against /tmp/old.json       # compare

For every labelled corpus of `thread_boundaries.py` (IRC dev, Gitter, zh-mix, the synthetic and
hand-written small groups, the sample) it records the threads of both assigners (message ids and
reply links, as `threadkeep threads --jsonl` prints them), and for a few bundles what `ingest`
stores without vectors: each conversation's content hash, the threads, and every chunk with its
text, embedding input and full-text terms. `--against` prints the first difference per corpus and
exits 1 when anything differs.
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
from pathlib import Path

from small_groups import OUT
from thread_boundaries import corpora
from threadkeep.api import threads_of
from threadkeep.embed import get_embedder
from threadkeep.ingest import ingest_result
from threadkeep.readers import read_path
from threadkeep.store import open_store
from threadkeep.threads import ThreadSettings

INGESTED = ("irc-dev", "zh-mix-dev", "hand-zh-dev", "sample")


def thread_records(bundle: Path, assigner: str) -> list:
    _, threads = threads_of(bundle, None, ThreadSettings(assigner=assigner))
    return [[list(t.message_ids), sorted(t.reply_to.items())] for t in threads]


def stored_records(bundle: Path, embedder) -> dict:
    with tempfile.TemporaryDirectory() as folder:
        store = open_store(Path(folder) / "same.db")
        ingest_result(store, read_path(bundle), embedder)
        db = store.db
        out = {
            "conversations": db.execute("SELECT ref, content_hash FROM conversations ORDER BY ref").fetchall(),
            "threads": db.execute("SELECT id, message_ids, reply_to, chunk_id FROM threads ORDER BY id").fetchall(),
            "messages": db.execute(
                "SELECT conversation, id, thread_id FROM messages ORDER BY conversation, id"
            ).fetchall(),
            "chunks": db.execute(
                "SELECT id, text, embedding_input, input_hash, search_words, search_bigrams, resolution_state, "
                "evidence_ids FROM chunks ORDER BY id"
            ).fetchall(),
        }
        store.close()
    return out


def collect() -> dict:
    embedder = get_embedder()
    out: dict[str, object] = {}
    for corpus in corpora(OUT):
        for assigner in ("learned", "rules"):
            out[f"{corpus.name}/{assigner}"] = thread_records(corpus.bundle, assigner)
        if corpus.name in INGESTED:
            out[f"{corpus.name}/store"] = stored_records(corpus.bundle, embedder)
    return json.loads(json.dumps(out, ensure_ascii=False))  # as a recorded file reads back: lists, not tuples


def first_difference(old: object, new: object, where: str = "") -> str | None:
    if type(old) is not type(new):
        return f"{where}: {type(old).__name__} vs {type(new).__name__}"
    if isinstance(old, dict):
        for key in sorted(set(old) | set(new)):
            if key not in old or key not in new:
                return f"{where}/{key}: only in {'new' if key not in old else 'old'}"
            found = first_difference(old[key], new[key], f"{where}/{key}")
            if found:
                return found
        return None
    if isinstance(old, list):
        for number, (a, b) in enumerate(zip(old, new, strict=False)):
            found = first_difference(a, b, f"{where}[{number}]")
            if found:
                return found
        return None if len(old) == len(new) else f"{where}: {len(old)} vs {len(new)} items"
    return None if old == new else f"{where}: {str(old)[:200]!r} vs {str(new)[:200]!r}"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    group = parser.add_mutually_exclusive_group(required=True)
    group.add_argument("--write", type=Path, help="record this checkout's outputs here")
    group.add_argument("--against", type=Path, help="compare this checkout's outputs with a recorded file")
    args = parser.parse_args()
    outputs = collect()
    if args.write:
        args.write.write_text(json.dumps(outputs, ensure_ascii=False), encoding="utf-8")
        print(f"{len(outputs)} outputs written to {args.write}")
        return
    reference = json.loads(args.against.read_text(encoding="utf-8"))
    differing = 0
    for key in sorted(set(reference) | set(outputs)):
        found = first_difference(reference.get(key), outputs.get(key), key)
        print(f"{key:<28} {'same' if found is None else 'DIFFERENT ' + found}")
        differing += found is not None
    print(f"{len(outputs) - differing} of {len(outputs)} outputs the same")
    sys.exit(1 if differing else 0)


if __name__ == "__main__":
    main()
