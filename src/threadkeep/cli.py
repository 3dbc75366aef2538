"""The `threadkeep` command."""

from __future__ import annotations

import json
import os
import shlex
import sys
import time
from collections.abc import Callable, Sequence
from contextlib import suppress
from dataclasses import replace
from datetime import UTC, datetime
from importlib import resources
from pathlib import Path
from typing import TYPE_CHECKING, Any

import click
from rich.console import Console
from rich.markup import escape

from threadkeep.api import KnowledgeBase, SearchFilters, coverage_to_dict, read_chats, search_to_dict, threads_of
from threadkeep.errors import ConfigurationError, NotFoundError, RefusedError, StoreNotFound, ThreadkeepError
from threadkeep.model import (
    SKIPS_SHOWN,
    Conversation,
    ConversationSummary,
    DocumentSummary,
    Hit,
    Message,
    ReadResult,
    ReviewItem,
    Skip,
    summarize_skips,
)

# Readers, ingest, threading, generation and progress bars are imported by the commands that use
# them: every call pays the imports at the top, and a search needs none of these.
if TYPE_CHECKING:
    from rich.progress import Progress, TaskID

    from threadkeep.ingest import IngestReport
    from threadkeep.readers import Limits

# Stored text is shown as it was written: no emoji codes turned into emoji, no line wrapping.
out = Console(highlight=False, soft_wrap=True, emoji=False)
err = Console(stderr=True, highlight=False, soft_wrap=True, emoji=False)

# What a listing command prints: each item has its one JSON shape.
Listed = ConversationSummary | DocumentSummary | ReviewItem

CONTEXT_SETTINGS = {"help_option_names": ["-h", "--help"]}


class FormatChoice(click.Choice):
    """A reader's name (and `document` where documents can be read), listed only when an option is
    parsed or shown: the list comes from importing every reader."""

    def __init__(self, document: bool = False) -> None:
        self.document = document
        self.case_sensitive = True

    @property
    def choices(self) -> tuple[str, ...]:  # type: ignore[override]
        from threadkeep.readers import format_names

        return (*format_names(), *(["document"] if self.document else []))


db_option = click.option(
    "--db",
    "db",
    default=None,
    envvar="THREADKEEP_DB",
    show_envvar=True,
    help=f"Store location: a SQLite file path or a postgresql:// URL (default {KnowledgeBase.default_location()}).",
)
now_option = click.option("--now", "now", default=None, help="Fix the clock (ISO time) for time decay.")
json_option = click.option("--json", "as_json", is_flag=True, help="Print JSON instead of text.")

