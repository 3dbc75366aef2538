from __future__ import annotations

import os
import subprocess
import sys
from dataclasses import replace
from datetime import datetime, timedelta, timezone

import numpy as np
import pytest

from conftest import learned_idle_minutes, write_bundle
from conftest import message as bundle_message
from threadkeep.model import Message
from threadkeep.threads import features as F
from threadkeep.threads.learned import MODEL_PATH, ReplyModel, assign_learned, float32_below, reply_model
from threadkeep.threads.mentions import NameIndex
from threadkeep.threads.rules import ThreadSettings

START = datetime(2026, 5, 14, 10, 0, tzinfo=timezone(timedelta(hours=8)))
SETTINGS = ThreadSettings()


def msg(mid: str, sender: str, minute: float, text: str, **extra) -> Message:
    return Message(mid, "c", sender, START + timedelta(minutes=minute), text, **extra)


def assign(messages: list[Message]) -> tuple[list[list[str]], dict[str, str]]:
    return assign_learned(messages, NameIndex(messages), SETTINGS)


def thread_of(threads: list[list[str]], message_id: str) -> list[str]:
    return next(thread for thread in threads if message_id in thread)


def busy_channel(start: float = 0.0, count: int = 12) -> list[Message]:
    """Unrelated chatter between other people, one message a minute."""
    topics = ["the kernel panics on boot", "grub shows a black screen", "wifi drops every hour", "sound is muted"]
    return [
        msg(f"x{k}", f"user{k % 4}", start + k, f"user{(k + 1) % 4}: {topics[k % 4]} again, any idea {k}?")
        for k in range(count)
    ]


def test_the_packaged_model_loads_and_scores() -> None:
    model = reply_model()
    assert reply_model() is model  # loaded once
    assert MODEL_PATH.stat().st_size < 5_000_000
    assert model.features[: len(F.FEATURES)] == F.FEATURES
    assert model.stages and all(stage.depth > 0 for stage in model.stages)
    x = np.zeros((3, len(F.STATIC)))
    x[1, F.STATIC.index("i_names_j")] = 1.0  # (names include @ / `nick:` addressees)
    scores = model.additive.predict(x)
    assert scores.shape == (3,) and np.isfinite(scores).all()
    assert scores[1] > scores[0]  # naming the candidate's speaker makes it a likelier parent
    rows = np.zeros((4, len(model.features)))
    assert np.isfinite(model.stages[-1].predict(rows)).all()


def test_float32_rows_take_the_branches_of_float64() -> None:
    # The stages compare float32 rows with float32 thresholds: the same branches as in float64.
    rng = np.random.default_rng(7)
    thresholds = np.concatenate(
        [
            rng.normal(size=2000) * 10.0 ** rng.integers(-8, 8, size=2000),
            [0.0, -0.0, 1.0, 0.1, -0.1, 1e300, -1e300, 3.4028235e38, 1e-45, -1e-45],
        ]
    )
    below = float32_below(thresholds)
    with np.errstate(over="ignore"):
        near = thresholds.astype(np.float32)
        x = np.concatenate(
            [
                near,
                np.nextafter(near, np.float32(np.inf)),
                np.nextafter(near, np.float32(-np.inf)),
                np.array([np.inf, -np.inf], dtype=np.float32),
            ]
        )
    assert np.array_equal(x[:, None] > thresholds[None, :], x[:, None] > below[None, :])
    model = reply_model()
    rows = rng.normal(size=(700, len(model.features))).astype(np.float32)
    for stage in model.stages:
        assert np.array_equal(stage.predict(rows), stage.predict(rows.astype(np.float64)))


def test_empty_conversation() -> None:
    assert assign([]) == ([], {})


def test_every_message_is_in_one_thread_and_links_point_back_within_it() -> None:
    messages = busy_channel(count=30)
    threads, links = assign(messages)
    ids = [m.id for m in messages]
    assert sorted(mid for thread in threads for mid in thread) == sorted(ids)
    position = {mid: k for k, mid in enumerate(ids)}
    for child, parent in links.items():
        assert position[parent] < position[child]
        assert parent in thread_of(threads, child)
    for thread in threads:
        assert [position[mid] for mid in thread] == sorted(position[mid] for mid in thread)
        assert thread[0] not in links


def test_a_quote_is_always_followed() -> None:
    messages = [
        msg("q", "alice", 0, "how do I mount an ntfs partition read-write?"),
        *busy_channel(start=1, count=20),
        # 45 minutes later (beyond the idle gap), unrelated words, no name: only the quote ties it.
        msg("a", "bob", 45, "sorry, was away. try this", reply_to="q"),
    ]
    threads, links = assign(messages)
    assert links["a"] == "q"
    assert "q" in thread_of(threads, "a")


def test_a_quote_beyond_the_maximum_span_is_not_followed() -> None:
    messages = [
        msg("q", "alice", 0, "how do I mount an ntfs partition read-write?"),
        msg("a", "bob", SETTINGS.max_span.total_seconds() / 60 + 60, "sorry, was away. try ntfs-3g", reply_to="q"),
    ]
    threads, links = assign(messages)
    assert "a" not in links
    assert ["a"] in threads


