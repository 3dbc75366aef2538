"""The `threadkeep` command."""

from __future__ import annotations

import dataclasses
import json
import sys
import tempfile
from collections.abc import Callable
from datetime import UTC, datetime
from importlib import resources
from pathlib import Path

import click
from rich.console import Console
from rich.markup import escape
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

from threadkeep.api import KnowledgeBase, read_chats, threads_of
from threadkeep.generate import Endpoint, GenerationError
from threadkeep.ingest import IngestReport
from threadkeep.model import SKIPS_SHOWN, Hit, Message, ReadResult, Skip, summarize_skips
from threadkeep.readers import ArchiveError, Limits, UnknownFormatError, format_names
from threadkeep.store import SearchFilters, StoreError, default_location
from threadkeep.threads import ThreadSettings
from threadkeep.transcript import to_transcript

out = Console(highlight=False, soft_wrap=True)
err = Console(stderr=True, highlight=False)

db_option = click.option(
    "--db",
    "db",
    default=None,
    envvar="THREADKEEP_DB",
    show_envvar=True,
    help=f"Store location: a SQLite file path (default {default_location()}).",
)
now_option = click.option("--now", "now", default=None, help="Fix the clock (ISO time) for time decay.")

# Exit statuses of the commands that read input (ingest, apply-delta, normalize, threads).
EXIT_OK = 0
EXIT_NOTHING_READ = 1  # nothing usable was read (or an error stopped the command)
EXIT_USAGE = 2  # bad options or arguments
EXIT_SKIPPED = 3  # --strict, and lines, records or files were skipped
EXIT_CODES_HELP = """
\b
Exit status:
  0  something was read (skips are listed, and counted by reason)
  1  nothing usable was read (no messages, no documents; also when
     --format matched nothing), or an error stopped the command
  2  usage error (bad option or argument)
  3  with --strict: read, but lines, records or files were skipped
"""


def _parse_size(value: str) -> int:
    text = value.strip().upper().removesuffix("B")
    factors = {"K": 1 << 10, "M": 1 << 20, "G": 1 << 30}
    factor = factors.get(text[-1:], 0)
    number = text[:-1] if factor else text
    try:
        amount = float(number)
    except ValueError as error:
        raise click.BadParameter(f"{value!r} is not a size (e.g. 500M, 2G)") from error
    if amount <= 0:
        raise click.BadParameter("the size must be positive")
    return int(amount * (factor or 1 << 20))


def _limits(max_file_size: str | None) -> Limits | None:
    if max_file_size is None:
        return None
    size = _parse_size(max_file_size)
    return Limits(max_file_bytes=size, max_zip_bytes=max(Limits().max_zip_bytes, size))


def _skips_shown(value: str) -> int | None:
    if value == "all":
        return None
    try:
        shown = int(value)
    except ValueError as error:
        raise click.BadParameter(f"{value!r}: give a number or 'all'") from error
    if shown < 0:
        raise click.BadParameter("give a number of 0 or more, or 'all'")
    return shown


strict_option = click.option(
    "--strict", is_flag=True, help="Exit with status 3 when any line, record or file was skipped."
)
skips_option = click.option(
    "--skips",
    "skips",
    default=str(SKIPS_SHOWN),
    show_default=True,
    help="How many skipped items to list one by one ('all' for every one); the rest are counted by reason.",
)
max_file_size_option = click.option(
    "--max-file-size",
    "max_file_size",
    default=None,
    metavar="SIZE",
    help="Largest file to read, e.g. 500M or 4G (default 1G); zips are also capped at 500,000 files, "
    "8G unpacked, and 200:1 expansion for members over 10 MB.",
)


def parse_now(value: str | None) -> datetime | None:
    if value is None:
        return None
    try:
        moment = datetime.fromisoformat(value)
    except ValueError as error:
        raise click.BadParameter(f"{value!r} is not an ISO time") from error
    return moment if moment.tzinfo else moment.replace(tzinfo=UTC)


@click.group()
@click.version_option(package_name="threadkeep")
def main() -> None:
    """Turn chat exports and documents into a knowledge base you can ask, with every answer cited."""


