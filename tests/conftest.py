from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path

import pytest

from threadkeep.embed import HashEmbedder
from threadkeep.threads import ThreadSettings
from threadkeep.threads.learned import reply_model

SAMPLES = Path(__file__).resolve().parents[1] / "src" / "threadkeep" / "samples"


def write_bundle(
    folder: Path, messages: list[dict], members: list[dict] | None = None, conversations: list[dict] | None = None
) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    lines = [json.dumps(message, ensure_ascii=False) for message in messages]
    (folder / "messages.jsonl").write_text("\n".join(lines) + "\n", encoding="utf-8")
    if members:
        (folder / "members.jsonl").write_text(
            "\n".join(json.dumps(member, ensure_ascii=False) for member in members) + "\n", encoding="utf-8"
        )
    if conversations:
        (folder / "conversations.jsonl").write_text(
            "\n".join(json.dumps(item, ensure_ascii=False) for item in conversations) + "\n", encoding="utf-8"
        )
    return folder


def learned_idle_minutes() -> float:
    """How long the packaged reply model keeps a thread open after its last message."""
    return reply_model().decoding(ThreadSettings()).idle.total_seconds() / 60


def message(mid: str, sender: str, minute: float, text: str = "", **extra) -> dict:
    """A bundle message in conversation g-1, `minute` minutes after 10:00 on 2026-05-14 (+08:00)."""
    seconds = round(minute * 60)
    hour, rest = divmod(seconds, 3600)
    stamp = f"2026-05-{14 + (10 + hour) // 24:02d}T{(10 + hour) % 24:02d}:{rest // 60:02d}:{rest % 60:02d}+08:00"
    return {
        "messageId": mid,
        "conversationRef": extra.pop("conversation", "g-1"),
        "senderRef": sender,
        "sentAt": stamp,
        "text": text,
        **extra,
    }


@pytest.fixture(autouse=True)
def ingest_waits_for_vectors(monkeypatch: pytest.MonkeyPatch) -> None:
    """`threadkeep ingest` waits for its vectors in every test (and the commands tests start), as
    `--wait` does: results stay deterministic and no background embedding process outlives a test.
    Tests of the background step unset it."""
    monkeypatch.setenv("THREADKEEP_INGEST_WAIT", "1")


@pytest.fixture
def hash_embedder() -> HashEmbedder:
    return HashEmbedder(64)


@pytest.fixture
def bundle_factory(tmp_path: Path) -> Callable[..., Path]:
    counter = iter(range(1000))

    def make(messages: list[dict], **kwargs) -> Path:
        return write_bundle(tmp_path / f"bundle-{next(counter)}", messages, **kwargs)

    return make
