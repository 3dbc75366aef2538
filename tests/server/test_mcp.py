"""The MCP server over stdio, driven by the official `mcp` client as an assistant would."""

from __future__ import annotations

import json
import os
import sys
from importlib.metadata import version
from pathlib import Path

import anyio
import pytest
from mcp import Client
from mcp.client.stdio import StdioServerParameters

from threadkeep.embed import E5Embedder

from .conftest import ASK_QUESTION, OFF_TOPIC_QUESTION, copy_db

TOOLS = {"search", "ask", "get_thread", "list_conversations", "list_documents", "stats", "ingest"}


@pytest.fixture(scope="module")
def setup(sample_db: Path, tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    folder = tmp_path_factory.mktemp("mcp")
    allowed, outside = folder / "allowed", folder / "outside"
    allowed.mkdir()
    outside.mkdir()
    (allowed / "notes.md").write_text("# 值班记录\n\n## 重启服务\n\n先停止同步服务，再重新启动。\n", "utf-8")
    (outside / "private.md").write_text("# Private\n\nnot for the assistant\n", "utf-8")
    (allowed / "link.md").symlink_to(outside / "private.md")
    # A copy, so the ingest call below leaves the store the other server tests read unchanged.
    return {"db": copy_db(sample_db, folder / "store"), "allowed": allowed, "outside": outside}


# The server runs the sources under test, also when they come first on PYTHONPATH.
SOURCES = {"PYTHONPATH": os.environ["PYTHONPATH"]} if "PYTHONPATH" in os.environ else {}


def server_parameters(setup: dict[str, Path], *extra: str) -> StdioServerParameters:
    return StdioServerParameters(
        command=sys.executable,
        args=["-m", "threadkeep.cli", "mcp", "--db", str(setup["db"]), *extra],
        env={"THREADKEEP_EMBEDDER": E5Embedder.name, "THREADKEEP_MCP_INGEST_ROOTS": str(setup["allowed"]), **SOURCES},
    )


def payload(result) -> dict:
    assert not result.is_error, result.content
    data = result.structured_content
    assert data == json.loads(result.content[0].text)  # the same JSON as text, for clients without structure
    return data


def error_text(result) -> str:
    assert result.is_error
    return result.content[0].text


def test_stdio_session(setup):
    async def session() -> None:
        async with Client(server_parameters(setup), read_timeout_seconds=120) as client:
            tools = {tool.name: tool for tool in (await client.list_tools()).tools}
            assert set(tools) == TOOLS
            for tool in tools.values():
                assert tool.description and len(tool.description) > 60, tool.name
            assert "computed by the server" in tools["ask"].description
            assert "as given" in tools["ask"].description
            assert "'allowed'" in tools["ingest"].description  # the folder's name, not where it is
            assert str(setup["allowed"]) not in tools["ingest"].description
            assert tools["search"].input_schema["properties"]["query"]["maxLength"] == 2000
            assert tools["search"].annotations.read_only_hint is True

            found = payload(await client.call_tool("search", {"query": "0x80070005", "k": 3}))
            assert 0 < len(found["hits"]) <= 3 and any("0x80070005" in hit["text"] for hit in found["hits"])
            documents_only = {"query": "0x80070005", "source_type": "document"}
            assert {h["source_type"] for h in payload(await client.call_tool("search", documents_only))["hits"]} == {
                "document"
            }

            answer = payload(await client.call_tool("ask", {"question": ASK_QUESTION}))
            assert answer["status"] == "answered"
            assert answer["groups"]["documents"] and answer["groups"]["chat"]
            citation = answer["groups"]["chat"][0]
            assert citation["date"].startswith("2026-") and citation["label"]
            assert "text" not in answer  # each excerpt once: the citations carry them
            serialized = json.dumps(answer, ensure_ascii=False)
            assert all(serialized.count(json.dumps(c["excerpt"], ensure_ascii=False)[1:-1]) == 1 for c in [citation])
            assert "nearest" in tools["ask"].description and "Not an answer" in tools["ask"].description

            thread = payload(await client.call_tool("get_thread", {"chunk_id": citation["chunk_id"]}))
            assert [m["id"] for m in thread["messages"] if m["cited"]] == citation["evidence_ids"]
            by_message = {"conversation": citation["source_ref"], "message_id": citation["evidence_ids"][0]}
            assert payload(await client.call_tool("get_thread", by_message))["messages"]

            refused = payload(await client.call_tool("ask", {"question": OFF_TOPIC_QUESTION}))
            assert refused["status"] == "no_answer" and refused["groups"] == {"documents": [], "chat": []}
            assert refused["reason"] and all(c["label"].startswith("Not an answer:") for c in refused["nearest"])

            conversations = payload(await client.call_tool("list_conversations", {}))["conversations"]
            assert {c["ref"] for c in conversations} == {"yunshu-support-1", "yunshu-support-2"}
            assert len(payload(await client.call_tool("list_documents", {}))["documents"]) == 3
            stats = payload(await client.call_tool("stats", {}))
            assert stats["conversations"] == 2 and stats["location"] == setup["db"].name

            assert "unknown chunk_id" in error_text(await client.call_tool("get_thread", {"chunk_id": "nope"}))
            assert "chunk_id" in error_text(await client.call_tool("get_thread", {}))
            too_long = await client.call_tool("search", {"query": "x" * 2001})
            assert "2000" in error_text(too_long)
            assert "k" in error_text(await client.call_tool("ask", {"question": "x", "k": 500}))

            for outside in (
                str(setup["outside"]),
                str(setup["outside"] / "private.md"),
                f"{setup['allowed']}/../outside/private.md",
                "../outside",
                "link.md",
                "/etc/passwd",
            ):
                assert "outside" in error_text(await client.call_tool("ingest", {"path": outside})), outside
            assert "link" in error_text(await client.call_tool("ingest", {"path": str(setup["allowed"])}))
            report = payload(await client.call_tool("ingest", {"path": "notes.md"}))
            assert report["documents"] == 1 and report["chunks"] >= 1
            assert len(payload(await client.call_tool("list_documents", {}))["documents"]) == 4

    anyio.run(session)


def test_handshake_era_clients_and_no_ingest_folders(setup):
    """An older client (initialize handshake) still works; without folders ingest says it is off."""

    async def session() -> None:
        parameters = server_parameters(setup)
        parameters.env = {"THREADKEEP_EMBEDDER": E5Embedder.name, **SOURCES}
        async with Client(parameters, mode="legacy", read_timeout_seconds=120) as client:
            tools = {tool.name: tool for tool in (await client.list_tools()).tools}
            assert set(tools) == TOOLS
            assert client.server_info.name == "threadkeep"
            assert client.server_info.version == version("threadkeep")
            assert "disabled" in tools["ingest"].description
            message = error_text(await client.call_tool("ingest", {"path": str(setup["allowed"] / "notes.md")}))
            assert "--ingest-root" in message
            assert payload(await client.call_tool("stats", {}))["conversations"] == 2

    anyio.run(session)
