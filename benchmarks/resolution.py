"""Resolution states (resolved / workaround / open) against the sample corpus' hand labels.

    python benchmarks/resolution.py

Each gold thread of two or more messages is classified on its own (gold boundaries), so
the figure measures the classifier, not thread reconstruction.
"""

from __future__ import annotations

import json
from collections import Counter
from pathlib import Path

from threadkeep.readers import read_path
from threadkeep.threads.resolution import resolution_state

SAMPLE = Path(__file__).resolve().parents[1] / "src" / "threadkeep" / "samples" / "support_group"
STATES = ("resolved", "workaround", "open")


def main() -> None:
    messages = {message.id: message for message in read_path(SAMPLE).messages}
    gold = json.loads((SAMPLE / "gold.json").read_text(encoding="utf-8"))
    confusion: Counter[tuple[str, str]] = Counter()
    for thread in gold["threads"]:
        label = gold["resolution"].get(thread[0])
        if label:
            confusion[(label, resolution_state([messages[mid] for mid in thread]))] += 1
    total = sum(confusion.values())
    correct = sum(count for (truth, guess), count in confusion.items() if truth == guess)
    print(f"accuracy {correct / total:.3f} on {total} labelled threads")
    print("gold \\ predicted  " + "  ".join(f"{state:>10}" for state in STATES))
    for truth in STATES:
        print(f"{truth:>16}  " + "  ".join(f"{confusion[(truth, guess)]:>10}" for guess in STATES))


if __name__ == "__main__":
    main()