# Exit statuses of the commands that read input (ingest, apply-delta, normalize, threads).
EXIT_OK = 0
EXIT_NOTHING_READ = 1  # nothing usable was read (or an error stopped the command)
EXIT_USAGE = 2  # bad options or arguments
EXIT_SKIPPED = 3  # --strict, and damaged lines, records or files were skipped
EXIT_CODES_HELP = """
\b
Exit status:
  0  something was read (skips are listed, and counted by reason)
  1  nothing usable was read (no messages, no documents; also when
     --format matched nothing), or an error stopped the command
  2  usage error (bad option or argument)
  3  with --strict: read, but damaged lines, records or files were skipped
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
    from threadkeep.readers import Limits

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
    "--strict",
    is_flag=True,
    help="Exit with status 3 when a line, record or file could not be used (damaged); "
    "files no reader takes (media, unknown formats) are listed but do not count.",
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


def plural(count: int, word: str, many: str | None = None) -> str:
    """`1 conversation`, `2 conversations` (`many` for irregular plurals)."""
    return f"{count} {word if count == 1 else (many or word + 's')}"


def exit_status_of(error: ThreadkeepError | OSError) -> int:
    """A setting that names something unknown is a usage error; anything else stopped the command."""
    return EXIT_USAGE if isinstance(error, ConfigurationError) else EXIT_NOTHING_READ


def describe_error(error: ThreadkeepError | OSError) -> str:
    if isinstance(error, StoreNotFound):
        return (
            f"{error}: create one with `threadkeep ingest PATH` (or `threadkeep demo`), "
            "or name another with --db / THREADKEEP_DB"
        )
    if isinstance(error, FileNotFoundError) and error.filename:
        return f"{error.filename}: no such file or folder"
    return str(error)


class ThreadkeepGroup(click.Group):
    """Every failure ends as `error: ...` on stderr with a non-zero status, never as a traceback."""

    def main(self, args=None, prog_name=None, complete_var=None, standalone_mode=True, **extra):  # type: ignore[override]
        if not standalone_mode:
            return super().main(args, prog_name, complete_var, standalone_mode=False, **extra)
        try:
            result = super().main(args, prog_name, complete_var, standalone_mode=False, **extra)
        except click.UsageError as error:
            if error.ctx is not None:
                click.echo(error.ctx.get_usage(), err=True)
                click.echo(f"Try '{error.ctx.command_path} -h' for help.", err=True)
            click.echo(f"error: {error.format_message()}", err=True)
            sys.exit(error.exit_code)
        except click.ClickException as error:
            click.echo(f"error: {error.format_message()}", err=True)
            sys.exit(error.exit_code)
        except click.exceptions.Abort:
            click.echo("\nstopped", err=True)
            sys.exit(130)
        except (ThreadkeepError, FileNotFoundError) as error:
            click.echo(f"error: {describe_error(error)}", err=True)
            sys.exit(exit_status_of(error))
        sys.exit(result if isinstance(result, int) else 0)


def open_kb(db: str | None, create: bool = False) -> KnowledgeBase:
    """The knowledge base at --db; only commands that add data create a new store."""
    return KnowledgeBase.open(db, create=create)


def require_content(kb: KnowledgeBase) -> None:
    """Refuse to search an empty store: an empty answer would look like "nothing relevant"."""
    if kb.is_empty():
        figures = kb.stats()
        raise NotFoundError(
            f"the store at {figures['location']} is empty: nothing has been ingested yet; "
            "add data with `threadkeep ingest PATH` (or try `threadkeep demo`)"
        )


def _text_argument(value: str, name: str) -> str:
    """A query or question as given, or read from stdin for `-`; never empty."""
    if value == "-":
        value = sys.stdin.read()
    if not value.strip():
        raise click.BadParameter(f"the {name} is empty", param_hint=name.upper())
    return value.strip()


def parse_now(value: str | None) -> datetime | None:
    if value is None:
        return None
    try:
        moment = datetime.fromisoformat(value)
    except ValueError as error:
        raise click.BadParameter(f"{value!r} is not an ISO time") from error
    return moment if moment.tzinfo else moment.replace(tzinfo=UTC)


@click.group(name="threadkeep", cls=ThreadkeepGroup, context_settings=CONTEXT_SETTINGS)
@click.version_option(package_name="threadkeep", message="%(prog)s %(version)s")
def main() -> None:
    """Turn chat exports and documents into a knowledge base you can ask, with every answer cited."""


PROGRESS_UNITS = {"conversations": "messages", "documents": "documents", "vectors": "chunks with a vector"}


class IngestProgress:
    """An ingest's progress on stderr: on a terminal a live bar per stage with counts and the time
    left; elsewhere a plain line when a stage starts and ends and every `PLAIN_EVERY` seconds."""

    PLAIN_EVERY = 10.0

    def __init__(self, name: str, quiet: bool = False) -> None:
        self.name = name
        self.quiet = quiet
        self.stage = ""
        self.done = self.total = 0
        self.units_done = 0  # conversations or documents completely stored so far
        self.started = time.monotonic()
        self.last_line = 0.0
        self.bar: Progress | None = None
        self.tasks: dict[str, TaskID] = {}
        self.stage_started: dict[str, float] = {}
        self.vectors = (0, 0)
        self.vectors_from: tuple[float, int] | None = None  # when the vectors stage started, and its count then

    def __enter__(self) -> IngestProgress:
        if not self.quiet and err.is_terminal:
            from rich.progress import BarColumn, Progress, TextColumn

            self.bar = Progress(
                TextColumn("{task.description}"),
                BarColumn(),
                TextColumn("{task.fields[count]}"),
                TextColumn("{task.fields[left]}"),
                console=err,
                transient=True,
            )
            self.bar.start()
        return self

    def __exit__(self, *exc_info: object) -> None:
        if self.bar is not None:
            self.bar.stop()

    def __call__(self, stage: str, done: int, total: int) -> None:
        if stage == "vectors":
            if self.vectors_from is None:
                self.vectors_from = (time.monotonic(), done)
            self.vectors = (done, total)
        if stage in ("conversations", "documents"):
            if done and stage == self.stage:
                self.units_done += 1
            if stage != self.stage:
                self.started = self.stage_started[stage] = time.monotonic()
            self.stage, self.done, self.total = stage, done, total
        if self.quiet:
            return
        if self.bar is not None:
            self._update_bar(stage, done, total)
            return
        now = time.monotonic()
        first_or_last = stage != "vectors" and (done == 0 or done == total)
        if stage == "reading" or first_or_last or now - self.last_line >= self.PLAIN_EVERY:
            self.last_line = now
            click.echo(self._line(stage, done, total), err=True)

    def _update_bar(self, stage: str, done: int, total: int) -> None:
        assert self.bar is not None
        if stage not in self.tasks:
            label = f"reading {self.name}" if stage == "reading" else stage
            self.tasks[stage] = self.bar.add_task(label, total=total or None, count="", left="")
            self.stage_started[stage] = time.monotonic()
        if stage == "vectors" and done >= total:
            self.bar.remove_task(self.tasks.pop(stage))
            return
        if stage != "reading" and "reading" in self.tasks:
            self.bar.remove_task(self.tasks.pop("reading"))
        count = f"{done:,}/{total:,} {PROGRESS_UNITS.get(stage, '')}" if total else ""
        self.bar.update(self.tasks[stage], completed=done, total=total or None, count=count, left=self._left(stage))

    def _left(self, stage: str) -> str:
        """The time left in a stage, from its pace so far (nothing before there is a pace)."""
        if stage == "vectors":
            (done, total), (since, first) = self.vectors, self.vectors_from or (time.monotonic(), 0)
            elapsed, done, total = time.monotonic() - since, done - first, total - first
        else:
            done, total = (self.done, self.total) if stage == self.stage else self.vectors
            elapsed = time.monotonic() - self.stage_started.get(stage, self.started)
        if not 0 < done < total or elapsed < 1:
            return ""
        return f"about {_duration(elapsed * (total - done) / done)} left"

    def _line(self, stage: str, done: int, total: int) -> str:
        command = "embed" if self.name == "vectors" else "ingest"
        if stage == "reading":
            return f"{command}: reading {self.name}"
        line = f"{command}: {stage} {done:,}/{total:,} {PROGRESS_UNITS.get(stage, '')}"
        left = self._left(stage)
        return f"{line}, {left}" if left else line

    def kept(self) -> str:
        """What an interrupted ingest left in the store."""
        if self.vectors_from is not None:
            done, total = self.vectors
            return (
                f"stopped while making vectors: everything read is stored and searchable by full text; "
                f"vectors for {done:,} of {total:,} chunks. `threadkeep embed` makes the rest."
            )
        unit = "conversation" if self.stage == "conversations" else "document"
        return (
            f"stopped: {plural(self.units_done, unit)} stored completely before the interruption; "
            "each one is all or nothing, so nothing is half written. "
            "Run the same command again to finish (what is already stored is not redone)."
        )


def _duration(seconds: float) -> str:
    if seconds < 90:
        return f"{max(1, round(seconds))} s"
    if seconds < 90 * 60:
        return f"{round(seconds / 60)} min"
    return f"{seconds / 3600:.1f} h"


def _ingest_with_progress(
    kb: KnowledgeBase,
    path: str,
    format: str | None,
    quiet: bool = False,
    limits: Limits | None = None,
    wait: bool = True,
) -> IngestReport:
    """Ingest with progress on stderr; Ctrl-C stops between conversations (or batches of vectors) and says
    what was kept."""
    with IngestProgress(Path(path).name, quiet) as progress:
        try:
            return kb.ingest(path, format=format, progress=progress, limits=limits, wait=wait)
        except KeyboardInterrupt:
            message = progress.kept()
    click.echo(message, err=True)
    sys.exit(130)


def _print_skips(what: str, skips: list[Skip], shown: int | None, reasons_shown: int = 10) -> None:
    """Skips on stderr: the first `shown` with file and line, then all of them counted by reason."""
    if not skips:
        return
    summary = summarize_skips(skips, shown)
    for item in summary["first"]:
        click.echo(f"{what} {Skip(item['file'], item['line'], item['reason'])}", err=True)
    rest = summary["count"] - len(summary["first"])
    if rest:
        click.echo(f"... and {rest} more {what} (--skips all lists every one); all {what}, by reason:", err=True)
        for item in summary["by_reason"][:reasons_shown]:
            click.echo(f"  {item['count']:>7}  {item['reason']}", err=True)
        others = sum(item["count"] for item in summary["by_reason"][reasons_shown:])
        if others:
            click.echo(f"  {others:>7}  (other reasons)", err=True)


def _print_report(report: IngestReport, skips_shown: int | None = SKIPS_SHOWN) -> None:
    chat_formats = [f"{name} {count}" for name, count in sorted(report.formats.items()) if name != "document"]
    parts = []
    if report.messages_read or not report.documents:
        by_format = f" ({', '.join(chat_formats)})" if len(chat_formats) > 1 else ""
        parts.append(
            f"{plural(report.messages_read, 'message')} read{by_format} in "
            f"{plural(report.conversations, 'conversation')}"
        )
    if report.documents:
        parts.append(f"{plural(report.documents, 'document')} read")
    missed = [plural(len(report.skipped), "item") + " skipped"] if report.skipped else []
    missed += [plural(len(report.not_read), "file") + " not read"] if report.not_read else []
    tail = f"; {', '.join(missed)}" if missed else ""
    rebuilt = report.conversations_rebuilt + report.documents_rebuilt
    if not rebuilt and (report.conversations or report.documents):
        out.print(f"{report.format}: {'; '.join(parts)}, unchanged since the last ingest{tail}", markup=False)
    else:
        made = []
        if report.conversations:
            made.append(f"{report.conversations_rebuilt} rebuilt: {plural(report.threads, 'thread')}")
        if report.documents:
            rebuilt_documents = plural(report.documents_rebuilt, "document") if report.conversations else None
            made.append(f"{rebuilt_documents or report.documents_rebuilt} rebuilt")
        made += [plural(report.chunks, "chunk"), f"{report.embedded} embedded, {report.embeddings_reused} reused"]
        out.print(f"{report.format}: {'; '.join(parts)} ({', '.join(made)}){tail}", markup=False)
    if report.ignored:
        out.print(
            "left out on purpose: " + ", ".join(f"{n} {kind}" for kind, n in sorted(report.ignored.items())),
            markup=False,
        )
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
        click.echo(f"error: nothing usable was read from {path}{forced} (see above for why)", err=True)
    elif status == EXIT_SKIPPED:
        click.echo(f"error: --strict, and {plural(skipped, 'item')} were skipped", err=True)
    if status:
        sys.exit(status)


# Where coding assistants keep their history: (reader, variable that moves their home, default home, folder).
HISTORY_FOLDERS = {
    "claude_code": ("Claude Code", "CLAUDE_CONFIG_DIR", "~/.claude", "projects"),
    "codex_cli": ("Codex CLI", "CODEX_HOME", "~/.codex", "sessions"),
    "gemini_cli": ("Gemini CLI", None, "~/.gemini", "tmp"),
}


def history_folder(reader: str) -> Path:
    """The folder a coding assistant keeps its sessions in, or `NotFoundError` saying where it looked."""
    tool, variable, home, folder = HISTORY_FOLDERS[reader]
    base = Path((variable and os.environ.get(variable)) or home).expanduser()
    found = base / folder
    if not found.is_dir():
        moved = f" (set {variable} if it lives elsewhere)" if variable else ""
        raise NotFoundError(f"no {tool} history at {found}{moved}")
    return found


def _sources(path: str | None, format: str | None, tools: list[str]) -> list[tuple[str, str | None]]:
    if path is None and not tools:
        raise click.UsageError("give a PATH to ingest, or --claude-code / --codex / --gemini")
    if format is not None and tools:
        raise click.UsageError("--format applies to PATH only; the history options choose their own reader")
    found = [(path, format)] if path is not None else []
    return found + [(str(history_folder(reader)), reader) for reader in tools]


def _ingest_option(flag: str, reader: str) -> Callable:
    tool, variable, home, folder = HISTORY_FOLDERS[reader]
    where = f"${variable}/{folder}, default {home}/{folder}" if variable else f"{home}/{folder}"
    return click.option(flag, reader, is_flag=True, help=f"Also ingest every {tool} session ({where}).")


@main.command(epilog=EXIT_CODES_HELP)
@click.argument("path", type=click.Path(exists=True), required=False)
@click.option(
    "--format",
    "format",
    type=FormatChoice(document=True),
    default=None,
    help="Read the whole PATH with this reader only (document: documents only).",
)
@_ingest_option("--claude-code", "claude_code")
@_ingest_option("--codex", "codex_cli")
@_ingest_option("--gemini", "gemini_cli")
@click.option("--json", "as_json", is_flag=True, help="Print the report as JSON (a list with the history options).")
@click.option("--quiet", "-q", is_flag=True, help="No progress on stderr (the report is still printed).")
@click.option(
    "--wait/--no-wait",
    default=False,
    envvar="THREADKEEP_INGEST_WAIT",
    show_envvar=True,
    help="Wait for the vectors (progress and time left on stderr). Without it the command returns once "
    "everything is stored and searchable by full text, and a background `threadkeep embed` makes them.",
)
@strict_option
@skips_option
@max_file_size_option
@db_option
def ingest(
    path: str | None,
    format: str | None,
    claude_code: bool,
    codex_cli: bool,
    gemini_cli: bool,
    as_json: bool,
    quiet: bool,
    wait: bool,
    strict: bool,
    skips: str,
    max_file_size: str | None,
    db: str | None,
) -> None:
    """Read chat exports and documents (a file, a folder, or a .zip) into the store, creating the
    store if needed.

    A folder is read file by file: each export goes to its reader (a folder that is one
    export, like a Slack workspace, is read whole), documents are read as documents, and
    every file not read is listed with the reason.

    Only conversations whose messages changed are rebuilt; Ctrl-C keeps every conversation
    stored so far, and running the command again finishes the rest. --claude-code, --codex
    and --gemini find those tools' session history where they keep it.
    """
    wanted = {"claude_code": claude_code, "codex_cli": codex_cli, "gemini_cli": gemini_cli}
    tools = [reader for reader, asked in wanted.items() if asked]
    sources = _sources(path, format, tools)
    shown = _skips_shown(skips)
    limits = _limits(max_file_size)
    with open_kb(db, create=True) as kb:
        reports = [
            (source, _ingest_with_progress(kb, source, reader, quiet, limits, wait)) for source, reader in sources
        ]
        background = None
        if reports[-1][1].with_vector < reports[-1][1].to_embed:
            background = kb.start_background_embedding()
    if as_json:
        if path is not None and not tools:
            click.echo(json.dumps(reports[0][1].to_dict(shown), ensure_ascii=False, indent=2))
        else:
            listed = [{"path": source, **report.to_dict(shown)} for source, report in reports]
            click.echo(json.dumps(listed, ensure_ascii=False, indent=2))
    else:
        for source, report in reports:
            if len(reports) > 1:
                out.print(f"{source}:", markup=False)
            _print_report(report, shown)
    if not as_json:
        _print_vectors(*reports[-1][1].vectors, background)
    for source, report in reports:
        _finish(source, report.read_anything, len(report.skipped), strict, format)


def _print_vectors(with_vector: int, to_embed: int, background: int | None = None, stopped: str | None = None) -> None:
    """Where the store's vectors stand, when some are still to be made."""
    if with_vector >= to_embed:
        return
    if background:
        made = f"a background process ({background}) makes the rest: `threadkeep embed` shows its progress"
    elif stopped:
        made = f"the background embedder stopped ({stopped}): `threadkeep embed` makes the rest"
    else:
        made = "`threadkeep embed` makes the rest"
    out.print(
        f"searchable by full text; vectors for {with_vector:,} of {to_embed:,} chunks so far (search by meaning "
        f"covers those): {made} (`ingest --wait` waits for them)",
        markup=False,
    )


