"""`benchmarks/average_reply_models.py`: the mean of reply models is one model scoring the members' mean."""

from __future__ import annotations

import copy
import json
import sys
from pathlib import Path

import numpy as np
import pytest

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "benchmarks"))

from average_reply_models import mean_model  # noqa: E402
from threadkeep.threads.learned import MODEL_PATH, ReplyModel  # noqa: E402


def other_member(model: dict) -> dict:
    """The packaged model with other split points, other table values and other leaves."""
    other = copy.deepcopy(model)
    additive = other["additive"]
    additive["thresholds"] = [[cut + 0.37 for cut in cuts] for cuts in additive["thresholds"]]
    additive["tables"] = [[2 * value - 1 for value in table] for table in additive["tables"]]
    additive["bias"] = 0.5
    for stage in other["stages"]:
        stage["value"] = [-3 * value for value in stage["value"]]
        stage["threshold"] = [cut * 0.9 for cut in stage["threshold"]]
    other["self_bias"] = -1.0
    other["small_self_bias"] = 0.25
    return other


def rows_near_the_splits(model: ReplyModel, count: int = 4000) -> np.ndarray:
    """Feature rows whose values sit on, just above and just below the split points, where a merge could slip."""
    rng = np.random.default_rng(7)
    width = len(model.features)
    rows = rng.normal(size=(count, width)) * 5
    for column, cuts in zip(model.additive.columns, model.additive.thresholds, strict=True):
        near = np.concatenate([cuts, cuts + 0.37, np.nextafter(cuts, np.inf), np.nextafter(cuts, -np.inf)])
        rows[:, column] = rng.choice(near, size=count)
    return rows


@pytest.fixture(scope="module")
def members() -> list[dict]:
    packaged = json.loads(MODEL_PATH.read_text(encoding="utf-8"))
    return [packaged, other_member(packaged)]


def test_the_mean_model_scores_the_mean_of_its_members_at_every_stage(members: list[dict]) -> None:
    averaged = ReplyModel.from_json(mean_model(members, ["a", "b"]))
    first, second = (ReplyModel.from_json(member) for member in members)
    rows = rows_near_the_splits(first)
    expected = (first.additive.predict(rows) + second.additive.predict(rows)) / 2
    assert np.allclose(averaged.additive.predict(rows), expected, rtol=0, atol=1e-9)
    assert not np.allclose(first.additive.predict(rows), expected)  # the members do differ
    for stage, (one, two) in enumerate(zip(first.stages, second.stages, strict=True)):
        expected = (one.predict(rows) + two.predict(rows)) / 2
        assert np.allclose(averaged.stages[stage].predict(rows), expected, rtol=0, atol=1e-9)
        narrow = rows.astype(np.float32)
        expected = (one.predict(narrow) + two.predict(narrow)) / 2
        assert np.allclose(averaged.stages[stage].predict(narrow), expected, rtol=0, atol=1e-9)
    assert averaged.self_bias == pytest.approx((first.self_bias + second.self_bias) / 2)
    assert averaged.small_self_bias == pytest.approx((first.small_self_bias + second.small_self_bias) / 2)


def test_models_made_for_other_candidates_are_not_averaged(members: list[dict]) -> None:
    other = copy.deepcopy(members[1])
    other["prune"] = members[0]["prune"] + 1
    with pytest.raises(SystemExit, match="prune"):
        mean_model([members[0], other], ["a", "b"])