def _ingest_with_progress(
    kb: KnowledgeBase, path: str, format: str | None, limits: Limits | None = None
) -> IngestReport:
    with Progress(
        TextColumn("[progress.description]{task.description}"),
        BarColumn(),
        MofNCompleteColumn(),
        TimeElapsedColumn(),
        console=err,
        transient=True,
        disable=not err.is_terminal,
    ) as bar:
        task = bar.add_task(f"ingesting {Path(path).name}", total=None)

        def progress(stage: str, done: int, total: int) -> None:
            bar.update(task, completed=done, total=total)

        return kb.ingest(path, format=format, progress=progress, limits=limits)


def _print_skips(what: str, skips: list[Skip], shown: int | None, reasons_shown: int = 10) -> None:
    """Skips on stderr: the first `shown` with file and line, then all of them counted by reason."""
    if not skips:
        return
    summary = summarize_skips(skips, shown)
    for item in summary["first"]:
        err.print(f"{what} {Skip(item['file'], item['line'], item['reason'])}", markup=False, soft_wrap=True)
    rest = summary["count"] - len(summary["first"])
    if rest:
        err.print(f"... and {rest} more {what} (--skips all lists every one); all {what}, by reason:", soft_wrap=True)
        for item in summary["by_reason"][:reasons_shown]:
            err.print(f"  {item['count']:>7}  {item['reason']}", markup=False, soft_wrap=True)
        others = sum(item["count"] for item in summary["by_reason"][reasons_shown:])
        if others:
            err.print(f"  {others:>7}  (other reasons)", soft_wrap=True)


def _print_report(report: IngestReport, skips_shown: int | None = SKIPS_SHOWN) -> None:
    chat_formats = [f"{name} {count}" for name, count in sorted(report.formats.items()) if name != "document"]
    parts = []
    if report.messages_read or not report.documents:
        by_format = f" ({', '.join(chat_formats)})" if chat_formats else ""
        parts.append(
            f"{report.messages_read} messages read{by_format}, "
            f"{report.conversations} conversations ({report.conversations_rebuilt} rebuilt), {report.threads} threads"
        )
    if report.documents:
        parts.append(f"{report.documents} documents read ({report.documents_rebuilt} rebuilt)")
    out.print(
        f"{'; '.join(parts)}; {report.chunks} chunks, {report.embedded} embedded "
        f"({report.embeddings_reused} reused); {len(report.skipped)} skipped, {len(report.not_read)} files not read",
        markup=False,
    )
    if report.ignored:
        out.print("left out on purpose: " + ", ".join(f"{n} {kind}" for kind, n in sorted(report.ignored.items())))
    _print_skips("skipped", report.skipped, skips_shown)
    _print_skips("not read", report.not_read, skips_shown)


def _exit_status(read_anything: bool, skipped: int, strict: bool) -> int:
    if not read_anything:
        return EXIT_NOTHING_READ
    if strict and skipped:
        return EXIT_SKIPPED
    return EXIT_OK


def _finish(path: str, read_anything: bool, skipped: int, strict: bool, format: str | None = None) -> None:
    status = _exit_status(read_anything, skipped, strict)
    if status == EXIT_NOTHING_READ:
        forced = f" with --format {format}" if format else ""
        message = f"error: nothing usable was read from {path}{forced} (see above for why)"
        err.print(message, markup=False, soft_wrap=True)
    elif status == EXIT_SKIPPED:
        err.print(f"error: --strict, and {skipped} items were skipped", markup=False, soft_wrap=True)
    if status:
        sys.exit(status)


