"""Readers: one module per export format, each turning files into the shared model.

A reader module has `NAME`, `detect(path) -> bool` (cheap: look at names and
the first bytes) and `read(path) -> ReadResult`.

`plan_path` walks what the user gave, file by file: each file goes to the reader
that claims it, a folder that is one export (a Slack workspace, a bundle, a Gemini
`chats/` folder, a Discord or Telegram export...) goes whole to its reader, zips
are opened (within `Limits`) and walked the same way, documents are handed back
to the caller, and every other file is listed as not read, with the reason.
`read_path` reads the chat exports of such a plan into one `ReadResult`. Paths in
what they report are relative to the path given (`export.zip/...` inside a zip).
"""

from __future__ import annotations

import contextlib
import dataclasses
import fnmatch
import importlib
import json
import tempfile
import zipfile
import zlib
from collections.abc import Callable, Iterator
from functools import cache
from pathlib import Path, PurePosixPath
from types import ModuleType

from threadkeep.errors import ArchiveError, UnknownFormatError
from threadkeep.model import Conversation, ReadResult, Skip
from threadkeep.readers._io import decode, json_error_reason, loads, max_file_bytes, size_text

# Detection order matters: specific formats before generic ones (plain text last).
READER_MODULES: tuple[str, ...] = (
    "bundle",
    "slack",
    "discord",
    "telegram",
    "whatsapp",
    "wechat",
    "irc",
    "messenger",
    "line",
    "kakaotalk",
    "signal_export",
    "claude_code",
    "codex_cli",
    "gemini_cli",
    "continue_dev",
    "chatgpt",
    "claude_ai",
    "specstory",
    "transcript",
)
# Formats whose folder is one export, read whole so that what one file says about another
# (user names, thread parents, resumed sessions, a session's log) is kept. Such a folder is
# read whole only when no other reader claims a file in it; otherwise its files are read one by one.
FOLDER_UNITS = frozenset(
    {"bundle", "slack", "discord", "telegram", "gemini_cli", "claude_code", "codex_cli", "messenger", "signal"}
)
# Readers that accept almost any text: never asked about a file that is a document by its suffix.
GENERIC_READERS = frozenset({"transcript"})
PLAIN_TEXT_SUFFIXES = frozenset({"", ".txt", ".text", ".log"})
# Files an export holds beside the ones its reader claims, by file name pattern: None when the
# reader reads them with the export, else why they are not read (listed with the files not read).
_ACCOUNT_DATA = "account data of the export, not conversation text"
COMPANIONS: dict[str, dict[str, str | None]] = {
    "bundle": {
        "members.jsonl": None,
        "conversations.jsonl": None,
        "manifest.json": None,
        "delta.jsonl": "a delta, never part of a full ingest: apply it with `threadkeep apply-delta`",
    },
    "slack": {
        "users.json": None,
        "channels.json": None,
        "groups.json": None,
        "dms.json": None,
        "mpims.json": None,
        "integration_logs.json": "Slack's log of app installs, not conversation text",
        "canvases.json": "Slack canvases are not read",
    },
    "chatgpt": {
        "chat.html": "ChatGPT's HTML view of conversations.json; read once, from the JSON",
        "user.json": _ACCOUNT_DATA,
        "message_feedback.json": _ACCOUNT_DATA,
        "model_comparisons.json": _ACCOUNT_DATA,
        "shared_conversations.json": "list of shared links; the conversations are in conversations.json",
    },
    "continue_dev": {"sessions.json": None},
    "claude_ai": {
        "users.json": _ACCOUNT_DATA,
        "projects.json": "Claude.ai projects are not read",
    },
    "signal": {
        "index.html": "signal-export's HTML view of the chat; read once, from data.json or chat.md",
    },
    "telegram": {
        "messages*.html": "Telegram's HTML view of the chat; read once, from result.json",
        "export_results.html": "Telegram's HTML view of the chat; read once, from result.json",
    },
}
_MEDIA = ".jpg .jpeg .png .gif .webp .heic .heif .bmp .tif .tiff .svg .ico .mp4 .mov .m4v .avi .mkv .webm .3gp"
MEDIA_SUFFIXES = frozenset(f"{_MEDIA} .mp3 .m4a .aac .ogg .oga .opus .wav .flac .amr .tgs".split(" "))
# Zip-based document formats: never opened as an archive of an export.
ZIPPED_DOCUMENTS = frozenset({".docx", ".xlsx", ".pptx", ".odt", ".ods", ".odp", ".epub"})
_HEAD_BYTES = 8192
_COPY_CHUNK = 1 << 20
# Below this size a zip member may be compressed any amount (tiny files of spaces compress 100:1).
_RATIO_FREE_BYTES = 10 << 20