def _signature(path: Path) -> tuple[int, float, int]:
    """Files, latest change and total size under a path: a round with the same signature has nothing new."""
    files = [path] if path.is_file() else [item for item in path.rglob("*") if item.is_file()]
    stats = [item.stat() for item in files]
    return len(stats), max((stat.st_mtime for stat in stats), default=0.0), sum(stat.st_size for stat in stats)


@main.command()
@click.argument("path", type=click.Path(exists=True))
@click.option("--format", "format", type=FormatChoice(document=True), default=None, help="Force a reader.")
@click.option(
    "--every", "interval", default=60.0, show_default=True, type=click.FloatRange(min=0), help="Seconds between looks."
)
@click.option(
    "--rounds", default=None, type=click.IntRange(min=1), help="Stop after this many looks (default: until Ctrl-C)."
)
@db_option
def watch(path: str, format: str | None, interval: float, rounds: int | None, db: str | None) -> None:
    """Keep a growing export folder ingested: look every --every seconds and ingest when files changed.

    Only the conversations whose messages changed are rebuilt. Ctrl-C stops between rounds or
    between conversations; what was stored stays.
    """
    last: tuple[int, float, int] | None = None
    done = 0
    with open_kb(db, create=True) as kb:
        location = kb.stats()["location"]
        click.echo(f"watching {path} into {location} every {interval:g} s (Ctrl-C stops)", err=True)
        try:
            while rounds is None or done < rounds:
                if done:
                    time.sleep(interval)
                done += 1
                signature = _signature(Path(path))
                if signature == last:
                    continue
                last = signature
                report = _ingest_with_progress(kb, path, format, quiet=True)
                stamp = datetime.now().astimezone().strftime("%H:%M:%S")
                out.print(f"[{stamp}] ", end="", markup=False)
                _print_report(report)
        except KeyboardInterrupt:
            click.echo("\nstopped watching; everything ingested so far is stored", err=True)
            sys.exit(130)


