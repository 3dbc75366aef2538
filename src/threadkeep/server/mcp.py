"""MCP server over stdio: the knowledge base as tools for an AI assistant.

    threadkeep mcp --db team.db --ingest-root ~/exports

Built on the official `mcp` SDK (2.x, `MCPServer`). Each tool calls
`service.Service`, which calls `threadkeep.api.KnowledgeBase`: no answer logic here.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from importlib.metadata import version as package_version
from typing import Annotated, Any, Literal

from mcp.server.mcpserver import MCPServer
from mcp.server.mcpserver.exceptions import ToolError
from mcp.types import ToolAnnotations
from pydantic import Field

from threadkeep.errors import ThreadkeepError
from threadkeep.server.service import (
    DEFAULT_ASK_K,
    DEFAULT_SEARCH_K,
    MAX_K,
    MAX_QUERY_CHARS,
    MAX_REF_CHARS,
    IngestRoots,
    Service,
)

INGEST_ROOTS_ENV = "THREADKEEP_MCP_INGEST_ROOTS"

INSTRUCTIONS = """\
threadkeep is a knowledge base built from chat exports (group chats, support groups, assistant \
conversations) and documents. Use `ask` for a question a person would ask ("how do I fix X"): it \
returns a cited answer, with documents and chat discussions in separate groups, each with its date \
and a label saying how sure it is. Relay those labels and dates as given. When the answer is \
`no_answer`, say so and give its `reason`; its `nearest` passages are labelled "Not an answer": you may \
mention them as related material, never as the answer. Use `search` to browse raw passages, \
`get_thread` to read a whole discussion behind a chat citation, and the list tools to see what the \
knowledge base holds."""

Query = Annotated[str, Field(description="What to look for, in any language.", max_length=MAX_QUERY_CHARS)]
Conversation = Annotated[
    str | None,
    Field(description="Only this conversation (a `ref` from list_conversations).", max_length=MAX_REF_CHARS),
]


def _call(service: Service, operation: Callable[[], dict]) -> dict:
    """The operation's result, or a tool error with the message a client may see."""
    try:
        return operation()
    except ThreadkeepError as error:
        raise ToolError(service.describe(error)) from error


def without_rendering(answer: dict) -> dict:
    """The answer without `text`, its plain-text rendering: the citations already carry every excerpt once."""
    return {key: value for key, value in answer.items() if key != "text"}


