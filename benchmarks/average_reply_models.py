"""The mean of several reply models as one model file (rule E in `benchmarks/reply_model_decisions.md`).

    python benchmarks/train_reply_model.py --hand-train --idle-minutes 120 --seed 2 --out /tmp/s2.json
    python benchmarks/average_reply_models.py /tmp/s1.json /tmp/s2.json /tmp/s3.json --out M

Every stage of a reply model is a sum (an additive stage of per-feature tables, a tree stage of trees), so the
mean of N models' scores at each stage is itself a model of that form: per feature, one table over the union of
the members' split points holding the members' mean; per tree stage, every member's trees with their leaf values
divided by N. The package evaluates it as it evaluates any model; only the tree stages grow N-fold.
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path

import numpy as np

# What every member must share: the candidates, the features and the decoding they were trained for.
SHARED = (
    "format",
    "window",
    "far_slots",
    "prune",
    "features",
    "reactions_join",
    "addressed_join",
    "fresh_apart",
    "small_groups",
    "idle",
)


def mean_additive(members: list[dict]) -> dict:
    count = len(members)
    by_column: dict[int, list[tuple[np.ndarray, np.ndarray]]] = {}
    for member in members:
        for column, thresholds, table in zip(member["columns"], member["thresholds"], member["tables"], strict=True):
            by_column.setdefault(column, []).append((np.asarray(thresholds), np.asarray(table)))
    columns, thresholds, tables = [], [], []
    for column in sorted(by_column):
        points = np.unique(np.concatenate([cuts for cuts, _ in by_column[column]]))
        # A row goes to interval searchsorted(cuts, x, "left"); each union interval lies inside one interval
        # of every member, so a member's value there is its value at the interval's upper point.
        probes = np.append(points, np.nextafter(points[-1], np.inf))
        table = sum(values[np.searchsorted(cuts, probes, side="left")] for cuts, values in by_column[column])
        columns.append(column)
        thresholds.append(points.tolist())
        tables.append((table / count).tolist())
    bias = sum(member["bias"] for member in members) / count
    return {"columns": columns, "thresholds": thresholds, "tables": tables, "bias": bias}


def mean_trees(members: list[dict]) -> dict:
    count = len(members)
    out: dict = {"feature": [], "threshold": [], "child": [], "value": [], "roots": [], "depth": 0}
    for member in members:
        offset = len(out["feature"])
        out["feature"] += member["feature"]
        out["threshold"] += member["threshold"]
        out["child"] += [offset + node for node in member["child"]]
        out["value"] += [value / count for value in member["value"]]
        out["roots"] += [offset + root for root in member["roots"]]
        out["depth"] = max(out["depth"], member["depth"])
    out["bias"] = sum(member.get("bias", 0.0) for member in members) / count
    return out


def mean_model(models: list[dict], sources: list[str]) -> dict:
    first = models[0]
    for name in SHARED:
        differing = {json.dumps(model.get(name)) for model in models}
        if len(differing) > 1:
            raise SystemExit(f"the models differ in {name!r}: they cannot be averaged")
    if len({len(model["stages"]) for model in models}) > 1:
        raise SystemExit("the models have different numbers of stages")
    averaged = {name: first.get(name) for name in SHARED}
    averaged["training"] = {
        "averaged": [{"file": source, **model["training"]} for source, model in zip(sources, models, strict=True)]
    }
    for bias in ("self_bias", "small_self_bias"):
        averaged[bias] = sum(model.get(bias, 0.0) for model in models) / len(models)
    averaged["additive"] = mean_additive([model["additive"] for model in models])
    averaged["stages"] = [mean_trees(list(stage)) for stage in zip(*(model["stages"] for model in models), strict=True)]
    return averaged


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("models", nargs="+", type=Path)
    parser.add_argument("--out", type=Path, required=True)
    args = parser.parse_args()
    models = [json.loads(path.read_text(encoding="utf-8")) for path in args.models]
    averaged = mean_model(models, [path.name for path in args.models])
    args.out.write_text(json.dumps(averaged, separators=(",", ":")) + "\n", encoding="utf-8")
    trees = sum(len(stage["roots"]) for stage in averaged["stages"])
    print(f"wrote {args.out}: the mean of {len(models)} models, {trees} trees")


if __name__ == "__main__":
    main()
