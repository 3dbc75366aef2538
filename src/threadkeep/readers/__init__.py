"""Readers: one module per export format, each turning files into the shared model.

A reader module has `NAME`, `detect(path) -> bool` (cheap: look at names and
the first bytes) and `read(path) -> ReadResult`. `read_path` picks the reader,
unpacks zips, and never lets a reader's skip go unreported.
"""

from __future__ import annotations

import importlib
import tempfile
import zipfile
from pathlib import Path
from types import ModuleType

from threadkeep.model import ReadResult

# Detection order matters: specific formats before generic ones (plain text last).
READER_MODULES: tuple[str, ...] = (
    "bundle",
    "slack",
    "discord",
    "telegram",
    "whatsapp",
    "wechat",
    "irc",
    "claude_code",
    "codex_cli",
    "gemini_cli",
    "continue_dev",
    "chatgpt",
    "claude_ai",
    "specstory",
    "transcript",
)


class UnknownFormatError(ValueError):
    pass


def reader_modules() -> list[ModuleType]:
    return [importlib.import_module(f"threadkeep.readers.{name}") for name in READER_MODULES]


def format_names() -> list[str]:
    return [module.NAME for module in reader_modules()]


def detect_format(path: Path) -> ModuleType:
    modules = reader_modules()
    for module in modules:
        if module.detect(path):
            return module
    tried = ", ".join(module.NAME for module in modules)
    raise UnknownFormatError(f"{path}: not a format threadkeep reads (tried: {tried})")


def read_path(path: Path | str, format: str | None = None) -> ReadResult:
    """Read an export (file, folder, or .zip of either) into the shared model."""
    path = Path(path)
    if not path.exists():
        raise FileNotFoundError(f"{path}: no such file or folder")
    if path.is_file() and zipfile.is_zipfile(path):
        with tempfile.TemporaryDirectory(prefix="threadkeep-zip-") as folder:
            with zipfile.ZipFile(path) as archive:
                archive.extractall(folder)
            root = Path(folder)
            entries = list(root.iterdir())
            if len(entries) == 1 and entries[0].is_dir():
                root = entries[0]
            return read_path(root, format)
    if format:
        by_name = {module.NAME: module for module in reader_modules()}
        if format not in by_name:
            raise UnknownFormatError(f"unknown format {format!r} (known: {', '.join(by_name)})")
        return by_name[format].read(path)
    return detect_format(path).read(path)
