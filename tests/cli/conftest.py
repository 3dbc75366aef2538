"""The `threadkeep` command run through click's runner, with the lexical test embedder and a private default store."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest
from click.testing import CliRunner, Result

from threadkeep.cli import main

SAMPLES = Path(__file__).resolve().parents[2] / "src" / "threadkeep" / "samples"


@pytest.fixture
def default_db(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """Where the store goes when no --db is given (never the user's own)."""
    location = tmp_path / "data" / "threadkeep.db"
    monkeypatch.setenv("THREADKEEP_DB", str(location))
    monkeypatch.setenv("THREADKEEP_EMBEDDER", "hash-256")
    monkeypatch.delenv("THREADKEEP_LLM_BASE_URL", raising=False)
    return location


@pytest.fixture
def cli(default_db: Path) -> Callable[..., Result]:
    def run(*args: str, input: str | None = None) -> Result:
        return CliRunner().invoke(main, list(args), input=input, catch_exceptions=False)

    return run
