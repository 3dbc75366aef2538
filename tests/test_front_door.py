"""The front door: one JSON shape per type whichever way it is asked for (CLI --json, HTTP, MCP),
and one error hierarchy that each of them turns into what its caller understands."""

from __future__ import annotations

import ast
import importlib
import inspect
import json
import pickle
import subprocess
import sys
from collections.abc import Iterator
from datetime import UTC, datetime
from pathlib import Path

import anyio
import pytest
from click.testing import CliRunner
from fastapi.testclient import TestClient
from mcp.server.mcpserver.exceptions import ToolError

from threadkeep import errors
from threadkeep.api import KnowledgeBase
from threadkeep.cli import main
from threadkeep.errors import (
    ConfigurationError,
    DocumentError,
    FileTooLargeError,
    StoreNotFound,
    ThreadkeepError,
)
from threadkeep.server.http import create_app
from threadkeep.server.mcp import build_server
from threadkeep.server.service import Service

SAMPLES = Path(__file__).resolve().parent.parent / "src" / "threadkeep" / "samples"
PACKAGE = SAMPLES.parent
EMBEDDER = "hash-256"
FLAGGED = ("yunshu-support-1", "yunshu-support-1:3")


@pytest.fixture(scope="module")
def store(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The sample group and documents, one message flagged for review and one conversation forgotten."""
    location = tmp_path_factory.mktemp("door") / "door.db"
    with KnowledgeBase.open(location, EMBEDDER) as kb:
        kb.ingest(SAMPLES / "support_group")
        kb.ingest(SAMPLES / "docs")
        kb.store.flag_for_review(*FLAGGED, "missing from the latest export", datetime(2026, 3, 1, tzinfo=UTC))
        forgotten = sorted(item.ref for item in kb.conversations())[-1]
        assert kb.forget(forgotten, now=datetime(2026, 3, 2, tzinfo=UTC)) is not None
    return location


@pytest.fixture(scope="module")
def service(store: Path) -> Iterator[Service]:
    service = Service(KnowledgeBase.open(store, EMBEDDER, create=False))
    yield service
    service.close()


@pytest.fixture
def cli_json(store: Path, monkeypatch: pytest.MonkeyPatch):
    monkeypatch.setenv("THREADKEEP_EMBEDDER", EMBEDDER)

    def run(*args: str) -> object:
        result = CliRunner().invoke(main, [*args, "--json", "--db", str(store)], catch_exceptions=False)
        assert result.exit_code == 0, result.output
        return json.loads(result.stdout)

    return run


def http(service: Service) -> TestClient:
    return TestClient(create_app(service), base_url="http://127.0.0.1")


def without_scores(result: dict) -> dict:
    return {**result, "hits": [{key: value for key, value in hit.items() if key != "score"} for hit in result["hits"]]}


def scores(result: dict) -> list[float]:
    return [hit["score"] for hit in result["hits"]]


def call_tool(service: Service, name: str, arguments: dict) -> dict:
    result = anyio.run(build_server(service).call_tool, name, arguments)
    assert not result.is_error, result.content
    return result.structured_content


# --- one shape per type ---------------------------------------------------------------------------


def test_search_hits_are_the_same_json_from_the_cli_http_and_mcp(cli_json, service: Service) -> None:
    query = "E1024"
    from_cli = cli_json("search", query, "--k", "4")
    from_http = http(service).get("/api/search", params={"q": query, "k": 4}).json()
    from_mcp = call_tool(service, "search", {"query": query, "k": 4})
    # Chat decays with age, measured from each call's own clock: scores may differ in the last digits.
    assert without_scores(from_cli) == without_scores(from_http) == without_scores(from_mcp)
    assert scores(from_http) == pytest.approx(scores(from_cli), rel=1e-6)
    assert scores(from_mcp) == pytest.approx(scores(from_cli), rel=1e-6)
    assert from_cli["hits"], "the sample corpus mentions E1024"
    assert set(from_cli["hits"][0]) == {
        "chunk_id", "source_type", "source_ref", "title", "text", "evidence_ids", "occurred_at",
        "resolution_state", "has_unresolved_media", "heading_path", "score",
    }  # fmt: skip


def test_listings_are_the_same_json_from_the_cli_http_and_mcp(cli_json, service: Service) -> None:
    client = http(service)
    conversations = cli_json("conversations")
    assert conversations == client.get("/api/conversations").json()["conversations"]
    assert conversations == call_tool(service, "list_conversations", {})["conversations"]
    assert all(item["first_message_at"] <= item["last_message_at"] for item in conversations)
    documents = cli_json("documents")
    # The server shows a document's file relative to its ingest folder, never where it is on the server.
    served = client.get("/api/documents").json()["documents"]
    assert [{**item, "path": Path(item["path"]).name} for item in documents] == served
    assert served == call_tool(service, "list_documents", {})["documents"]


def test_review_items_have_one_shape_whether_flagged_or_forgotten(cli_json) -> None:
    items = cli_json("review")
    reasons = [item["reason"] for item in items]
    assert reasons == ["missing from the latest export", "forgotten on request"]
    assert len({tuple(item) for item in items}) == 1, "every review item has the same keys"
    flagged, forgotten = items
    assert (flagged["conversation"], flagged["message_id"]) == FLAGGED and flagged["text"]
    assert forgotten["message_id"] is None and forgotten["title"] and forgotten["messages"] > 0


def test_normalized_messages_and_threads_have_their_types_shapes(tmp_path: Path) -> None:
    runner = CliRunner()
    bundle = str(SAMPLES / "support_group")
    lines = runner.invoke(main, ["normalize", bundle, "--jsonl"], catch_exceptions=False).stdout.splitlines()
    messages = [json.loads(line) for line in lines]
    assert set(messages[0]) == {
        "id", "conversation", "sender", "sent_at", "text", "kind", "role", "sender_name", "reply_to",
        "mentions", "recalled", "edited_at", "platform_thread", "metadata",
    }  # fmt: skip
    threads = json.loads(runner.invoke(main, ["threads", bundle, "--json"], catch_exceptions=False).stdout)
    links = runner.invoke(main, ["threads", bundle, "--jsonl"], catch_exceptions=False).stdout.splitlines()
    by_message = {record["id"]: record for record in map(json.loads, links)}
    assert sorted(by_message) == sorted(m["id"] for m in messages)
    for thread in threads:
        assert set(thread) == {"thread", "conversation", "message_ids", "reply_to"}
        assert {by_message[mid]["thread"] for mid in thread["message_ids"]} == {thread["thread"]}


def test_json_shapes_are_defined_on_the_types_not_in_the_front_door() -> None:
    """The CLI and the servers never build a hit, chunk, message or listing by hand: no dict literal
    there holds the keys only those types' `to_dict` write."""
    owned = {"chunk_id", "evidence_ids", "heading_path", "first_message_at", "flagged_at", "sent_at", "message_ids"}
    built = []
    for path in [PACKAGE / "cli.py", *sorted((PACKAGE / "server").glob("*.py"))]:
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.Dict):
                keys = {key.value for key in node.keys if isinstance(key, ast.Constant)}
                built += [f"{path.name}:{node.lineno}: {sorted(keys & owned)}"] if keys & owned else []
    assert built == []