@dataclasses.dataclass(frozen=True, slots=True)
class Limits:
    """Caps on what one ingest reads. Generous for real exports; each names its option when hit."""

    max_file_bytes: int = 1 << 30  # one file read into memory (1 GB)
    max_zip_members: int = 500_000  # files in one zip (a big Slack export is channels × days)
    max_zip_bytes: int = 8 << 30  # everything unpacked from zips in one ingest (8 GB)
    max_zip_ratio: int = 200  # unpacked : packed size of one member above 10 MB (text is ~5-20:1)
    max_zip_depth: int = 3  # zips inside zips


@dataclasses.dataclass(frozen=True, slots=True)
class Unit:
    """One thing to read: a file, or a folder that is one export. `reader` is a format name or "document"."""

    reader: str
    path: Path  # where it is on disk (inside a temporary folder for zip members)
    display: str  # where it is for the user: relative to the path given


@dataclasses.dataclass(slots=True)
class Plan:
    """What a walk found: units to read, files not read (with why), damaged files (with where)."""

    units: list[Unit] = dataclasses.field(default_factory=list)
    not_read: list[Skip] = dataclasses.field(default_factory=list)
    broken: list[Skip] = dataclasses.field(default_factory=list)
    limits: Limits = dataclasses.field(default_factory=Limits)
    # (real folder, what it is called for the user), longest first once the walk is done.
    _prefixes: list[tuple[str, str]] = dataclasses.field(default_factory=list)
    _unpacked: list[Path] = dataclasses.field(default_factory=list)  # temporary folders of opened zips

    def in_archive(self, unit: Unit) -> bool:
        """Whether the unit was unpacked from a zip (its `path` is gone once the plan's block ends)."""
        return any(unit.path.is_relative_to(folder) for folder in self._unpacked)

    def display(self, file: str) -> str:
        """A path a reader reported, as the user knows it (never a temporary or server path)."""
        for real, shown in self._prefixes:
            if file == real:
                return shown or "."
            if file.startswith(real + "/") or file.startswith(real + "\\"):
                rest = file[len(real) + 1 :].replace("\\", "/")
                return f"{shown}/{rest}" if shown else rest
        return Path(file).name

    def shown(self, skip: Skip) -> Skip:
        return dataclasses.replace(skip, file=self.display(skip.file))

    def chat_units(self) -> list[Unit]:
        return [unit for unit in self.units if unit.reader != "document"]

    def document_units(self) -> list[Unit]:
        return [unit for unit in self.units if unit.reader == "document"]


@cache
def reader_modules() -> tuple[ModuleType, ...]:
    return tuple(importlib.import_module(f"threadkeep.readers.{name}") for name in READER_MODULES)


def format_names() -> list[str]:
    return [module.NAME for module in reader_modules()]


def reader(name: str) -> ModuleType:
    by_name = {module.NAME: module for module in reader_modules()}
    if name not in by_name:
        raise UnknownFormatError(f"unknown format {name!r} (known: {', '.join(by_name)})")
    return by_name[name]


