"""Errors of the schema catalog and the compatibility gate."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

from streams.errors import StreamsError


class SchemaError(StreamsError):
    """Base class of the catalog's errors."""


class SchemaFileError(SchemaError):
    """A schema file or folder is missing or malformed. Names the path and the reason."""

    def __init__(self, path: Path | str, reason: str) -> None:
        self.path = Path(path)
        self.reason = reason
        super().__init__(f"{path}: {reason}")


class CatalogLoadError(SchemaError):
    """One or more files of a schemas folder could not be loaded; ``problems`` has each."""

    def __init__(self, problems: Sequence[SchemaFileError]) -> None:
        self.problems = list(problems)
        lines = "\n".join(f"  {p}" for p in self.problems)
        super().__init__(f"{len(self.problems)} schema file(s) could not be loaded:\n{lines}")


class SchemasFolderNotFoundError(CatalogLoadError):
    """There is no schemas folder where one was looked for (e.g. a command run outside any
    project): one line that says how to name one, not a list of problems."""

    def __init__(self, root: Path) -> None:
        self.root = root
        self.problems = [SchemaFileError(root, "schemas folder not found")]
        SchemaError.__init__(
            self,
            f"no schemas folder at {root}: give --schemas DIR or $STREAMS_SCHEMAS, or run "
            "inside a project (a folder with schemas/ and pyproject.toml)",
        )


class SchemaNotFoundError(SchemaError, LookupError):
    """The catalog has no schema for this type, or not this version of it."""

    def __init__(self, type_: str, version: int | None = None, known: Sequence[int] = ()) -> None:
        self.type = type_
        self.version = version
        if version is None:
            msg = f"unknown event type {type_!r}: no folder schemas/{type_}/"
        else:
            have = ", ".join(f"v{v}" for v in known) or "none"
            msg = f"unknown version {type_}@{version} (known versions: {have})"
        super().__init__(msg)
