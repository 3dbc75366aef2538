"""Every error threadkeep raises on purpose, in one hierarchy.

Each derives from `ThreadkeepError`, whose message is one line a person can act on. The layers
that face people decide what a kind of error becomes: the CLI an `error: ...` line and an exit
status, the HTTP API a status code and `{"error": ...}`, the MCP server a tool error. They go
by the kinds below (input, configuration, not found, refused, store, generation), never by the
module that raised the error. Each kind also keeps the built-in base code already catches
(`ValueError`, `LookupError`, `RuntimeError`, `OSError`).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any


class ThreadkeepError(Exception):
    """Something threadkeep cannot do, said in one line."""

    def __reduce__(self) -> tuple[Any, ...]:
        # Errors cross process boundaries (the server's ingest worker): rebuilt from their message
        # and attributes, whatever their constructor takes.
        return (_rebuild, (type(self), self.args, self.__dict__))


def _rebuild(kind: type[ThreadkeepError], args: tuple[Any, ...], attributes: dict[str, Any]) -> ThreadkeepError:
    error = kind.__new__(kind)
    error.args = args
    error.__dict__.update(attributes)
    return error


# --- kinds --------------------------------------------------------------------------------------


class InputError(ThreadkeepError, ValueError):
    """What was given cannot be used: a file, an export, a request's parameters."""


class ConfigurationError(ThreadkeepError, ValueError):
    """A setting (an option, an environment variable) names something unknown or asks for something refused."""


class NotFoundError(ThreadkeepError, LookupError):
    """What was asked for is not there."""


class RefusedError(ThreadkeepError):
    """The request is understood and not allowed (e.g. a path outside the folders a server may read)."""


class StoreError(ThreadkeepError, RuntimeError):
    """The store cannot do what was asked (wrong model, bad location, constraint...)."""


class GenerationError(ThreadkeepError, RuntimeError):
    """The language model endpoint that words answers failed; the computed answer does not depend on it."""


# --- particular errors --------------------------------------------------------------------------


class UnknownFormatError(InputError):
    """No reader takes the input, or `--format` names no reader."""


class ArchiveError(InputError):
    """A zip that cannot be opened safely: damaged, or past the expansion limits."""


class DocumentError(InputError):
    """A document file that cannot be read: unreadable, corrupt, or in an unsupported format."""

    def __init__(self, path: Path | str, reason: str) -> None:
        self.path = str(path)
        self.reason = reason
        super().__init__(f"{Path(path).name}: {reason}")


class DeltaLineError(InputError):
    """A delta line that cannot be applied; the message starts with the field at fault."""


class FileTooLargeError(ThreadkeepError, OSError):
    """A file above the size limit: refused before it is read into memory."""

    def __init__(self, message: str, size: int, limit: int) -> None:
        super().__init__(message)
        self.size = size
        self.limit = limit
        self.strerror = message


class StoreNotFound(StoreError, NotFoundError):
    """No store exists at the location, and the caller did not ask to create one."""

    def __init__(self, location: str) -> None:
        super().__init__(f"there is no store at {location}")
        self.location = location


class ConcurrentWriteError(StoreError):
    """Another writer changed the conversation after it was read: read it again and redo the change."""


class SidecarInvalid(StoreError):
    """The vector file is missing, damaged, or belongs to another store or state (it is then rebuilt)."""