@main.command(epilog=EXIT_CODES_HELP)
@click.argument("path", type=click.Path(exists=True))
@click.option("--format", "format", type=FormatChoice(), default=None, help="Force a reader.")
@click.option("--jsonl", "as_jsonl", is_flag=True, help="One JSON line per message: id, thread, reply_to.")
@click.option("--json", "as_json", is_flag=True, help="The threads as one JSON list: conversation, messages, replies.")
@click.option(
    "--assigner",
    type=click.Choice(["learned", "rules"]),
    default=None,
    help="The learned reply-link model (the default) or the hand-written rules.",
)
@strict_option
@skips_option
def threads(
    path: str, format: str | None, as_jsonl: bool, as_json: bool, assigner: str | None, strict: bool, skips: str
) -> None:
    """Reconstruct the threads of an export (no store needed)."""
    from threadkeep.threads import ThreadSettings

    shown = _skips_shown(skips)
    settings = ThreadSettings(assigner=assigner) if assigner else ThreadSettings()
    result, found = threads_of(path, format, settings)
    _report_read(path, result, shown, strict, format)
    labels = [f"{thread.conversation}#{number}" for number, thread in enumerate(found)]
    if as_json:
        listed = [thread.to_dict(label) for thread, label in zip(found, labels, strict=True)]
        click.echo(json.dumps(listed, ensure_ascii=False, indent=2))
        return
    if as_jsonl:
        links = [link for thread, label in zip(found, labels, strict=True) for link in thread.links(label)]
        click.echo("\n".join(json.dumps(link, ensure_ascii=False) for link in links))
        return
    by_id = {message.id: message for message in result.messages}
    titles = {conversation.ref: conversation.title or conversation.ref for conversation in result.conversations}
    for number, thread in enumerate(found):
        first = by_id[thread.message_ids[0]]
        title = escape(titles.get(thread.conversation, thread.conversation))
        out.print(f"[bold]thread {number}[/bold] {title} {first.sent_at:%Y-%m-%d %H:%M}")
        for message_id in thread.message_ids:
            message = by_id[message_id]
            out.print(f"  {message.display_name}: {message.text}", markup=False)