def test_nick_addressing_links_to_that_nicks_message() -> None:
    messages = [
        msg("q", "alice", 0, "my printer is not detected after the upgrade"),
        msg("o1", "carol", 0.5, "dave: did the new kernel fix your wifi?"),
        msg("o2", "dave", 1, "carol: yes, all good now"),
        msg("o3", "erin", 1.5, "anyone know a good pdf editor?"),
        msg("a", "bob", 2, "alice: install the hplip package and run hp-setup"),
    ]
    _, links = assign(messages)
    assert links["a"] == "q"
    assert links["o2"] == "o1"


def test_at_mention_links_to_the_mentioned_persons_message() -> None:
    messages = [
        msg("q", "u_ajie", 0, "我这边点了图标一点反应都没有"),
        msg("o1", "u_kk", 1, "有人知道怎么找回前天的版本吗"),
        msg("o2", "u_tang", 2, "网页版好像有历史版本"),
        msg("a", "staff", 6, "@u_ajie 先结束进程再删掉缓存目录试试", mentions=("u_ajie",)),
    ]
    _, links = assign(messages)
    assert links["a"] == "q"


def printer_fixed_after(minutes: float) -> list[Message]:
    return [
        msg("q", "alice", 0, "my printer is not detected after the upgrade"),
        msg("a", "bob", 1, "alice: install hplip and run hp-setup"),
        msg("late", "alice", 1 + minutes, "bob: hplip fixed the printer, thanks!"),
    ]


def test_a_message_beyond_the_models_idle_gap_never_links() -> None:
    threads, links = assign(printer_fixed_after(learned_idle_minutes() + 5))
    assert links["a"] == "q"
    assert "late" not in links
    assert ["late"] in threads


def test_the_idle_gap_decoded_with_is_the_models_own() -> None:
    messages = printer_fixed_after(20)
    assert assign(messages)[1]["late"] == "a"
    closing = replace(reply_model(), idle=10 * 60.0)
    threads, links = assign_learned(messages, NameIndex(messages), SETTINGS, closing)
    assert "late" not in links and ["late"] in threads


def test_a_thread_never_spans_more_than_the_maximum() -> None:
    # One pair talking every 20 minutes for eight hours: each reply is within the idle gap.
    messages = [
        msg(f"m{k}", "alice" if k % 2 else "bob", 20 * k, f"{'bob' if k % 2 else 'alice'}: step {k} of the upgrade")
        for k in range(25)
    ]
    threads, _ = assign(messages)
    position = {m.id: m.sent_at for m in messages}
    for thread in threads:
        assert position[thread[-1]] - position[thread[0]] <= SETTINGS.max_span


def test_output_is_deterministic() -> None:
    messages = busy_channel(count=40)
    first = assign(messages)
    assert assign(messages) == first
    fresh = ReplyModel.load()
    assert assign_learned(messages, NameIndex(messages), SETTINGS, fresh) == first


def test_a_model_for_other_features_is_refused(tmp_path) -> None:
    import json

    data = json.loads(MODEL_PATH.read_text(encoding="utf-8"))
    data["features"] = data["features"][:-1]
    path = tmp_path / "model.json"
    path.write_text(json.dumps(data), encoding="utf-8")
    with pytest.raises(ValueError, match="features"):
        ReplyModel.load(path)


def test_a_me_too_right_after_a_new_question_joins_that_question() -> None:
    messages = [
        msg("a1", "ajie", 0, "点图标没反应 重启电脑也不行"),
        msg("a2", "kk", 2, "我之前也遇到过一次 后来好像自己好了"),
        msg("b1", "tang", 3, "顺便问下 iPhone 上相册备份为啥一切到后台就停了"),
        msg("b2", "liu", 4, "我也遇到了 得一直开着 app 才行"),
    ]
    threads, links = assign(messages)
    assert links["b2"] == "b1"
    assert thread_of(threads, "b2") == ["b1", "b2"]


@pytest.mark.parametrize("assigner", ["learned", "rules"])
def test_threads_do_not_depend_on_the_string_hash_seed(assigner: str, tmp_path) -> None:
    """Sets of tokens and names iterate in hash order, which changes with every process."""
    talk = [
        bundle_message("p1", "ann", 0, "the kernel panics on boot after the upgrade"),
        bundle_message("p2", "bob", 0, "wifi drops every hour on my laptop"),
        bundle_message("p3", "cid", 1, "@ann @bob try the previous kernel from the grub menu"),
        *(
            bundle_message(f"q{k}", f"u{k}", 2 + k, f"u{k + 1}: sound driver module {k} fails, dmesg says {k}")
            for k in range(8)
        ),
    ]
    members = [{"senderRef": name, "displayName": name} for name in ("ann", "bob", "cid", *(f"u{k}" for k in range(9)))]
    bundle = write_bundle(tmp_path / "bundle", talk, members=members)
    script = (
        "from threadkeep.api import threads_of; from threadkeep.threads import ThreadSettings; "
        f"print([t.message_ids for t in threads_of({str(bundle)!r}, None, ThreadSettings(assigner={assigner!r}))[1]])"
    )
    outputs = {
        subprocess.run(
            [sys.executable, "-c", script],
            env={**os.environ, "PYTHONHASHSEED": seed},
            capture_output=True,
            text=True,
            check=True,
        ).stdout
        for seed in ("1", "2", "3", "4", "5", "6")
    }
    assert len(outputs) == 1
