"""HTTP API and web page: JSON endpoints over `service.Service`, and a static page at `/`.

    threadkeep serve --db team.db                      # http://127.0.0.1:8765/
    threadkeep serve --host 0.0.0.0 --token "$TOKEN"    # any other address needs a bearer token

Rules kept here, outside the API: it listens on 127.0.0.1 unless told otherwise
and refuses any other address without a token; with a token every /api call
needs `Authorization: Bearer <token>`; without one only loopback Host names are
served (against DNS rebinding); POSTs must be JSON (against cross-site forms);
bodies, queries and k are bounded; every error is `{"error": "..."}`; ingest
reads only inside the configured folders, in a worker process (searches answer
meanwhile), and no response names a server path (see `service`).
"""

from __future__ import annotations

import hmac
import ipaddress
from collections.abc import Sequence
from importlib import resources
from typing import Annotated, Any, Literal

from fastapi import Body, FastAPI, Query
from fastapi.exceptions import RequestValidationError
from fastapi.responses import JSONResponse, Response
from pydantic import BaseModel, Field
from starlette.exceptions import HTTPException as StarletteHTTPException
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from threadkeep.errors import ConfigurationError, ThreadkeepError
from threadkeep.generate import Endpoint
from threadkeep.server.service import (
    DEFAULT_ASK_K,
    DEFAULT_SEARCH_K,
    MAX_CONTEXT,
    MAX_K,
    MAX_PATH_CHARS,
    MAX_QUERY_CHARS,
    MAX_REF_CHARS,
    IngestRoots,
    Service,
    http_status,
)

DEFAULT_HOST = "127.0.0.1"
DEFAULT_PORT = 8765
MAX_BODY_BYTES = 64 * 1024
MAX_QUERY_STRING_BYTES = 48 * 1024  # 2,000 CJK characters percent-encoded take 18 KB
MIN_TOKEN_CHARS = 16
INGEST_ROOTS_ENV = "THREADKEEP_INGEST_ROOTS"
LOOPBACK_NAMES = ("localhost", "127.0.0.1", "::1")
STATIC_FILES = {
    "/": ("index.html", "text/html; charset=utf-8"),
    "/static/app.js": ("app.js", "text/javascript; charset=utf-8"),
    "/static/app.css": ("app.css", "text/css; charset=utf-8"),
    # Interactive API docs served from here: FastAPI's own load their scripts from a CDN.
    "/docs": ("docs.html", "text/html; charset=utf-8"),
    "/static/docs.js": ("docs.js", "text/javascript; charset=utf-8"),
    "/favicon.ico": ("favicon.svg", "image/svg+xml"),
    "/static/favicon.svg": ("favicon.svg", "image/svg+xml"),
}
SECURITY_HEADERS = [
    (b"x-content-type-options", b"nosniff"),
    (b"referrer-policy", b"no-referrer"),
    (b"x-frame-options", b"DENY"),
    (
        b"content-security-policy",
        b"default-src 'self'; img-src 'self' data:; object-src 'none'; base-uri 'none'; frame-ancestors 'none'",
    ),
]

Ref = Annotated[str | None, Query(max_length=MAX_REF_CHARS)]


def is_loopback(host: str) -> bool:
    host = host.strip("[]")
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


def check_binding(host: str, token: str | None) -> None:
    if token is not None and len(token) < MIN_TOKEN_CHARS:
        raise ConfigurationError(f"the token must be at least {MIN_TOKEN_CHARS} characters long")
    if not is_loopback(host) and not token:
        raise ConfigurationError(
            f"refusing to listen on {host} without a token: anyone who can reach it could read the knowledge base. "
            "Pass --token (or set THREADKEEP_TOKEN), or listen on 127.0.0.1."
        )


def error_response(status: int, message: str, headers: dict[str, str] | None = None) -> JSONResponse:
    return JSONResponse({"error": message}, status_code=status, headers=headers)