@main.command(epilog=EXIT_CODES_HELP)
@click.argument("path", type=click.Path(exists=True))
@click.option("--format", "format", type=FormatChoice(), default=None, help="Force a reader.")
@click.option("--jsonl", "as_jsonl", is_flag=True, help="Print the normalized messages, one JSON object a line.")
@strict_option
@skips_option
def normalize(path: str, format: str | None, as_jsonl: bool, strict: bool, skips: str) -> None:
    """Print an export as text, or as normalized messages (--jsonl).

    Assistant chats are printed as a transcript ("> " user turns, then the reply), which
    `threadkeep ingest` reads back; group and direct chats one line per message with its
    time and speaker, under the conversation's title.
    """
    shown = _skips_shown(skips)
    result = read_chats(path, format)
    _report_read(path, result, shown, strict, format)
    by_conversation: dict[str, list[Message]] = {}
    for message in result.messages:
        by_conversation.setdefault(message.conversation, []).append(message)
    if as_jsonl:
        lines = [json.dumps(m.to_dict(), ensure_ascii=False) for m in result.messages]
        click.echo("\n".join(lines))
        return
    from threadkeep.transcript import to_transcript

    conversations = {conversation.ref: conversation for conversation in result.conversations}
    blocks = []
    for ref, messages in by_conversation.items():
        conversation = conversations.get(ref, Conversation(ref, ref))
        if conversation.kind == "assistant":
            blocks.append(to_transcript(messages).rstrip("\n"))
        else:
            blocks.append("\n".join([f"# {conversation.title or ref}", *map(chat_line, messages)]))
    click.echo("\n\n".join(blocks))


def _report_read(path: str, result: ReadResult, shown: int | None, strict: bool, format: str | None) -> None:
    """Skips and files not read on stderr; exit now when nothing was read or --strict was broken."""
    _print_skips("skipped", result.skipped, shown)
    _print_skips("not read", result.not_read, shown)
    _finish(path, bool(result.messages), len(result.skipped), strict, format)


def chat_line(message: Message) -> str:
    """`[2026-05-14 10:02] 小明: text`, later lines of a multi-line message indented under it."""
    from threadkeep.chunks.chat import transcript_line

    text = "(recalled)" if message.recalled else message.text
    first, *rest = transcript_line(replace(message, text=text)).split("\n")
    return "\n".join([first, *(f"    {line}" for line in rest)])


