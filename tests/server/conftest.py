"""Stores shared by the server tests: the sample corpus with the real model, built once per run."""

from __future__ import annotations

import shutil
import socket
import threading
import time
from pathlib import Path

import pytest

from threadkeep.api import KnowledgeBase
from threadkeep.embed import E5Embedder

SAMPLES = Path(__file__).resolve().parents[2] / "src" / "threadkeep" / "samples"
ASK_QUESTION = "装客户端报0x80070005怎么办"
OFF_TOPIC_QUESTION = "What is a good recipe for sourdough bread?"


@pytest.fixture(scope="session")
def embedder() -> E5Embedder:
    return E5Embedder()


@pytest.fixture(scope="session")
def sample_db(tmp_path_factory: pytest.TempPathFactory, embedder: E5Embedder) -> Path:
    """The sample support group and product docs, ingested with the real model (about 10-40 s on 2 cores).

    Read-only for the tests: a test that writes copies it first (`copy_db`).
    """
    path = tmp_path_factory.mktemp("server-sample") / "sample.db"
    with KnowledgeBase.open(path, embedder) as kb:
        kb.ingest(SAMPLES / "support_group")
        kb.ingest(SAMPLES / "docs")
    return path


def copy_db(source: Path, folder: Path) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    target = folder / source.name
    for suffix in ("", "-wal", "-shm"):
        extra = source.with_name(source.name + suffix)
        if extra.exists():
            shutil.copy(extra, folder / extra.name)
    return target


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


def wait_for_port(host: str, port: int, timeout: float = 30.0) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        with socket.socket() as probe:
            if probe.connect_ex((host, port)) == 0:
                return
        time.sleep(0.05)
    raise TimeoutError(f"nothing listening on {host}:{port} after {timeout} s")


class LiveServer:
    """A uvicorn server in a thread of the test process, on a free loopback port."""

    def __init__(self, app) -> None:
        import uvicorn

        self.port = free_port()
        self.url = f"http://127.0.0.1:{self.port}"
        config = uvicorn.Config(app, host="127.0.0.1", port=self.port, log_level="warning", lifespan="off")
        self.server = uvicorn.Server(config)
        self.thread = threading.Thread(target=self.server.run, daemon=True)

    def __enter__(self) -> LiveServer:
        self.thread.start()
        wait_for_port("127.0.0.1", self.port)
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.server.should_exit = True
        self.thread.join(timeout=10)