@main.command(epilog=EXIT_CODES_HELP)
@click.argument("path", type=click.Path(exists=True))
@click.option(
    "--format",
    "format",
    type=click.Choice([*format_names(), "document"]),
    default=None,
    help="Read the whole PATH with this reader only (document: documents only).",
)
@click.option("--json", "as_json", is_flag=True, help="Print the report as JSON.")
@strict_option
@skips_option
@max_file_size_option
@db_option
def ingest(
    path: str, format: str | None, as_json: bool, strict: bool, skips: str, max_file_size: str | None, db: str | None
) -> None:
    """Read chat exports and documents (a file, a folder, or a .zip) into the store.

    A folder is read file by file: each export goes to its reader (a folder that is one
    export, like a Slack workspace, is read whole), documents are read as documents, and
    every file not read is listed with the reason.
    """
    shown = _skips_shown(skips)
    with KnowledgeBase.open(db) as kb:
        report = _ingest_with_progress(kb, path, format, _limits(max_file_size))
    if as_json:
        click.echo(json.dumps(report.to_dict(shown), ensure_ascii=False, indent=2))
    else:
        _print_report(report, shown)
    _finish(path, report.read_anything, len(report.skipped) + len(report.not_read), strict, format)


@main.command(epilog=EXIT_CODES_HELP)
@click.argument("path", type=click.Path(exists=True))
@click.option("--format", "format", type=click.Choice(format_names()), default=None, help="Force a reader.")
@click.option("--jsonl", "as_jsonl", is_flag=True, help="One JSON line per message: id, thread, reply_to.")
@click.option(
    "--assigner",
    type=click.Choice(["learned", "rules"]),
    default=ThreadSettings().assigner,
    show_default=True,
    help="The learned reply-link model or the hand-written rules.",
)
@strict_option
@skips_option
def threads(path: str, format: str | None, as_jsonl: bool, assigner: str, strict: bool, skips: str) -> None:
    """Reconstruct the threads of an export (no store needed)."""
    shown = _skips_shown(skips)
    result, found = threads_of(path, format, ThreadSettings(assigner=assigner))
    _report_read(path, result, shown, strict, format)
    if as_jsonl:
        lines = []
        for number, thread in enumerate(found):
            label = f"{thread.conversation}#{number}"
            for message_id in thread.message_ids:
                record = {"id": message_id, "thread": label, "reply_to": thread.reply_to.get(message_id)}
                lines.append(json.dumps(record, ensure_ascii=False))
        click.echo("\n".join(lines))
        return
    by_id = {message.id: message for message in result.messages}
    for number, thread in enumerate(found):
        first = by_id[thread.message_ids[0]]
        out.print(f"[bold]thread {number}[/bold] {thread.conversation} {first.sent_at:%Y-%m-%d %H:%M}")
        for message_id in thread.message_ids:
            message = by_id[message_id]
            out.print(f"  {message.display_name}: {message.text}", markup=False)


@main.command(epilog=EXIT_CODES_HELP)
@click.argument("path", type=click.Path(exists=True))
@click.option("--format", "format", type=click.Choice(format_names()), default=None, help="Force a reader.")
@click.option("--jsonl", "as_jsonl", is_flag=True, help="Print the normalized messages, one JSON object a line.")
@strict_option
@skips_option
def normalize(path: str, format: str | None, as_jsonl: bool, strict: bool, skips: str) -> None:
    """Print an export as a transcript ("> " user turns, then the reply) or as normalized messages."""
    shown = _skips_shown(skips)
    result = read_chats(path, format)
    _report_read(path, result, shown, strict, format)
    by_conversation: dict[str, list[Message]] = {}
    for message in result.messages:
        by_conversation.setdefault(message.conversation, []).append(message)
    if as_jsonl:
        lines = [json.dumps(message_to_dict(m), ensure_ascii=False) for m in result.messages]
        click.echo("\n".join(lines))
        return
    click.echo("\n\n".join(to_transcript(messages) for messages in by_conversation.values()))


def _report_read(path: str, result: ReadResult, shown: int | None, strict: bool, format: str | None) -> None:
    """Skips and files not read on stderr; exit now when nothing was read or --strict was broken."""
    _print_skips("skipped", result.skipped, shown)
    _print_skips("not read", result.not_read, shown)
    _finish(path, bool(result.messages), len(result.skipped) + len(result.not_read), strict, format)


def message_to_dict(message: Message) -> dict:
    data = dataclasses.asdict(message)
    data["sent_at"] = message.sent_at.isoformat()
    data["edited_at"] = message.edited_at.isoformat() if message.edited_at else None
    data["mentions"] = list(message.mentions)
    return data