class GuardMiddleware:
    """Checks made before any route runs: Host, token, content type, sizes. Adds security headers."""

    def __init__(self, app: ASGIApp, token: str | None, max_body: int = MAX_BODY_BYTES) -> None:
        self.app = app
        self.token = token.encode() if token else None
        self.max_body = max_body

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return

        async def send_with_headers(message: Message) -> None:
            if message["type"] == "http.response.start":
                message["headers"] = [*message.get("headers", []), *SECURITY_HEADERS]
            await send(message)

        headers = {key.decode("latin-1").lower(): value.decode("latin-1") for key, value in scope["headers"]}
        refusal = self._refusal(scope, headers)
        if refusal is None and scope["method"] in ("POST", "PUT", "PATCH"):
            body, refusal = await self._read_body(receive, headers)
            if refusal is None:
                receive = _replay(body)
        if refusal is not None:
            await refusal(scope, receive, send_with_headers)
            return
        await self.app(scope, receive, send_with_headers)

    def _refusal(self, scope: Scope, headers: dict[str, str]) -> Response | None:
        if len(scope.get("query_string", b"")) > MAX_QUERY_STRING_BYTES:
            return error_response(414, f"the query string is too long (at most {MAX_QUERY_STRING_BYTES} bytes)")
        if self.token is None:
            # Without a token only loopback names are served, so a page on another site cannot
            # reach this server through a DNS name it rebinds to 127.0.0.1.
            host = headers.get("host", "")
            name = host.rsplit(":", 1)[0] if not host.startswith("[") else host[1:].split("]", 1)[0]
            if name not in LOOPBACK_NAMES:
                return error_response(421, f"this server answers only to localhost, not to Host {host!r}")
        path = scope["path"]
        if not path.startswith("/api/"):
            return None
        if self.token is not None:
            scheme, _, given = headers.get("authorization", "").partition(" ")
            if scheme.lower() != "bearer" or not hmac.compare_digest(given.strip().encode(), self.token):
                return error_response(
                    401, "missing or wrong token: send Authorization: Bearer <token>", {"WWW-Authenticate": "Bearer"}
                )
        if scope["method"] in ("POST", "PUT", "PATCH"):
            content_type = headers.get("content-type", "").split(";", 1)[0].strip().lower()
            if content_type != "application/json":
                return error_response(415, "send the request body as JSON (Content-Type: application/json)")
        return None

    async def _read_body(self, receive: Receive, headers: dict[str, str]) -> tuple[bytes, Response | None]:
        too_large = error_response(413, f"the request body is too large (at most {self.max_body} bytes)")
        declared = headers.get("content-length", "")
        if declared.isdigit() and int(declared) > self.max_body:
            return b"", too_large
        chunks: list[bytes] = []
        size = 0
        while True:
            message = await receive()
            if message["type"] == "http.disconnect":
                break
            chunk = message.get("body", b"")
            size += len(chunk)
            if size > self.max_body:
                return b"", too_large
            chunks.append(chunk)
            if not message.get("more_body", False):
                break
        return b"".join(chunks), None


def _replay(body: bytes) -> Receive:
    sent = False

    async def receive() -> Message:
        nonlocal sent
        if not sent:
            sent = True
            return {"type": "http.request", "body": body, "more_body": False}
        return {"type": "http.disconnect"}

    return receive


def _validation_message(error: RequestValidationError) -> str:
    parts = []
    for item in error.errors():
        where = ".".join(str(part) for part in item.get("loc", ()) if part not in ("query", "body"))
        message = item.get("msg", "invalid value")
        if item.get("type") == "json_invalid":
            where, message = "body", "the body is not valid JSON"
        parts.append(f"{where}: {message}" if where else message)
    return "; ".join(parts) or "invalid request"


class AskRequest(BaseModel):
    question: str = Field(max_length=MAX_QUERY_CHARS, description="The question, in any language.")
    k: int = Field(DEFAULT_ASK_K, ge=1, le=MAX_K, description="How many passages to consider.")
    conversation: str | None = Field(None, max_length=MAX_REF_CHARS, description="Only this conversation (its ref).")


class IngestRequest(BaseModel):
    path: str = Field(max_length=MAX_PATH_CHARS, description="A file or folder inside a configured ingest folder.")
    format: str | None = Field(None, max_length=64, description="Force a reader (e.g. `document`).")


def _static(name: str) -> bytes:
    return (resources.files("threadkeep.server") / "static" / name).read_bytes()