def _claims(module: ModuleType, path: Path) -> bool:
    try:
        return bool(module.detect(path))
    except (OSError, ValueError, RecursionError):
        # A file a detector cannot even look at is not its format; the walk says why it was not read.
        return False


def detect_format(path: Path) -> ModuleType:
    modules = reader_modules()
    for module in modules:
        if _claims(module, path):
            return module
    tried = ", ".join(module.NAME for module in modules)
    raise UnknownFormatError(f"{path}: not a format threadkeep reads (tried: {tried})")


# Hidden folders where tools keep the histories people ingest: walked like any other folder.
HISTORY_FOLDERS = frozenset({".specstory"})


def _is_hidden(name: str) -> bool:
    # "~$name.docx" is the lock file Word leaves beside an open document; __MACOSX holds zip resource forks.
    return (name.startswith((".", "~$")) or name == "__MACOSX") and name not in HISTORY_FOLDERS


def _companion_reason(readers: set[str], name: str) -> tuple[bool, str | None]:
    """(is a companion of one of these readers' exports, why it is not read or None when it is read)."""
    for reader_name in sorted(readers):
        for pattern, reason in COMPANIONS.get(reader_name, {}).items():
            if fnmatch.fnmatchcase(name, pattern):
                return True, reason
    return False, None


def _json_problem(path: Path) -> tuple[int | None, str] | None:
    """Where a .json / .jsonl file breaks, or None if it parses (or is too big to check here)."""
    try:
        if path.stat().st_size > max_file_bytes.get():
            return None
        text = decode(path.read_bytes(), str(path))[0].lstrip("\ufeff")
    except OSError:
        return None
    try:
        loads(text)
        return None
    except json.JSONDecodeError as error:
        whole = error
    except RecursionError:
        return None, "JSON nested too deeply to read"
    if path.suffix.lower() == ".jsonl" or whole.msg == "Extra data":
        for number, line in enumerate(text.splitlines(), start=1):
            if not line.strip():
                continue
            try:
                loads(line)
            except json.JSONDecodeError as error:
                return number, json_error_reason(error, line)
            except RecursionError:
                return number, "JSON nested too deeply to read"
        return None
    return whole.lineno, json_error_reason(whole, text)


def _looks_binary(head: bytes) -> bool:
    if not head:
        return False
    if b"\0" in head and not head.startswith((b"\xff\xfe", b"\xfe\xff")):
        return True
    text = decode(head, "")[0]
    odd = sum(1 for char in text if char == "\ufffd" or (ord(char) < 32 and char not in "\t\r\n\f"))
    return odd * 20 > len(text)


def _head_text(path: Path) -> str:
    try:
        with path.open("rb") as handle:
            return decode(handle.read(_HEAD_BYTES), str(path))[0]
    except OSError:
        return ""


def _has_words(path: Path) -> bool:
    """Whether a text file is prose rather than numbers and symbols (an annotation or data file)."""
    text = _head_text(path)
    letters = sum(1 for char in text if char.isalpha())
    visible = sum(1 for char in text if not char.isspace())
    return letters * 10 >= visible > 0


def unread_reason(path: Path) -> tuple[int | None, str, bool]:
    """Why no reader took `path`: (line, reason, damaged). Damaged files count as skipped, not as unknown."""
    try:
        size = path.stat().st_size
        with path.open("rb") as handle:
            head = handle.read(_HEAD_BYTES)
    except OSError as error:
        return None, f"cannot read: {error.strerror or error}", True
    suffix = path.suffix.lower()
    if size == 0:
        return None, "file is empty", False
    if suffix in MEDIA_SUFFIXES:
        return None, f"media file ({suffix}); threadkeep reads text", False
    if _looks_binary(head):
        return None, "binary file; not a format threadkeep reads", False
    if suffix in (".json", ".jsonl", ".ndjson"):
        problem = _json_problem(path)
        if problem is not None:
            return problem[0], problem[1], True
        return None, "JSON, but not an export shape any reader knows", False
    if suffix in PLAIN_TEXT_SUFFIXES and not _has_words(path):
        return None, "text without words (numbers and symbols: an annotation or data file?)", False
    return None, "not a chat export or document threadkeep reads", False


