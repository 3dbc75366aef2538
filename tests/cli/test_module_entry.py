"""`python -m threadkeep` runs the same command as the `threadkeep` script."""

import json
import subprocess
import sys
from pathlib import Path


def test_python_dash_m_runs_the_command(tmp_path: Path) -> None:
    transcript = tmp_path / "chat.txt"
    transcript.write_text("> how do I reset the router?\nHold the button for ten seconds.\n", encoding="utf-8")
    done = subprocess.run(
        [sys.executable, "-m", "threadkeep", "threads", str(transcript), "--format", "transcript", "--jsonl"],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 0, done.stderr
    rows = [json.loads(line) for line in done.stdout.splitlines() if line.strip()]
    assert len(rows) == 2
    assert len({row["thread"] for row in rows}) == 1