def hit_to_dict(hit: Hit) -> dict:
    chunk = hit.chunk
    return {
        "chunk_id": chunk.id,
        "source_type": chunk.source_type,
        "source_ref": chunk.source_ref,
        "title": chunk.title,
        "text": chunk.text,
        "evidence_ids": list(chunk.evidence_ids) if chunk.evidence_ids is not None else None,
        "occurred_at": chunk.occurred_at.isoformat(),
        "resolution_state": chunk.resolution_state,
        "has_unresolved_media": chunk.has_unresolved_media,
        "heading_path": list(chunk.heading_path) if chunk.heading_path is not None else None,
        "score": hit.score,
    }


def _print_hits(hits: list[Hit]) -> None:
    if not hits:
        out.print("no matches")
    for rank, hit in enumerate(hits, start=1):
        chunk = hit.chunk
        if chunk.source_type == "document":
            where = f"{' › '.join(chunk.heading_path or (chunk.title,))} (updated {chunk.occurred_at:%Y-%m-%d})"
        else:
            where = f"{chunk.source_ref}, {chunk.occurred_at:%Y-%m-%d} [{chunk.resolution_state}]"
            if chunk.has_unresolved_media:
                where += " (includes an image/video not read)"
        out.print(f"[bold]{rank}.[/bold] {chunk.source_type}: {escape(where)}  score {hit.score:.3g}")
        out.print(chunk.text, markup=False)
        out.print()


@main.command()
@click.argument("query")
@click.option("--k", default=5, show_default=True, help="How many chunks to return.")
@click.option("--conversation", default=None, help="Only this conversation (its ref).")
@click.option("--source-type", type=click.Choice(["chat", "document"]), default=None)
@click.option(
    "--per-source",
    type=click.IntRange(1, 50),
    default=None,
    help="Up to N document sections and N chat threads, interleaved (instead of the overall best --k).",
)
@click.option("--json", "as_json", is_flag=True)
@now_option
@db_option
def search(
    query: str,
    k: int,
    conversation: str | None,
    source_type: str | None,
    per_source: int | None,
    as_json: bool,
    now: str | None,
    db: str | None,
) -> None:
    """Search the store (dense + full text)."""
    filters = SearchFilters(conversation=conversation, source_type=source_type)
    with KnowledgeBase.open(db) as kb:
        hits = kb.search(query, k=k, filters=filters, now=parse_now(now), per_source=per_source)
    if as_json:
        click.echo(
            json.dumps({"query": query, "hits": [hit_to_dict(hit) for hit in hits]}, ensure_ascii=False, indent=2)
        )
    else:
        _print_hits(hits)


@main.command()
@click.argument("question")
@click.option("--k", default=10, show_default=True, help="How many chunks to consider.")
@click.option("--conversation", default=None, help="Only this conversation (its ref).")
@click.option("--json", "as_json", is_flag=True)
@click.option(
    "--generate/--no-generate",
    default=True,
    show_default=True,
    help="Word the answer with THREADKEEP_LLM_BASE_URL / THREADKEEP_LLM_MODEL when they are set.",
)
@click.option(
    "--show-nearest",
    is_flag=True,
    help="Also list the closest passages not cited, labelled 'Not an answer' (a refusal always lists them).",
)
@now_option
@db_option
def ask(
    question: str,
    k: int,
    conversation: str | None,
    as_json: bool,
    generate: bool,
    show_nearest: bool,
    now: str | None,
    db: str | None,
) -> None:
    """Answer from the knowledge base: documents and chat cited separately, or an honest no-answer with the
    reason and the closest passages, labelled as not an answer."""
    endpoint = Endpoint.from_environment() if generate else None
    with KnowledgeBase.open(db) as kb:
        answer = kb.ask(
            question,
            k=k,
            filters=SearchFilters(conversation=conversation),
            now=parse_now(now),
            endpoint=endpoint,
            show_nearest=show_nearest,
        )
    if as_json:
        click.echo(json.dumps(answer.to_dict(), ensure_ascii=False, indent=2))
        return
    out.print(answer.generated_text or answer.text, markup=False)
    if answer.generated_text:
        out.print("\n[dim]Sources (as computed, whatever the model wrote):[/dim]")
        out.print(answer.text, markup=False)