class _Walk:
    """One walk over the path a user gave. Temporary folders of opened zips live as long as `stack`."""

    def __init__(
        self,
        stack: contextlib.ExitStack,
        is_document: Callable[[Path], bool] | None,
        limits: Limits,
    ) -> None:
        self.stack = stack
        self.is_document = is_document
        self.limits = limits
        self.plan = Plan(limits=limits)
        self._claimant: dict[Path, str | None] = {}
        self._unzipped_bytes = 0

    # --- what claims what -------------------------------------------------------------------------

    def claimant(self, file: Path) -> str | None:
        """The reader that claims this file on its own, "document", or None."""
        if file not in self._claimant:
            self._claimant[file] = self._find_claimant(file)
        return self._claimant[file]

    def _find_claimant(self, file: Path) -> str | None:
        document = self.is_document is not None and self.is_document(file)
        if document and file.suffix.lower() in PLAIN_TEXT_SUFFIXES and not _has_words(file):
            document = False
        skip_generic = document and file.suffix.lower() not in PLAIN_TEXT_SUFFIXES
        for module in reader_modules():
            if skip_generic and module.NAME in GENERIC_READERS:
                continue
            if _claims(module, file):
                return module.NAME
        return "document" if document else None

    def _visible_files(self, folder: Path) -> Iterator[Path]:
        try:
            entries = sorted(folder.iterdir())
        except OSError:
            return
        for entry in entries:
            if _is_hidden(entry.name) or entry.is_symlink():
                continue
            if entry.is_dir():
                yield from self._visible_files(entry)
            elif entry.is_file():
                yield entry

    def folder_reader(self, folder: Path) -> str | None:
        """The reader that reads this folder whole, if it is one export and nothing else claims a file in it.

        The export must show in the folder itself (a file of its own, or a companion such as Slack's
        users.json), so that a folder merely holding an export somewhere below is not taken for one.
        """
        try:
            direct = [entry for entry in folder.iterdir() if entry.is_file() and not _is_hidden(entry.name)]
        except OSError:
            return None
        for module in reader_modules():
            if module.NAME not in FOLDER_UNITS or not _claims(module, folder):
                continue
            own = any(self.claimant(file) == module.NAME for file in direct)
            if not own and not any(_companion_reason({module.NAME}, file.name)[0] for file in direct):
                continue
            others = {self.claimant(file) for file in self._visible_files(folder)} - {module.NAME, None, "document"}
            return None if others else module.NAME
        return None

    # --- the walk ---------------------------------------------------------------------------------

    def not_read(self, display: str, reason: str, line: int | None = None) -> None:
        self.plan.not_read.append(Skip(display, line, reason))

    def start(self, path: Path, shown: str) -> Plan:
        """Walk `path`, called `shown` in what the plan reports ("" for a folder shown relative to itself)."""
        path = path.absolute()
        self.plan._prefixes.append((str(path), shown))
        if path.resolve() != path:
            # A reader that resolves symbolic links reports the real path; it is still this one.
            self.plan._prefixes.append((str(path.resolve()), shown))
        if path.is_dir():
            self.folder(path, shown, path.resolve(), None)
        elif self._is_archive(path, top=True):
            self.archive(path, shown, depth=0)
        else:
            self.file(path, shown, set(), None)
        self.plan._prefixes.sort(key=lambda item: len(item[0]), reverse=True)
        return self.plan

    def folder(self, folder: Path, display: str, root: Path, inside: str | None, depth: int = 0) -> None:
        """Walk `folder`; `inside` names the reader that reads it (or an enclosing folder) whole."""
        if inside is None:
            inside = self.folder_reader(folder)
            if inside is not None:
                self.plan.units.append(Unit(inside, folder, display or "."))
        try:
            entries = sorted(folder.iterdir())
        except OSError as error:
            self.not_read(display or ".", f"cannot list the folder: {error.strerror or error}")
            return
        files: list[Path] = []
        for entry in entries:
            shown = f"{display}/{entry.name}" if display else entry.name
            if _is_hidden(entry.name):
                what = "folder" if entry.is_dir() else "file"
                self.not_read(shown, f"hidden {what}; give its path to read it")
            elif entry.is_symlink():
                self._symlink(entry, shown, root)
            elif entry.is_dir():
                self.folder(entry, shown, root, inside, depth)
            elif entry.is_file():
                files.append(entry)
            else:
                self.not_read(shown, "not a regular file")
        readers = {inside} if inside else set()
        readers |= {self.claimant(file) for file in files if not self._too_big(file)} - {None, "document"}
        for file in files:
            shown = f"{display}/{file.name}" if display else file.name
            if self._is_archive(file, top=False):
                self.archive(file, shown, depth + 1)
            else:
                self.file(file, shown, readers, inside)

    def _symlink(self, entry: Path, shown: str, root: Path) -> None:
        try:
            target = entry.resolve(strict=True)
        except (OSError, RuntimeError):
            self.not_read(shown, "broken symbolic link")
            return
        if not target.is_relative_to(root):
            self.not_read(shown, "symbolic link to outside the folder given; not followed")
        elif target.is_dir():
            self.not_read(shown, "symbolic link to a folder; not followed (its files are read where they are)")
        else:
            self.not_read(shown, "symbolic link to a file in the folder; read where it is")

    def _too_big(self, file: Path) -> bool:
        try:
            return file.stat().st_size > self.limits.max_file_bytes
        except OSError:
            return False

    def file(self, file: Path, shown: str, readers: set[str], inside: str | None) -> None:
        try:
            size = file.stat().st_size
        except OSError as error:
            self.plan.broken.append(Skip(shown, None, f"cannot read: {error.strerror or error}"))
            return
        if size > self.limits.max_file_bytes:
            limit = size_text(self.limits.max_file_bytes)
            self.not_read(shown, f"file of {size_text(size)} is larger than the {limit} limit (--max-file-size)")
            return
        if size == 0:
            self.not_read(shown, "file is empty")
            return
        claimant = self.claimant(file)
        if claimant is not None and claimant == inside:
            return  # read with the folder it belongs to
        if claimant is None or claimant == "document":
            # ChatGPT's chat.html is a document by its suffix, but it is the export's own copy of the chats.
            companion, reason = _companion_reason(readers, file.name)
            if companion:
                if reason is not None:
                    self.not_read(shown, reason)
                return
        if claimant == "document" and inside is not None:
            # A README or notes inside an export belong to the export (the bundle spec ignores them).
            self.not_read(shown, f"a document inside a {inside} export; give its own path to read it")
            return
        if claimant is not None:
            self.plan.units.append(Unit(claimant, file, shown))
            return
        line, reason, damaged = unread_reason(file)
        (self.plan.broken if damaged else self.plan.not_read).append(Skip(shown, line, reason))

    # --- zips -------------------------------------------------------------------------------------

    def _is_archive(self, file: Path, top: bool) -> bool:
        suffix = file.suffix.lower()
        if suffix in ZIPPED_DOCUMENTS or (not top and suffix != ".zip"):
            return False
        try:
            return zipfile.is_zipfile(file)
        except OSError:
            return False

    def archive(self, file: Path, shown: str, depth: int) -> None:
        if depth > self.limits.max_zip_depth:
            self.not_read(shown, f"zip inside more than {self.limits.max_zip_depth} other zips; not opened")
            return
        folder = Path(self.stack.enter_context(tempfile.TemporaryDirectory(prefix="threadkeep-zip-")))
        try:
            self._extract(file, folder, shown)
        except ArchiveError as error:
            self.plan.broken.append(Skip(shown, None, str(error)))
            return
        self.plan._prefixes.extend({(str(folder), shown), (str(folder.resolve()), shown)})
        self.plan._unpacked.append(folder)
        self.folder(folder, shown, folder.resolve(), None, depth)

    def _extract(self, file: Path, folder: Path, shown: str) -> None:
        limits = self.limits
        try:
            archive = zipfile.ZipFile(file)
        except (zipfile.BadZipFile, OSError) as error:
            raise ArchiveError(f"damaged zip: {error}") from error
        with archive:
            members = [info for info in archive.infolist() if not info.is_dir()]
            if len(members) > limits.max_zip_members:
                raise ArchiveError(
                    f"zip holds {len(members):,} files, more than the {limits.max_zip_members:,} limit; not opened"
                )
            for info in members:
                name = PurePosixPath(info.filename.replace("\\", "/"))
                parts = [part for part in name.parts if part not in ("/", "..")]
                if not parts:
                    continue
                member = "/".join(parts)
                where = f"{shown}/{member}"
                problem = self._member_problem(info)
                if problem:
                    self.not_read(where, problem)
                    continue
                target = folder.joinpath(*parts)
                try:
                    target.parent.mkdir(parents=True, exist_ok=True)
                    self._copy_member(archive, info, target)
                except ArchiveError as error:
                    target.unlink(missing_ok=True)
                    self.not_read(where, str(error))
                except (zipfile.BadZipFile, zlib.error, EOFError, RuntimeError, NotImplementedError) as error:
                    target.unlink(missing_ok=True)
                    self.plan.broken.append(Skip(where, None, f"cannot unpack: {error}"))
                except OSError as error:
                    target.unlink(missing_ok=True)
                    self.plan.broken.append(Skip(where, None, f"cannot unpack: {error.strerror or error}"))

    def _member_problem(self, info: zipfile.ZipInfo) -> str | None:
        limits = self.limits
        if info.flag_bits & 0x1:
            return "encrypted zip member; not opened"
        if info.file_size > limits.max_file_bytes:
            return f"{size_text(info.file_size)} unpacked, larger than the {size_text(limits.max_file_bytes)} limit"
        ratio = info.file_size / max(info.compress_size, 1)
        if info.file_size > _RATIO_FREE_BYTES and ratio > limits.max_zip_ratio:
            return f"expands {ratio:,.0f}:1, more than the {limits.max_zip_ratio}:1 limit (a zip bomb?); not unpacked"
        if self._unzipped_bytes + info.file_size > limits.max_zip_bytes:
            return f"zips would unpack past the {size_text(limits.max_zip_bytes)} limit; not unpacked"
        return None

    def _copy_member(self, archive: zipfile.ZipFile, info: zipfile.ZipInfo, target: Path) -> None:
        # Count what is actually written: a member's declared size can lie.
        limit = min(info.file_size, self.limits.max_file_bytes)
        written = 0
        with archive.open(info) as source, target.open("wb") as sink:
            while chunk := source.read(_COPY_CHUNK):
                written += len(chunk)
                self._unzipped_bytes += len(chunk)
                if written > limit or self._unzipped_bytes > self.limits.max_zip_bytes:
                    raise ArchiveError("unpacks to more than it declares or than the limits allow; not unpacked")
                sink.write(chunk)