def _pending_vectors(kb: KnowledgeBase) -> tuple[tuple[int, int] | None, str | None]:
    """The store's vector coverage while vectors are missing, and what stopped the background embedder."""
    vectors = kb.pending_coverage()
    return vectors, kb.embedding_failure() if vectors else None


def _warn_coverage(vectors: tuple[int, int] | None, stopped: str | None) -> None:
    """Say on stderr that results come from full text alone, or partly, while vectors are being made."""
    if vectors is None:
        return
    with_vector, to_embed = vectors
    what = "full text only (no vectors yet)" if not with_vector else "partly by meaning"
    maker = "`threadkeep embed` (or the background one)"
    if stopped:
        maker = f"`threadkeep embed` (the background one stopped: {stopped})"
    err.print(
        f"note: {what}: vectors for {with_vector:,} of {to_embed:,} chunks; the others are found by their words "
        f"alone until {maker} has made them",
        markup=False,
    )


def _print_hits(hits: list[Hit]) -> None:
    if not hits:
        out.print("no matches")
    for rank, hit in enumerate(hits, start=1):
        chunk = hit.chunk
        if chunk.source_type == "document":
            where = f"{' › '.join(chunk.heading_path or (chunk.title,))} (updated {chunk.occurred_at:%Y-%m-%d})"
        else:
            where = f"{chunk.title or chunk.source_ref}, {chunk.occurred_at:%Y-%m-%d}"
            if chunk.resolution_state:
                where += f" [{chunk.resolution_state}]"
            if chunk.has_unresolved_media:
                where += " (includes an attachment whose content was not read)"
        out.print(f"[bold]{rank}.[/bold] {chunk.source_type}: {escape(where)}  score {hit.score:.3g}")
        out.print(chunk.text, markup=False)
        out.print()


@main.command()
@click.argument("query")
@click.option("--k", default=5, show_default=True, type=click.IntRange(min=1), help="How many chunks to return.")
@click.option("--conversation", default=None, help="Only this conversation (its ref, see `threadkeep conversations`).")
@click.option(
    "--source-type", type=click.Choice(["chat", "document"]), default=None, help="Only chat threads or only documents."
)
@click.option(
    "--per-source",
    type=click.IntRange(1, 50),
    default=None,
    help="Up to N document sections and N chat threads, interleaved (instead of the overall best --k).",
)
@json_option
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
    """Search the store for passages, best first (meaning and words both count). QUERY `-` reads stdin."""
    query = _text_argument(query, "query")
    filters = SearchFilters(conversation=conversation, source_type=source_type)
    with open_kb(db) as kb:
        require_content(kb)
        hits = kb.search(query, k=k, filters=filters, now=parse_now(now), per_source=per_source)
        vectors, stopped = _pending_vectors(kb)
    if as_json:
        found = {**search_to_dict(query, hits), **coverage_to_dict(vectors, stopped)}
        click.echo(json.dumps(found, ensure_ascii=False, indent=2))
    else:
        _warn_coverage(vectors, stopped)
        _print_hits(hits)


