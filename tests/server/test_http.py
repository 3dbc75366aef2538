"""The HTTP API: every endpoint on the sample corpus, the token rule, limits and path traversal."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest
from click.testing import CliRunner
from fastapi.testclient import TestClient

from threadkeep.api import KnowledgeBase
from threadkeep.cli import main
from threadkeep.errors import ConfigurationError
from threadkeep.generate import Endpoint
from threadkeep.server.http import MAX_BODY_BYTES, check_binding, create_app, is_loopback
from threadkeep.server.service import MAX_K, MAX_QUERY_CHARS, IngestRoots, Service

from .conftest import ASK_QUESTION, OFF_TOPIC_QUESTION, free_port, wait_for_port

TOKEN = "s3cret-token-for-tests-0123456789"
BASE = "http://127.0.0.1:8765"


@pytest.fixture(scope="module")
def service(sample_db, embedder) -> Iterator[Service]:
    service = Service.open(str(sample_db), embedder=embedder)
    yield service
    service.close()


@pytest.fixture(scope="module")
def client(service) -> Iterator[TestClient]:
    with TestClient(create_app(service), base_url=BASE) as client:
        yield client


def assert_error(response: httpx.Response, status: int, contains: str = "") -> str:
    assert response.status_code == status, response.text
    assert response.headers["content-type"].startswith("application/json")
    body = response.json()
    assert set(body) == {"error"} and isinstance(body["error"], str) and body["error"]
    assert contains.lower() in body["error"].lower()
    return body["error"]


# ---- the page and the schema -------------------------------------------------------------------


def test_page_and_static_files(client):
    page = client.get("/")
    assert page.status_code == 200 and page.headers["content-type"].startswith("text/html")
    assert '<script src="/static/app.js"' in page.text and "/static/app.css" in page.text
    assert page.headers["x-content-type-options"] == "nosniff"
    assert "default-src 'self'" in page.headers["content-security-policy"]
    script = client.get("/static/app.js")
    assert script.status_code == 200 and "javascript" in script.headers["content-type"]
    assert '"/api/ask"' in script.text and "/api/thread" in script.text
    assert client.get("/static/app.css").headers["content-type"].startswith("text/css")


def test_openapi_schema_lists_every_endpoint(client):
    schema = client.get("/openapi.json").json()
    paths = schema["paths"]
    assert {"get", "post"} <= set(paths["/api/ask"])
    assert "post" in paths["/api/ingest"]
    for path in ("/api/search", "/api/thread", "/api/conversations", "/api/documents", "/api/stats"):
        assert "get" in paths[path], path
    search_params = {p["name"]: p for p in paths["/api/search"]["get"]["parameters"]}
    assert search_params["q"]["schema"]["maxLength"] == MAX_QUERY_CHARS
    assert search_params["k"]["schema"]["maximum"] == MAX_K
    assert "get" in paths["/api/overview"]


def test_interactive_docs_and_favicon_are_served_from_here(client):
    docs = client.get("/docs")
    assert docs.status_code == 200 and docs.headers["content-type"].startswith("text/html")
    assert '<script src="/static/docs.js"' in docs.text and "https://" not in docs.text
    script = client.get("/static/docs.js")
    assert script.status_code == 200 and "/openapi.json" in script.text and "https://" not in script.text
    for path in ("/favicon.ico", "/static/favicon.svg"):
        icon = client.get(path)
        assert icon.status_code == 200 and icon.headers["content-type"] == "image/svg+xml"
        assert icon.text.startswith("<svg")
    assert 'rel="icon"' in client.get("/").text


def test_overview_for_the_start_page(client):
    overview = client.get("/api/overview").json()
    assert overview["stats"]["documents"] == 3
    assert [item["ref"] for item in overview["conversations"]] == ["yunshu-support-1", "yunshu-support-2"]
    assert len(overview["documents"]) == 3
    examples = overview["example_questions"]
    assert 1 <= len(examples) <= 3
    for question in examples:
        assert client.get("/api/ask", params={"q": question}).json()["status"] == "answered"


def test_thread_with_the_messages_around_it(client):
    answer = client.get("/api/ask", params={"q": ASK_QUESTION}).json()
    chunk_id = answer["groups"]["chat"][0]["chunk_id"]
    bare = client.get("/api/thread", params={"chunk_id": chunk_id}).json()["messages"]
    around = client.get("/api/thread", params={"chunk_id": chunk_id, "context": 3}).json()["messages"]
    assert all(message["in_thread"] for message in bare)
    assert [m["id"] for m in around if m["in_thread"]] == [m["id"] for m in bare]
    inside = [index for index, message in enumerate(around) if message["in_thread"]]
    before, after = inside[0], len(around) - 1 - inside[-1]
    assert before + after > 0 and before <= 3 and after <= 3  # other people's lines inside the thread stay shown
    assert not any(m["cited"] for m in around if not m["in_thread"])
    assert_error(client.get("/api/thread", params={"chunk_id": chunk_id, "context": 99}), 422, "context")
    assert_error(client.get("/api/thread", params={"chunk_id": "nope"}), 404, "unknown chunk_id")


# ---- the read endpoints ------------------------------------------------------------------------


def test_stats_conversations_documents(client):
    stats = client.get("/api/stats").json()
    assert stats["conversations"] == 2 and stats["documents"] == 3 and stats["chunks"] > 100
    conversations = client.get("/api/conversations").json()["conversations"]
    assert {item["ref"] for item in conversations} == {"yunshu-support-1", "yunshu-support-2"}
    assert all(item["title"] and item["messages"] > 0 for item in conversations)
    documents = client.get("/api/documents").json()["documents"]
    assert len(documents) == 3 and all(item["updated_at"] for item in documents)


def test_search_with_filters(client):
    hits = client.get("/api/search", params={"q": "0x80070005", "k": 4}).json()["hits"]
    assert 0 < len(hits) <= 4
    assert {"chunk_id", "source_type", "title", "text", "occurred_at", "score"} <= set(hits[0])
    assert any("0x80070005" in hit["text"] for hit in hits)
    documents = client.get("/api/search", params={"q": "0x80070005", "source_type": "document"}).json()["hits"]
    assert documents and all(hit["source_type"] == "document" for hit in documents)
    only = client.get("/api/search", params={"q": "授权", "conversation": "yunshu-support-2"}).json()["hits"]
    assert only and all(hit["source_ref"] == "yunshu-support-2" for hit in only)
    assert_error(client.get("/api/search", params={"q": "x", "source_type": "email"}), 422, "source_type")


def test_search_per_source_interleaves_documents_and_chat(client):
    hits = client.get("/api/search", params={"q": "点图标没反应", "per_source": 2}).json()["hits"]
    kinds = [hit["source_type"] for hit in hits]
    assert sorted(kinds) == ["chat", "chat", "document", "document"] and kinds[0] != kinds[1]
    assert {"chunk_id", "source_type", "title", "text", "occurred_at", "score"} <= set(hits[0])
    assert_error(client.get("/api/search", params={"q": "x", "per_source": 0}), 422, "per_source")


def check_grouped_answer(answer: dict) -> None:
    assert answer["status"] == "answered"
    groups = answer["groups"]
    assert groups["documents"] and groups["chat"]
    for citation in groups["documents"] + groups["chat"]:
        assert citation["date"][:4] == "2026" and citation["label"] and citation["excerpt"]
    assert all(c["source_type"] == "chat" and c["evidence_ids"] for c in groups["chat"])
    assert all(c["source_type"] == "document" for c in groups["documents"])


def test_ask_get_and_post_give_the_same_grouped_answer(client):
    by_get = client.get("/api/ask", params={"q": ASK_QUESTION}).json()
    check_grouped_answer(by_get)
    by_post = client.post("/api/ask", json={"question": ASK_QUESTION}).json()

    def cited(answer: dict) -> list[tuple[str, str]]:  # scores move with the clock (time decay)
        return [(c["chunk_id"], c["label"]) for group in answer["groups"].values() for c in group]

    assert by_post["status"] == "answered" and cited(by_post) == cited(by_get)
    states = {citation["resolution_state"] for citation in by_get["groups"]["chat"]}
    assert "resolved" in states


def test_ask_refuses_off_topic_questions(client):
    answer = client.get("/api/ask", params={"q": OFF_TOPIC_QUESTION}).json()
    assert answer["status"] == "no_answer"
    assert answer["groups"] == {"documents": [], "chat": []}
    assert answer["text"].startswith("No answer")
    assert answer["reason"] and answer["reason"] in answer["text"]
    assert answer["nearest"] and all(c["label"].startswith("Not an answer:") for c in answer["nearest"])


def test_an_error_code_the_store_never_mentions_is_refused_by_name(client):
    answer = client.get("/api/ask", params={"q": "报错 E4242 怎么办"}).json()
    assert answer["status"] == "no_answer" and "E4242" in answer["reason"]


def test_thread_by_chunk_and_by_message(client):
    answer = client.post("/api/ask", json={"question": ASK_QUESTION}).json()
    citation = answer["groups"]["chat"][0]
    view = client.get("/api/thread", params={"chunk_id": citation["chunk_id"]}).json()
    assert view["conversation"] == citation["source_ref"]
    cited = [message["id"] for message in view["messages"] if message["cited"]]
    assert cited == citation["evidence_ids"]
    first = citation["evidence_ids"][0]
    around = client.get("/api/thread", params={"conversation": citation["source_ref"], "message_id": first}).json()
    assert [m["id"] for m in around["messages"] if m["cited"]] == [first]
    assert first in [m["id"] for m in around["messages"]]


def test_thread_errors(client):
    assert_error(client.get("/api/thread"), 400, "chunk_id")
    assert_error(client.get("/api/thread", params={"conversation": "yunshu-support-1"}), 400, "message_id")
    assert_error(client.get("/api/thread", params={"chunk_id": "no-such-chunk"}), 404, "no-such-chunk")
    document_chunk = client.get("/api/search", params={"q": "0x80070005", "source_type": "document"}).json()
    assert_error(client.get("/api/thread", params={"chunk_id": document_chunk["hits"][0]["chunk_id"]}), 404)
    missing = {"conversation": "yunshu-support-1", "message_id": "nope"}
    assert_error(client.get("/api/thread", params=missing), 404, "nope")


# ---- limits and errors -------------------------------------------------------------------------


def test_query_and_k_are_bounded(client):
    too_long = "问" * (MAX_QUERY_CHARS + 1)
    assert_error(client.get("/api/search", params={"q": too_long}), 422, "at most 2000")
    assert_error(client.get("/api/ask", params={"q": too_long}), 422, "at most 2000")
    assert_error(client.post("/api/ask", json={"question": too_long}), 422, "question")
    assert_error(client.get("/api/search", params={"q": "x", "k": 0}), 422, "k")
    assert_error(client.get("/api/search", params={"q": "x", "k": MAX_K + 1}), 422, "k")
    assert_error(client.get("/api/search", params={"q": "x", "k": "many"}), 422, "k")
    assert_error(client.get("/api/search"), 422, "q")
    assert_error(client.get("/api/search", params={"q": "   "}), 400, "empty")
    assert_error(client.get("/api/search", params={"q": "x" * 60_000}), 414, "too long")


def test_oversized_bodies_are_refused(client):
    big = json.dumps({"question": "x" * (MAX_BODY_BYTES + 10)})
    headers = {"content-type": "application/json"}
    assert_error(client.post("/api/ask", content=big, headers=headers), 413, "too large")

    def chunks() -> Iterator[bytes]:  # no Content-Length: counted while it streams in
        for _ in range(40):
            yield b" " * 4096

    assert_error(client.post("/api/ask", content=chunks(), headers=headers), 413, "too large")


def test_bad_requests_get_json_errors(client):
    assert_error(client.post("/api/ask", content="question=hi", headers={"content-type": "text/plain"}), 415, "JSON")
    assert_error(client.post("/api/ask", content="{not json", headers={"content-type": "application/json"}), 422)
    assert_error(client.post("/api/ask", json={"k": 3}), 422, "question")
    assert_error(client.get("/api/nothing-here"), 404, "not found")
    assert_error(client.delete("/api/stats"), 405, "method")
    assert_error(client.get("/static/../../../etc/passwd"), 404)
    assert_error(client.get("/static/%2e%2e/%2e%2e/etc/passwd"), 404)
    assert_error(client.get("/static/app.js/../../../../etc/hostname"), 404)


def test_only_loopback_host_names_without_a_token(service):
    with TestClient(create_app(service), base_url="http://rebound.example:8765") as foreign:
        assert_error(foreign.get("/api/stats"), 421, "localhost")
    for base in ("http://localhost:8765", "http://[::1]:8765", "http://127.0.0.1"):
        with TestClient(create_app(service), base_url=base) as local:
            assert local.get("/api/stats").status_code == 200, base


# ---- the token ---------------------------------------------------------------------------------


def test_token_is_required_on_every_api_call(service):
    with TestClient(create_app(service, token=TOKEN), base_url="http://kb.example.org") as remote:
        calls = [
            ("GET", "/api/stats", None),
            ("GET", "/api/conversations", None),
            ("GET", "/api/documents", None),
            ("GET", "/api/search?q=x", None),
            ("GET", "/api/ask?q=x", None),
            ("POST", "/api/ask", {"question": "x"}),
            ("GET", "/api/thread?chunk_id=x", None),
            ("POST", "/api/ingest", {"path": "/etc"}),
        ]
        for method, path, body in calls:
            assert_error(remote.request(method, path, json=body), 401, "token")
            wrong = {"Authorization": f"Bearer {TOKEN}x"}
            assert_error(remote.request(method, path, json=body, headers=wrong), 401, "token")
        assert remote.get("/api/stats", headers={"Authorization": f"Basic {TOKEN}"}).status_code == 401
        good = {"Authorization": f"Bearer {TOKEN}"}
        assert remote.get("/api/stats", headers=good).json()["conversations"] == 2
        assert remote.get("/").status_code == 200  # the page itself holds no data; it asks for the token


def test_binding_rule():
    for host in ("127.0.0.1", "127.0.0.2", "localhost", "::1", "[::1]"):
        assert is_loopback(host), host
        check_binding(host, None)
    for host in ("0.0.0.0", "::", "192.168.1.20", "example.org", ""):
        assert not is_loopback(host), host
        with pytest.raises(ConfigurationError, match="without a token"):
            check_binding(host, None)
        check_binding(host, TOKEN)
    with pytest.raises(ConfigurationError, match="at least 16"):
        check_binding("0.0.0.0", "short")


def test_cli_refuses_a_public_address_without_a_token(tmp_path, monkeypatch):
    monkeypatch.delenv("THREADKEEP_TOKEN", raising=False)
    result = CliRunner().invoke(main, ["serve", "--host", "0.0.0.0", "--db", str(tmp_path / "kb.db")])
    assert result.exit_code == 2
    assert "without a token" in result.output
    assert not (tmp_path / "kb.db").exists()


def test_live_server_on_all_addresses_requires_the_token(tmp_path):
    """`threadkeep serve --host 0.0.0.0 --token ...` in a real process, reached over TCP."""
    port = free_port()
    env = {**os.environ, "THREADKEEP_EMBEDDER": "hash-64", "THREADKEEP_TOKEN": TOKEN}
    command = [sys.executable, "-m", "threadkeep.cli", "serve", "--host", "0.0.0.0", "--port", str(port)]
    KnowledgeBase.open(tmp_path / "kb.db").close()  # serve opens an existing store (no ingest folders)
    server = subprocess.Popen(
        [*command, "--db", str(tmp_path / "kb.db")], env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT
    )
    try:
        wait_for_port("127.0.0.1", port)
        with httpx.Client(base_url=f"http://127.0.0.1:{port}", timeout=10) as http:
            assert_error(http.get("/api/stats"), 401, "token")
            good = {"Authorization": f"Bearer {TOKEN}"}
            assert http.get("/api/stats", headers=good).json()["conversations"] == 0
            big = b"{" + b" " * (MAX_BODY_BYTES + 1) + b"}"
            headers = {**good, "content-type": "application/json"}
            assert_error(http.post("/api/ask", content=big, headers=headers), 413, "too large")
            assert "server" not in http.get("/", headers=good).headers
            # A full-length Chinese query fits through the server (percent-encoded it is 18 KB); one more is refused.
            longest = "问" * MAX_QUERY_CHARS
            assert http.get("/api/search", params={"q": longest}, headers=good).json()["hits"] == []
            too_long = http.get("/api/search", params={"q": longest + "问"}, headers=good)
            assert_error(too_long, 422, "at most 2000")
    finally:
        server.terminate()
        server.wait(timeout=10)
        assert server.stdout is not None
        server.stdout.close()


# ---- ingest ------------------------------------------------------------------------------------


@pytest.fixture
def folders(tmp_path: Path) -> dict[str, Path]:
    allowed, outside = tmp_path / "allowed", tmp_path / "outside"
    (allowed / "docs").mkdir(parents=True)
    outside.mkdir()
    (allowed / "docs" / "guide.md").write_text("# Guide\n\n## Install\n\nRun the installer as admin.\n", "utf-8")
    (outside / "secret.md").write_text("# Secret\n\nDo not read me.\n", "utf-8")
    return {"allowed": allowed, "outside": outside, "tmp": tmp_path}


def ingest_client(folders: dict[str, Path], roots: list[Path]) -> TestClient:
    service = Service.open(str(folders["tmp"] / "ingest.db"), IngestRoots(roots), embedder="hash-64")
    return TestClient(create_app(service), base_url=BASE)


def test_ingest_inside_the_configured_folder(folders):
    allowed = folders["allowed"]
    with ingest_client(folders, [allowed]) as client:
        report = client.post("/api/ingest", json={"path": str(allowed / "docs")}).json()
        assert report["format"] == "document" and report["documents"] == 1 and report["chunks"] >= 1
        assert report["path"] == "docs"  # relative to the ingest folder: no server path in any response
        again = client.post("/api/ingest", json={"path": "docs/guide.md"}).json()  # relative to the folder
        assert again["documents"] == 1 and again["documents_rebuilt"] == 0
        assert [d["title"] for d in client.get("/api/documents").json()["documents"]] == ["Guide"]


def test_ingest_refuses_paths_outside_the_folders(folders):
    allowed, outside = folders["allowed"], folders["outside"]
    (allowed / "escape").symlink_to(outside, target_is_directory=True)
    (allowed / "docs" / "secret-link.md").symlink_to(outside / "secret.md")
    (allowed / "mixed").mkdir()
    (allowed / "mixed" / "ok.md").write_text("# Ok\n\ntext\n", "utf-8")
    (allowed / "mixed" / "leak.md").symlink_to(outside / "secret.md")
    with ingest_client(folders, [allowed]) as client:
        attempts = [
            str(outside),
            str(outside / "secret.md"),
            "/etc",
            "/etc/passwd",
            f"{allowed}/../outside/secret.md",
            "../outside",
            "docs/../../outside/secret.md",
            str(allowed / "escape"),
            str(allowed / "escape" / "secret.md"),
            "escape/secret.md",
            str(allowed / "docs" / "secret-link.md"),
            str(allowed.parent),
        ]
        for attempt in attempts:
            assert_error(client.post("/api/ingest", json={"path": attempt}), 403, "outside")
        assert_error(client.post("/api/ingest", json={"path": str(allowed / "mixed")}), 403, "leak.md")
        assert_error(client.post("/api/ingest", json={"path": str(allowed / "docs")}), 403, "secret-link.md")
        assert_error(client.post("/api/ingest", json={"path": "missing.md"}), 404, "does not exist")
        assert_error(client.post("/api/ingest", json={"path": "a\x00b"}), 400, "not a valid path")
        assert_error(client.post("/api/ingest", json={"path": str(allowed), "format": "nope"}), 400, "format")
        assert client.get("/api/documents").json()["documents"] == []
    assert not any(folders["outside"].glob("*.db"))


def test_no_response_names_a_server_path(folders):
    allowed, tmp = folders["allowed"], folders["tmp"]
    bundle = allowed / "exports" / "group"
    bundle.mkdir(parents=True)
    line = {"messageId": "m1", "conversationRef": "g", "senderRef": "u1", "sentAt": "2026-05-14T10:00:00+08:00"}
    (bundle / "messages.jsonl").write_text(json.dumps(line) + "\n{not json\n", "utf-8")
    (allowed / "odd.bin").write_bytes(b"\x00\x01 not a chat export")
    with ingest_client(folders, [allowed]) as client:
        report = client.post("/api/ingest", json={"path": str(bundle)})
        assert report.status_code == 200, report.text
        assert report.json()["path"] == "exports/group" and report.json()["messages_read"] == 1
        (skip,) = report.json()["skipped"]["first"]
        assert skip["file"] == "exports/group/messages.jsonl" and skip["line"] == 2, skip  # as sent: from the folder
        assert skip["reason"].startswith("not valid JSON")
        assert client.post("/api/ingest", json={"path": "docs"}).json()["path"] == "docs"
        stats = client.get("/api/stats")
        assert stats.json()["location"] == "ingest.db" and stats.json()["documents"] == 1
        unknown = client.post("/api/ingest", json={"path": "odd.bin"})
        assert unknown.status_code == 200 and [item["file"] for item in unknown.json()["not_read"]["first"]] == [
            "odd.bin"
        ]
        assert_error(client.post("/api/ingest", json={"path": "/etc/passwd"}), 403, "'allowed'")
        forced = client.post("/api/ingest", json={"path": "odd.bin", "format": "bundle"})  # the reader refuses it
        responses = (report, stats, unknown, forced, client.get("/api/conversations"), client.get("/api/documents"))
        for response in responses:
            assert str(tmp) not in response.text, response.text


def test_a_search_answers_while_an_ingest_is_still_running(folders):
    """The ingest reads a named pipe that gets no data until the search has answered: the ingest
    cannot finish first, so the search answering proves it did not wait for the ingest."""
    from threading import Thread

    from .conftest import LiveServer

    allowed = folders["allowed"]
    pipe = allowed / "slow.txt"
    os.mkfifo(pipe)
    service = Service.open(str(folders["tmp"] / "ingest.db"), IngestRoots([allowed]), embedder="hash-64")
    results: dict[str, httpx.Response] = {}
    try:
        with LiveServer(create_app(service)) as server, httpx.Client(base_url=server.url, timeout=60) as http:
            assert http.post("/api/ingest", json={"path": "docs"}).status_code == 200
            body = {"path": "slow.txt", "format": "transcript"}
            ingest = Thread(target=lambda: results.update(ingest=http.post("/api/ingest", json=body)))
            ingest.start()
            with pipe.open("w", encoding="utf-8") as writer:  # opens once the ingest has opened the pipe
                found = http.get("/api/search", params={"q": "installer"})
                assert found.status_code == 200 and found.json()["hits"]
                assert "ingest" not in results and ingest.is_alive()
                writer.write("> the sync is stuck\nrestart it\n> ok thanks\nyou are welcome\n> bye\n")
            ingest.join(timeout=60)
            assert results["ingest"].status_code == 200, results["ingest"].text
            assert results["ingest"].json()["messages_read"] >= 3
    finally:
        service.close()


def test_a_killed_ingest_worker_fails_that_ingest_only(folders):
    from threading import Thread

    allowed = folders["allowed"]
    os.mkfifo(allowed / "stuck.txt")
    service = Service.open(str(folders["tmp"] / "ingest.db"), IngestRoots([allowed]), embedder="hash-64")
    results: dict[str, httpx.Response] = {}
    try:
        with TestClient(create_app(service), base_url=BASE) as client:
            body = {"path": "stuck.txt", "format": "transcript"}
            ingest = Thread(target=lambda: results.update(stuck=client.post("/api/ingest", json=body)))
            ingest.start()
            with (allowed / "stuck.txt").open("w"):  # the worker is reading the pipe now
                service._worker._process.kill()
                ingest.join(timeout=60)
            assert_error(results["stuck"], 500, "stopped unexpectedly")
            again = client.post("/api/ingest", json={"path": "docs"})  # a new worker takes the next ingest
            assert again.status_code == 200 and again.json()["documents"] == 1
    finally:
        service.close()


def test_paths_are_shown_relative_to_their_ingest_folder(tmp_path):
    (tmp_path / "a" / "deep").mkdir(parents=True)
    (tmp_path / "b").mkdir()
    roots = IngestRoots([tmp_path / "a", tmp_path / "a" / "deep", tmp_path / "b"])
    a = (tmp_path / "a").resolve()
    assert roots.public(a / "x" / "f.json") == "x/f.json"
    assert roots.public(a / "deep" / "g.txt") == "g.txt"  # the deepest folder holding it
    assert roots.public(a) == "." and roots.public("/etc/passwd") == "passwd"
    assert roots.public_text(f"cannot read {a}/x/f.json in {a}, not {a}x/y") == f"cannot read x/f.json in ., not {a}x/y"
    assert str(tmp_path) not in roots.describe() and "'a'" in roots.describe()


def test_ingest_is_off_without_configured_folders(folders):
    with ingest_client(folders, []) as client:
        path = str(folders["allowed"] / "docs")
        assert_error(client.post("/api/ingest", json={"path": path}), 403, "--ingest-root")


def test_a_failing_model_endpoint_still_gives_the_computed_answer(service):
    unreachable = Endpoint(f"http://127.0.0.1:{free_port()}/v1", "no-model", timeout=2.0)
    with TestClient(create_app(Service(service.kb, endpoint=unreachable)), base_url=BASE) as client:
        answer = client.post("/api/ask", json={"question": ASK_QUESTION}).json()
    check_grouped_answer(answer)
    assert answer["generated_text"] is None and answer["generation_error"]