def create_app(service: Service, token: str | None = None) -> FastAPI:
    """The ASGI app. With `token`, every /api call must carry it; without, only loopback Host names are served."""
    app = FastAPI(
        title="threadkeep",
        summary="A knowledge base built from chat exports and documents; every answer cited.",
        version="1",
        docs_url=None,  # the interactive docs load scripts from a CDN; the schema is at /openapi.json
        redoc_url=None,
    )
    app.add_middleware(GuardMiddleware, token=token)

    @app.exception_handler(ThreadkeepError)
    async def threadkeep_error(request: Any, error: ThreadkeepError) -> JSONResponse:
        return error_response(http_status(error), service.describe(error))

    @app.exception_handler(RequestValidationError)
    async def invalid_request(request: Any, error: RequestValidationError) -> JSONResponse:
        return error_response(422, _validation_message(error))

    @app.exception_handler(StarletteHTTPException)
    async def http_error(request: Any, error: StarletteHTTPException) -> JSONResponse:
        message = {404: "not found", 405: "method not allowed"}.get(error.status_code, str(error.detail))
        return error_response(error.status_code, message, getattr(error, "headers", None))

    @app.exception_handler(Exception)
    async def crash(request: Any, error: Exception) -> JSONResponse:
        # The details (which may name server files) go to the server log, where Starlette re-raises it.
        return error_response(500, f"internal error ({type(error).__name__}); the server log has the details")

    pages = {path: (_static(name), media_type) for path, (name, media_type) in STATIC_FILES.items()}
    for path, (content, media_type) in pages.items():

        def page(content: bytes = content, media_type: str = media_type) -> Response:
            return Response(content, media_type=media_type, headers={"Cache-Control": "no-cache"})

        app.add_api_route(path, page, methods=["GET"], include_in_schema=False)

    @app.get("/api/search", summary="Raw passages (document sections and chat threads), best first")
    def search(
        query: Annotated[str, Query(min_length=1, max_length=MAX_QUERY_CHARS, alias="q")],
        k: Annotated[int, Query(ge=1, le=MAX_K)] = DEFAULT_SEARCH_K,
        conversation: Ref = None,
        source_type: Literal["chat", "document"] | None = None,
        per_source: Annotated[
            int | None,
            Query(ge=1, le=MAX_K, description="Up to this many document sections and chat threads, interleaved."),
        ] = None,
    ) -> dict[str, Any]:
        return service.search(query, k, conversation, source_type, per_source)

    @app.get("/api/ask", summary="A grouped, cited answer (or an honest no_answer)")
    def ask_get(
        question: Annotated[str, Query(min_length=1, max_length=MAX_QUERY_CHARS, alias="q")],
        k: Annotated[int, Query(ge=1, le=MAX_K)] = DEFAULT_ASK_K,
        conversation: Ref = None,
    ) -> dict[str, Any]:
        return service.ask(question, k, conversation)

    @app.post("/api/ask", summary="A grouped, cited answer (or an honest no_answer)")
    def ask_post(request: Annotated[AskRequest, Body()]) -> dict[str, Any]:
        return service.ask(request.question, request.k, request.conversation)

    @app.get("/api/thread", summary="The full transcript behind a chat citation, cited messages marked")
    def thread(
        chunk_id: Ref = None,
        conversation: Ref = None,
        message_id: Ref = None,
        context: Annotated[
            int, Query(ge=0, le=MAX_CONTEXT, description="Messages of the conversation shown before and after.")
        ] = 0,
    ) -> dict[str, Any]:
        return service.thread(chunk_id, conversation, message_id, context)

    @app.get("/api/overview", summary="What the knowledge base holds, for a start page, with example questions")
    def overview() -> dict[str, Any]:
        return service.overview()

    @app.get("/api/conversations", summary="The chat conversations in the knowledge base")
    def conversations() -> dict[str, Any]:
        return service.conversations()

    @app.get("/api/documents", summary="The documents in the knowledge base")
    def documents() -> dict[str, Any]:
        return service.documents()

    @app.get("/api/stats", summary="What the knowledge base holds")
    def stats() -> dict[str, Any]:
        return service.stats()

    @app.post("/api/ingest", summary="Ingest a file or folder inside a configured ingest folder")
    def ingest(request: Annotated[IngestRequest, Body()]) -> dict[str, Any]:
        return service.ingest(request.path, request.format)

    return app


def serve(
    db: str | None = None,
    host: str = DEFAULT_HOST,
    port: int = DEFAULT_PORT,
    token: str | None = None,
    ingest_roots: Sequence[str] | None = None,
) -> None:
    """Run the server until interrupted. `ingest_roots` None reads THREADKEEP_INGEST_ROOTS."""
    import uvicorn

    check_binding(host, token)
    roots = IngestRoots.from_env(INGEST_ROOTS_ENV) if ingest_roots is None else IngestRoots(ingest_roots)
    # A new store only when the server can fill it: a mistyped --db must not serve an empty one.
    service = Service.open(db, roots, endpoint=Endpoint.from_environment(), create=bool(roots))
    try:
        app = create_app(service, token)
        uvicorn.run(
            app,
            host=host,
            port=port,
            server_header=False,
            proxy_headers=False,
            log_level="info",
            h11_max_incomplete_event_size=MAX_QUERY_STRING_BYTES + 16 * 1024,  # room for a full-length query
        )
    finally:
        service.close()