@main.command()
@click.argument("question")
@click.option("--k", default=10, show_default=True, type=click.IntRange(min=1), help="How many chunks to consider.")
@click.option("--conversation", default=None, help="Only this conversation (its ref, see `threadkeep conversations`).")
@json_option
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
    reason and the closest passages, labelled as not an answer.

    QUESTION `-` reads the question from stdin.
    """
    question = _text_argument(question, "question")
    from threadkeep.generate import Endpoint

    endpoint = Endpoint.from_environment() if generate else None
    with open_kb(db) as kb:
        require_content(kb)
        answer = kb.ask(
            question,
            k=k,
            filters=SearchFilters(conversation=conversation),
            now=parse_now(now),
            endpoint=endpoint,
            show_nearest=show_nearest,
        )
        vectors, stopped = _pending_vectors(kb)
    if as_json:
        click.echo(json.dumps({**answer.to_dict(), **coverage_to_dict(vectors, stopped)}, ensure_ascii=False, indent=2))
        return
    _warn_coverage(vectors, stopped)
    out.print(answer.generated_text or answer.text, markup=False)
    if answer.generated_text:
        out.print("\n[dim]Sources (as computed, whatever the model wrote):[/dim]")
        out.print(answer.text, markup=False)


@main.command()
@json_option
@db_option
def stats(as_json: bool, db: str | None) -> None:
    """What the store holds."""
    with open_kb(db) as kb:
        figures = kb.stats()
    if as_json:
        click.echo(json.dumps(figures, ensure_ascii=False, indent=2))
        return
    for key, value in figures.items():
        click.echo(f"{key:>16}: {value}")
    if not figures.get("chunks"):
        click.echo(f"the store at {figures['location']} is empty: add data with `threadkeep ingest PATH`")


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
    with open_kb(db) as kb:
        report = kb.apply_delta(path)
    if as_json:
        click.echo(json.dumps(report.to_dict(shown), ensure_ascii=False, indent=2))
    else:
        out.print(
            f"delta: {report.upserted} upserted, {report.recalled} recalled, {report.flagged_missing} flagged for "
            f"review; {report.conversations_rebuilt} of {plural(report.conversations, 'conversation')} rebuilt, "
            f"{plural(report.chunks, 'chunk')}, {report.embedded} embedded, {len(report.skipped)} skipped",
            markup=False,
        )
        _print_skips("skipped", report.skipped, shown)
        _print_skips("error", report.rejected, shown)
    if report.rejected:
        left = "no conversation was changed" if report.refused_all else f"left unchanged: {', '.join(report.refused)}"
        click.echo(f"error: {len(report.rejected)} delta lines could not be applied; {left}", err=True)
        sys.exit(1)
    applied = report.upserted + report.recalled + report.flagged_missing
    _finish(path, applied > 0, len(report.skipped), strict)


def _print_items(items: Sequence[Listed], as_json: bool, line: Callable[[Any], str], empty: str = "") -> None:
    """A listing as JSON, or one line per item."""
    if as_json:
        click.echo(json.dumps([item.to_dict() for item in items], ensure_ascii=False, indent=2))
        return
    if not items and empty:
        out.print(empty)
    for item in items:
        out.print(line(item), markup=False)


@main.command()
@json_option
@db_option
def review(as_json: bool, db: str | None) -> None:
    """Messages flagged for a person to look at (e.g. missing from the latest export; nothing was deleted),
    and conversations forgotten on request."""
    with open_kb(db) as kb:
        items = kb.review()

    def line(item: ReviewItem) -> str:
        if item.message_id is None:
            return (
                f"{item.conversation}  {item.reason} on {item.flagged_at[:10]}: "
                f"{item.title!r}, {plural(item.messages or 0, 'message')}"
            )
        who = item.sender_name or item.sender or "?"
        text = item.text if item.text is not None else "(not in the store)"
        return f"{item.conversation}/{item.message_id}  {item.reason}  {who}: {text}"

    _print_items(items, as_json, line, "nothing to review")


@main.command()
@json_option
@db_option
def conversations(as_json: bool, db: str | None) -> None:
    """List the conversations in the store: ref (for --conversation and forget), title, kind, messages, dates."""
    with open_kb(db) as kb:
        items = kb.conversations()

    def line(item: ConversationSummary) -> str:
        first, last = (item.first_message_at or "")[:10], (item.last_message_at or "")[:10]
        dates = first if first == last else f"{first} → {last}"
        title, kind = item.conversation.display_title, item.conversation.kind
        return f"{item.ref}  {title}  ({kind}, {plural(item.messages, 'message')}, {dates})"

    _print_items(items, as_json, line, "no conversations in the store")


@main.command()
@click.argument("conversation")
@click.option("--yes", "-y", is_flag=True, help="Do not ask for confirmation.")
@db_option
def forget(conversation: str, yes: bool, db: str | None) -> None:
    """Remove a conversation (by its ref, see `threadkeep conversations`) and everything built from it.

    Nothing else ever deletes messages: a message missing from a newer export is only flagged for
    review. The store keeps a record that the conversation was forgotten (shown by `threadkeep review`),
    not its text. Ingesting an export that still holds the conversation adds it back.
    """
    with open_kb(db) as kb:
        item = next((item for item in kb.conversations() if item.ref == conversation), None)
        if item is None:
            raise NotFoundError(f"no conversation {conversation!r} in the store (see `threadkeep conversations`)")
        location = kb.stats()["location"]
        what = f"{conversation} {item.conversation.display_title!r} ({plural(item.messages, 'message')})"
        if not yes:
            click.confirm(f"Forget {what} from the store at {location}? This cannot be undone", abort=True, err=True)
        record = kb.forget(conversation)
    if record is None:
        raise NotFoundError(f"no conversation {conversation!r} in the store (see `threadkeep conversations`)")
    click.echo(f"forgot {what}; the record of it is in `threadkeep review`")


@main.command()
@json_option
@db_option
def check(as_json: bool, db: str | None) -> None:
    """Verify the store: evidence ids exist, each message is in one thread, vectors match the model.

    Exits with status 1 when a problem is found. Vectors not made yet are work pending for
    `threadkeep embed`, not a problem: they are counted, and the store is consistent.
    """
    with open_kb(db) as kb:
        problems = kb.check()
        with_vector, to_embed = kb.vector_coverage()
        stopped = kb.embedding_failure() if with_vector < to_embed else None
    if as_json:
        figures = {"consistent": not problems, "problems": problems, "vectors_pending": to_embed - with_vector}
        if stopped:
            figures["embedding_stopped"] = stopped
        click.echo(json.dumps(figures, ensure_ascii=False, indent=2))
        if problems:
            sys.exit(1)
        return
    for problem in problems:
        out.print(f"problem: {problem}", markup=False)
    if problems:
        sys.exit(1)
    out.print("store is consistent")
    _print_vectors(with_vector, to_embed, stopped=stopped)


@main.command()
@click.option("--json", "as_json", is_flag=True, help="Print the report as JSON.")
@click.option("--quiet", "-q", is_flag=True, help="No progress on stderr.")
@click.option("--background", is_flag=True, hidden=True, help="Run at low priority; exit if another process embeds.")
@db_option
def embed(as_json: bool, quiet: bool, background: bool, db: str | None) -> None:
    """Make the vectors an ingest left to make (search by meaning covers only chunks with one).

    Progress and time left on stderr. Stopping it (Ctrl-C, a kill) keeps every vector made so far;
    running it again goes on from there. With a store already being embedded by another process,
    it follows that one's progress and takes over the rest. On PostgreSQL, any number of `threadkeep
    embed` processes, on any machines, share the work.
    """
    if background:
        with suppress(OSError):
            os.nice(10)  # the user's own work (and searches) come first
    with open_kb(db) as kb, IngestProgress("vectors", quiet) as progress:
        holder = kb.embedding_process()
        try:
            report = kb.embed(progress, wait=not background)
        except KeyboardInterrupt:
            with_vector, to_embed = kb.vector_coverage()
            click.echo(
                f"stopped: vectors for {with_vector:,} of {to_embed:,} chunks are kept; run it again to go on",
                err=True,
            )
            sys.exit(130)
        with_vector, to_embed = kb.vector_coverage()
    if as_json:
        click.echo(
            json.dumps(
                {
                    **(report.to_dict() if report else {}),
                    "with_vector": with_vector,
                    "to_embed": to_embed,
                    "pending": to_embed - with_vector,
                },
                indent=2,
            )
        )
        return
    if report is None and background:
        return
    done = f"{report.embedded:,} inputs embedded, {report.reused:,} chunks reused a vector" if report else ""
    by_other = f" (process {holder} made some)" if holder and holder != os.getpid() else ""
    out.print(f"vectors for {with_vector:,} of {to_embed:,} chunks{by_other}; {done}".rstrip("; "), markup=False)


@main.command()
@click.argument("document_id")
@db_option
def remove(document_id: str, db: str | None) -> None:
    """Remove a document (by its id, see `threadkeep documents`) and its chunks from the store."""
    with open_kb(db) as kb:
        removed = kb.remove(document_id)
    if not removed:
        raise NotFoundError(f"no document {document_id!r} in the store (see `threadkeep documents`)")
    out.print(f"removed {document_id}", markup=False)


@main.command()
@json_option
@db_option
def documents(as_json: bool, db: str | None) -> None:
    """List the documents in the store: id (for `remove`), title, last update, file."""
    with open_kb(db) as kb:
        items = kb.documents()
    _print_items(
        items,
        as_json,
        lambda item: f"{item.id}  {item.title}  (updated {item.updated_at[:10]}, {item.path})",
        "no documents in the store",
    )


def sample_path(name: str) -> Path:
    return Path(str(resources.files("threadkeep") / "samples" / name))


def _foreign_data(kb: KnowledgeBase) -> list[str]:
    """What the store holds besides the bundled samples (the demo must not mix itself into real data)."""
    sample_refs = {
        json.loads(line)["conversationRef"]
        for line in (sample_path("support_group") / "conversations.jsonl").read_text(encoding="utf-8").splitlines()
        if line.strip()
    }
    sample_docs = sample_path("docs").resolve()
    foreign = [item.ref for item in kb.conversations() if item.ref not in sample_refs]
    foreign += [item.id for item in kb.documents() if Path(item.path).resolve().parent != sample_docs]
    return foreign


@main.command()
@click.option(
    "--db",
    "db",
    default=None,
    envvar="THREADKEEP_DB",
    show_envvar=True,
    help=f"Where to keep the demo store (default {KnowledgeBase.default_location()}, so the next commands find it).",
)
def demo(db: str | None) -> None:
    """Ingest the bundled sample support group and documents, then ask a few questions.

    The store is kept, so `threadkeep ask`, `search`, `stats`... work on it afterwards; running
    the demo again changes nothing. A store that already holds other data is left alone.
    """
    with open_kb(db, create=True) as kb:
        location = str(kb.stats()["location"])
        if "://" not in location:
            location = str(Path(location).resolve())
        foreign = _foreign_data(kb)
        if foreign:
            raise RefusedError(
                f"the store at {location} already holds other data ({', '.join(foreign[:3])}"
                f"{', ...' if len(foreign) > 3 else ''}); run the demo in a store of its own: "
                "threadkeep demo --db demo.db"
            )
        out.print(f"[bold]Ingesting the sample support group[/bold] into {escape(location)}")
        _print_report(_ingest_with_progress(kb, str(sample_path("support_group")), "bundle"))
        out.print("[bold]Ingesting the sample product documents[/bold]")
        _print_report(_ingest_with_progress(kb, str(sample_path("docs")), None))
        questions = json.loads((sample_path("support_group") / "questions.json").read_text(encoding="utf-8"))
        for item in [*questions[:3], questions[-1]]:
            out.print(f"\n[bold]? {escape(item['question'])}[/bold]")
            out.print(kb.ask(item["question"]).text, markup=False)
    again = f" --db {shlex.quote(db)}" if db else ""
    out.print(
        f"\nThe demo store is kept in {location}. Ask it yourself:\n"
        f"  threadkeep ask {shlex.quote(questions[3]['question'])}{again}\n"
        f"  threadkeep search E1024{again}\n"
        f"  threadkeep serve{again}    # the web page\n"
        "To use your own data in a separate store, pass --db (e.g. --db team.db) to ingest and every other command.",
        markup=False,
    )


@main.command()
@click.option("--host", default="127.0.0.1", show_default=True, help="Address to listen on (others need a token).")
@click.option("--port", default=8765, show_default=True, type=click.IntRange(0, 65535), help="Port to listen on.")
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
    from threadkeep.server.http import serve as serve_http

    try:
        serve_http(db, host=host, port=port, token=token, ingest_roots=list(ingest_roots) or None)
    except ConfigurationError as error:
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
    except ConfigurationError as error:
        raise click.UsageError(str(error)) from error


def run() -> None:
    main(prog_name="threadkeep")


if __name__ == "__main__":
    run()