def build_server(service: Service) -> MCPServer:
    server = MCPServer(name="threadkeep", version=package_version("threadkeep"), instructions=INSTRUCTIONS)
    read_only = ToolAnnotations(readOnlyHint=True, openWorldHint=False)

    @server.tool(
        annotations=read_only,
        description=(
            "Search the knowledge base for raw passages (document sections and chat threads), best first. "
            "Use it to browse or to find material on a topic; to answer a question, prefer `ask`, which "
            "decides whether there is an answer and labels its sources. Each hit has a chunk_id (pass it to "
            "get_thread for a chat hit's full discussion), source_type, title, date and text. Give per_source "
            "to get up to that many document sections and chat threads each, interleaved, so neither source "
            "crowds the other out."
        ),
    )
    def search(
        query: Query,
        k: Annotated[int, Field(ge=1, le=MAX_K, description="How many passages to return.")] = DEFAULT_SEARCH_K,
        conversation: Conversation = None,
        source_type: Annotated[
            Literal["chat", "document"] | None, Field(description="Only chat threads or only documents.")
        ] = None,
        per_source: Annotated[
            int | None,
            Field(ge=1, le=MAX_K, description="Up to this many documents and chat threads each, interleaved."),
        ] = None,
    ) -> dict[str, Any]:
        return _call(service, lambda: service.search(query, k, conversation, source_type, per_source))

    @server.tool(
        annotations=read_only,
        description=(
            "Answer a question from the knowledge base. Use it first for any question a user asks about "
            "what the documents or chats say (how to fix an error, what was decided, how something works). "
            "The answer is computed by the server from the evidence: `status` is `answered` or `no_answer`, "
            "and `groups` holds `documents` and `chat` citations, each with a date, a label (e.g. resolved / "
            "unconfirmed / no conclusion), an excerpt and notes such as media that was not read or that a "
            "passage is what someone other than the person asked about said. Relay the labels, dates and "
            "notes as given, keep documents and chat apart, and cite them; do not upgrade an unconfirmed or "
            "open thread to a fix. On `no_answer` tell the user there is no answer and why (`reason`, e.g. "
            "no message or section mentions the error code); `nearest` then lists the closest passages, "
            "each labelled 'Not an answer': you may point to them as possibly related, quoting their label, "
            "but do not answer from them or guess. Call get_thread with a chat citation's chunk_id to read "
            "the whole discussion."
        ),
    )
    def ask(
        question: Annotated[str, Field(description="The question, in any language.", max_length=MAX_QUERY_CHARS)],
        k: Annotated[int, Field(ge=1, le=MAX_K, description="How many passages to consider.")] = DEFAULT_ASK_K,
        conversation: Conversation = None,
    ) -> dict[str, Any]:
        return _call(service, lambda: without_rendering(service.ask(question, k, conversation)))

    @server.tool(
        annotations=read_only,
        description=(
            "The full transcript of a chat discussion, in time order, with the messages a citation rests on "
            "marked `cited: true`. Use it to read the context of a chat citation from `ask` or a chat hit from "
            "`search` (give its chunk_id), or the thread around one message (give conversation and message_id)."
        ),
    )
    def get_thread(
        chunk_id: Annotated[
            str | None, Field(description="A chat chunk id from ask or search.", max_length=MAX_REF_CHARS)
        ] = None,
        conversation: Conversation = None,
        message_id: Annotated[
            str | None, Field(description="A message id in that conversation.", max_length=MAX_REF_CHARS)
        ] = None,
    ) -> dict[str, Any]:
        return _call(service, lambda: service.thread(chunk_id, conversation, message_id))

    @server.tool(
        annotations=read_only,
        description=(
            "List the chat conversations in the knowledge base: ref, title, kind, message count and the "
            "first and last message time. Use it to see what chats are covered or to get a ref to filter by."
        ),
    )
    def list_conversations() -> dict[str, Any]:
        return _call(service, service.conversations)

    @server.tool(
        annotations=read_only,
        description="List the documents in the knowledge base: id, title, path and last update date.",
    )
    def list_documents() -> dict[str, Any]:
        return _call(service, service.documents)

    @server.tool(
        annotations=read_only,
        description=(
            "How much the knowledge base holds (conversations, messages, threads, documents, chunks) and "
            "which embedding model it uses. Use it to check the knowledge base is not empty."
        ),
    )
    def stats() -> dict[str, Any]:
        return _call(service, service.stats)

    @server.tool(
        annotations=ToolAnnotations(readOnlyHint=False, destructiveHint=False, idempotentHint=True),
        description=(
            "Read a chat export (file, folder or .zip) or documents (Markdown, HTML, PDF, DOCX) into the "
            "knowledge base. Only when the user asks to add or refresh material. Only paths inside the "
            "folders the user configured are accepted (absolute, or relative to the first folder); anything "
            f"else is refused. Re-ingesting unchanged material is cheap. Currently {service.ingest_roots.describe()}."
        ),
    )
    def ingest(
        path: Annotated[str, Field(description="A file or folder inside an allowed folder.", max_length=4096)],
        format: Annotated[
            str | None, Field(description="Force a reader (e.g. `document`); normally detected.", max_length=64)
        ] = None,
    ) -> dict[str, Any]:
        return _call(service, lambda: service.ingest(path, format))

    return server


def run(db: str | None = None, ingest_roots: Sequence[str] | None = None) -> None:
    """Serve over stdio until the client closes the connection.

    `ingest_roots` None reads THREADKEEP_MCP_INGEST_ROOTS (a path-separated list).
    """
    roots = IngestRoots.from_env(INGEST_ROOTS_ENV) if ingest_roots is None else IngestRoots(ingest_roots)
    # A new store only when the ingest tool can fill it: a mistyped --db must not serve an empty one.
    service = Service.open(db, roots, create=bool(roots))
    try:
        build_server(service).run("stdio")
    finally:
        service.close()