@contextlib.contextmanager
def plan_path(
    path: Path | str,
    format: str | None = None,
    is_document: Callable[[Path], bool] | None = None,
    limits: Limits | None = None,
    relative: bool = False,
) -> Iterator[Plan]:
    """Walk `path` (a file, a folder, or a zip) into a `Plan`; zip contents exist until the block ends.

    `format` forces one reader on the whole path (a zip is unpacked first). `is_document` says
    which files the caller reads as documents; without it, no file is a document. Paths in the
    plan start with `path` as given, or with `relative` are relative to it (a file: its name).
    """
    path = Path(path)
    if not path.exists():
        raise FileNotFoundError(f"{path}: no such file or folder")
    limits = limits or Limits()
    shown = (path.name if path.is_file() else "") if relative else str(path)
    with contextlib.ExitStack() as stack:
        stack.enter_context(_file_limit(limits.max_file_bytes))
        walk = _Walk(stack, is_document, limits)
        if format is None:
            yield walk.start(path, shown)
            return
        if format == "document" and is_document is not None:
            # Documents only: every other file is listed as not read.
            walk = _Walk(stack, lambda file: is_document(file) and file.suffix.lower() != ".zip", limits)
            plan = walk.start(path, shown)
            for unit in plan.chat_units():
                reason = f"a {unit.reader} export; not read with --format document"
                plan.not_read.append(Skip(unit.display, None, reason))
            plan.units = plan.document_units()
            yield plan
            return
        module = reader(format)
        plan = walk.plan
        target = path.absolute()
        if path.is_file() and walk._is_archive(path, top=True):
            folder = Path(stack.enter_context(tempfile.TemporaryDirectory(prefix="threadkeep-zip-")))
            walk._extract(path, folder, shown)
            entries = list(folder.iterdir())
            target = entries[0] if len(entries) == 1 and entries[0].is_dir() else folder
            plan._prefixes.append((str(folder), shown))
            plan._unpacked.append(folder)
        plan._prefixes.append((str(path.absolute()), shown))
        plan._prefixes.sort(key=lambda item: len(item[0]), reverse=True)
        plan.units.append(Unit(module.NAME, target, plan.display(str(target))))
        yield plan