@main.command()
@click.option("--json", "as_json", is_flag=True)
@db_option
def stats(as_json: bool, db: str | None) -> None:
    """What the store holds."""
    with KnowledgeBase.open(db) as kb:
        figures = kb.stats()
    if as_json:
        click.echo(json.dumps(figures, ensure_ascii=False, indent=2))
    else:
        for key, value in figures.items():
            out.print(f"{key:>16}: {value}")


@main.command("apply-delta", epilog=EXIT_CODES_HELP.replace("no messages, no documents", "no operation applied"))
@click.argument("path", type=click.Path(exists=True))
@click.option("--json", "as_json", is_flag=True, help="Print the report as JSON.")
@strict_option
@skips_option
@db_option
def apply_delta(path: str, as_json: bool, strict: bool, skips: str, db: str | None) -> None:
    """Apply a delta.jsonl (upsert / recalled / missing); rebuild only the conversations it touches.

    All or nothing per conversation: a conversation named by a line that cannot be used is left
    unchanged (every conversation, when the line names none), and the command exits with status 1.
    """
    shown = _skips_shown(skips)
    with KnowledgeBase.open(db) as kb:
        report = kb.apply_delta(path)
    if as_json:
        click.echo(json.dumps(report.to_dict(shown), ensure_ascii=False, indent=2))
    else:
        out.print(
            f"delta: {report.upserted} upserted, {report.recalled} recalled, {report.flagged_missing} flagged for "
            f"review; {report.conversations_rebuilt} of {report.conversations} conversations rebuilt, "
            f"{report.chunks} chunks, {report.embedded} embedded, {len(report.skipped)} skipped"
        )
        _print_skips("skipped", report.skipped, shown)
        _print_skips("error", report.rejected, shown)
    if report.rejected:
        left = "no conversation was changed" if report.refused_all else f"left unchanged: {', '.join(report.refused)}"
        err.print(f"error: {len(report.rejected)} delta lines could not be applied; {left}", markup=False)
        sys.exit(1)
    applied = report.upserted + report.recalled + report.flagged_missing
    _finish(path, applied > 0, len(report.skipped), strict)


def _print_items(items: list[dict], as_json: bool, line: Callable[[dict], str], empty: str = "") -> None:
    """A listing as JSON, or one line per item."""
    if as_json:
        click.echo(json.dumps(items, ensure_ascii=False, indent=2))
        return
    if not items and empty:
        out.print(empty)
    for item in items:
        out.print(line(item), markup=False)


@main.command()
@click.option("--json", "as_json", is_flag=True)
@db_option
def review(as_json: bool, db: str | None) -> None:
    """Messages flagged for a person to look at (e.g. missing from the latest export). Nothing was deleted."""
    with KnowledgeBase.open(db) as kb:
        items = kb.store.review_items()

    def line(item: dict) -> str:
        who = item["sender_name"] or item["sender"] or "?"
        text = item["text"] if item["text"] is not None else "(not in the store)"
        return f"{item['conversation']}/{item['message_id']}  {item['reason']}  {who}: {text}"

    _print_items(items, as_json, line, "nothing to review")


@main.command()
@db_option
def check(db: str | None) -> None:
    """Verify the store: evidence ids exist, each message is in one thread, vectors match the model."""
    with KnowledgeBase.open(db) as kb:
        problems = kb.check()
    for problem in problems:
        out.print(f"problem: {problem}", markup=False)
    if problems:
        sys.exit(1)
    out.print("store is consistent")


@main.command()
@click.argument("document_id")
@db_option
def remove(document_id: str, db: str | None) -> None:
    """Remove a document (by its id, see `threadkeep documents`) and its chunks from the store."""
    with KnowledgeBase.open(db) as kb:
        removed = kb.store.remove_document(document_id)
    if not removed:
        raise click.ClickException(f"no document {document_id!r} in the store")
    out.print(f"removed {document_id}", markup=False)