# --- one error hierarchy ----------------------------------------------------------------------------


def test_every_error_class_is_in_the_one_hierarchy() -> None:
    """Each exception class threadkeep defines lives in threadkeep.errors and derives from ThreadkeepError."""
    elsewhere = []
    for path in sorted(PACKAGE.rglob("*.py")):
        name = ".".join(path.relative_to(PACKAGE.parent).with_suffix("").parts).removesuffix(".__init__")
        module = importlib.import_module(name)
        for value in vars(module).values():
            if inspect.isclass(value) and issubclass(value, BaseException) and value.__module__ == name:
                elsewhere.append(f"{name}.{value.__name__}")
    assert [name for name in elsewhere if not name.startswith("threadkeep.errors.")] == []
    defined = [value for value in vars(errors).values() if inspect.isclass(value) and issubclass(value, BaseException)]
    assert all(issubclass(kind, ThreadkeepError) for kind in defined if kind.__module__ == "threadkeep.errors")


def test_errors_cross_processes_whole() -> None:
    """The server's ingest worker sends its errors back pickled; each must come back as it was raised."""
    for error in (
        StoreNotFound("/data/team.db"),
        DocumentError(Path("docs/guide.pdf"), "not a PDF"),
        FileTooLargeError("file of 2 GB is larger than the 1 GB limit", 2 << 30, 1 << 30),
        ConfigurationError("unknown embedder 'x'"),
    ):
        copy = pickle.loads(pickle.dumps(error))
        assert type(copy) is type(error) and str(copy) == str(error) and vars(copy) == vars(error)


@pytest.mark.parametrize("name", ["e5-smal", "hash-x", "hash-0", "bogus"])
def test_a_mistyped_embedder_is_one_line_and_a_usage_status(name: str, store: Path, tmp_path: Path) -> None:
    env = {"THREADKEEP_EMBEDDER": name, "PATH": "", "PYTHONPATH": str(PACKAGE.parent)}
    new = str(tmp_path / "new.db")
    for args in (["search", "E1024", "--db", str(store)], ["ingest", str(SAMPLES / "docs"), "--db", new]):
        result = subprocess.run(
            [sys.executable, "-m", "threadkeep.cli", *args], capture_output=True, text=True, env=env, timeout=120
        )
        assert result.returncode == 2, result.stderr
        known = "known: e5-small, hash-<dim> (e.g. hash-256)"
        assert result.stderr.splitlines() == [f"error: unknown embedder {name!r} (set in THREADKEEP_EMBEDDER); {known}"]
        assert result.stdout == ""


def test_an_error_inside_the_knowledge_base_is_a_json_error_and_a_tool_error(
    store: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("THREADKEEP_EMBEDDER", "bogus")
    service = Service(KnowledgeBase.open(store, create=False))  # the embedder is loaded on first use
    try:
        response = http(service).get("/api/search", params={"q": "E1024"})
        assert response.status_code == 500
        assert response.json() == {"error": "unknown embedder 'bogus' (set in THREADKEEP_EMBEDDER); "
                                   "known: e5-small, hash-<dim> (e.g. hash-256)"}  # fmt: skip
        with pytest.raises(ToolError, match="unknown embedder 'bogus'"):
            anyio.run(build_server(service).call_tool, "search", {"query": "E1024"})
    finally:
        service.close()


def test_not_found_and_refused_keep_their_statuses(service: Service) -> None:
    client = http(service)
    assert client.get("/api/thread", params={"chunk_id": "nope"}).status_code == 404
    ingest = client.post("/api/ingest", json={"path": "anything"})
    assert ingest.status_code == 403 and "ingest is disabled" in ingest.json()["error"]
    with pytest.raises(ToolError, match="unknown chunk_id 'nope'"):
        anyio.run(build_server(service).call_tool, "get_thread", {"chunk_id": "nope"})


def test_the_cli_names_what_was_not_found(store: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("THREADKEEP_EMBEDDER", EMBEDDER)
    result = CliRunner().invoke(main, ["remove", "no-such.md", "--db", str(store)])
    assert result.exit_code == 1
    assert result.stderr.strip() == "error: no document 'no-such.md' in the store (see `threadkeep documents`)"