@contextlib.contextmanager
def _file_limit(limit: int) -> Iterator[None]:
    token = max_file_bytes.set(limit)
    try:
        yield
    finally:
        max_file_bytes.reset(token)


def read_units(plan: Plan, units: list[Unit] | None = None) -> ReadResult:
    """Read a plan's chat units into one `ReadResult`, every path in it as the user knows it."""
    units = plan.chat_units() if units is None else units
    names = sorted({unit.reader for unit in units})
    merged = ReadResult(format="+".join(names))
    known: set[str] = set()
    with _file_limit(plan.limits.max_file_bytes):
        for unit in units:
            result = reader(unit.reader).read(unit.path)
            for conversation in result.conversations:
                if conversation.ref not in known:
                    known.add(conversation.ref)
                    merged.conversations.append(conversation)
            merged.messages.extend(result.messages)
            merged.skipped.extend(plan.shown(skip) for skip in result.skipped)
            merged.not_read.extend(plan.shown(skip) for skip in result.not_read)
            for kind, count in result.ignored.items():
                merged.ignore(kind, count)
            for message in result.messages:
                if message.conversation not in known:
                    known.add(message.conversation)
                    ref = message.conversation
                    merged.conversations.append(Conversation(ref, ref, "group", unit.reader))
    mentioned = {skip.file for skip in merged.skipped}
    merged.skipped.extend(plan.broken)
    # A reader that already said why it left a file out has said it; do not list the file twice.
    merged.not_read.extend(skip for skip in plan.not_read if skip.file not in mentioned)
    if len(units) > 1:
        merged.messages.sort(key=lambda message: message.sent_at)
    return merged


def read_path(
    path: Path | str,
    format: str | None = None,
    limits: Limits | None = None,
    is_document: Callable[[Path], bool] | None = None,
) -> ReadResult:
    """Read the chat exports in a file, folder, or .zip of either into the shared model.

    With `is_document`, document files are listed among the files not read (this reads chats only).
    """
    with plan_path(path, format, is_document, limits) as plan:
        result = read_units(plan)
        result.not_read.extend(
            Skip(unit.display, None, "a document, not a chat export (`threadkeep ingest` reads documents)")
            for unit in plan.document_units()
        )
    return result