@main.command()
@click.option("--json", "as_json", is_flag=True)
@db_option
def documents(as_json: bool, db: str | None) -> None:
    """List the documents in the store."""
    with KnowledgeBase.open(db) as kb:
        items = kb.store.list_documents()
    _print_items(items, as_json, lambda item: f"{item['id']}  {item['title']}  (updated {item['updated_at'][:10]})")


def sample_path(name: str) -> Path:
    return Path(str(resources.files("threadkeep") / "samples" / name))


@main.command()
@click.option("--db", "db", default=None, help="Keep the demo store here (default: a temporary file).")
def demo(db: str | None) -> None:
    """Ingest the bundled sample corpus and ask it a few questions."""
    with tempfile.TemporaryDirectory(prefix="threadkeep-demo-") as folder:
        location = db or str(Path(folder) / "demo.db")
        with KnowledgeBase.open(location) as kb:
            out.print(f"[bold]Ingesting the sample support group[/bold] into {location}")
            _print_report(_ingest_with_progress(kb, str(sample_path("support_group")), "bundle"))
            out.print("[bold]Ingesting the sample product documents[/bold]")
            _print_report(_ingest_with_progress(kb, str(sample_path("docs")), None))
            questions = json.loads((sample_path("support_group") / "questions.json").read_text(encoding="utf-8"))
            for item in [*questions[:3], questions[-1]]:
                out.print(f"\n[bold]? {escape(item['question'])}[/bold]")
                out.print(kb.ask(item["question"]).text, markup=False)


@main.command()
@click.option("--host", default="127.0.0.1", show_default=True, help="Address to listen on (others need a token).")
@click.option("--port", default=8765, show_default=True, type=click.IntRange(0, 65535))
@click.option(
    "--token",
    default=None,
    envvar="THREADKEEP_TOKEN",
    show_envvar=True,
    help="Require `Authorization: Bearer TOKEN` on every /api call (at least 16 characters).",
)
@click.option(
    "--ingest-root",
    "ingest_roots",
    multiple=True,
    type=click.Path(exists=True, file_okay=False),
    help="A folder POST /api/ingest may read; repeat it. Default: THREADKEEP_INGEST_ROOTS (a path-separated list).",
)
@db_option
def serve(host: str, port: int, token: str | None, ingest_roots: tuple[str, ...], db: str | None) -> None:
    """Serve the HTTP API (/api/..., schema at /openapi.json) and the web page at /."""
    from threadkeep.server.http import ConfigError
    from threadkeep.server.http import serve as serve_http

    try:
        serve_http(db, host=host, port=port, token=token, ingest_roots=list(ingest_roots) or None)
    except (ConfigError, ValueError) as error:
        raise click.UsageError(str(error)) from error


@main.command("mcp")
@click.option(
    "--ingest-root",
    "ingest_roots",
    multiple=True,
    type=click.Path(exists=True, file_okay=False),
    help="A folder the ingest tool may read; repeat it. Default: THREADKEEP_MCP_INGEST_ROOTS (path-separated list).",
)
@db_option
def mcp_server(ingest_roots: tuple[str, ...], db: str | None) -> None:
    """Run the MCP server on stdio (tools: search, ask, get_thread, list_*, stats, ingest)."""
    from threadkeep.server.mcp import run as run_mcp

    try:
        run_mcp(db, ingest_roots=list(ingest_roots) or None)
    except ValueError as error:
        raise click.UsageError(str(error)) from error


def run() -> None:
    try:
        main(standalone_mode=False)
    except click.exceptions.Exit as done:
        sys.exit(done.exit_code)
    except click.ClickException as error:
        error.show()
        sys.exit(error.exit_code)
    except click.exceptions.Abort:
        sys.exit(130)
    except (StoreError, UnknownFormatError, ArchiveError, FileNotFoundError, GenerationError) as error:
        err.print(f"error: {error}", markup=False)
        sys.exit(EXIT_NOTHING_READ)


if __name__ == "__main__":
    run()
