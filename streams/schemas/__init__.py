"""The schema catalog over ``schemas/`` and the compatibility gate between versions.

The names below are re-exported lazily (PEP 562): ``streams.schemas.modes``,
``.errors`` and ``.compatibility`` load without fastavro.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from streams.schemas.catalog import (
        SCHEMAS_DIR_ENV,
        EventType,
        SchemaCatalog,
        SchemaVersion,
        default_catalog,
        schemas_dir,
    )
    from streams.schemas.compatibility import (
        Incompatibility,
        IncompatibleSchemaError,
        check_catalog,
        reader_problems,
    )
    from streams.schemas.errors import (
        CatalogLoadError,
        SchemaError,
        SchemaFileError,
        SchemaNotFoundError,
    )
    from streams.schemas.modes import CompatibilityMode
else:
    from streams._lazy import lazy_exports

    __getattr__, __dir__ = lazy_exports(
        __name__,
        {
            "streams.schemas.catalog": [
                "SCHEMAS_DIR_ENV",
                "EventType",
                "SchemaCatalog",
                "SchemaVersion",
                "default_catalog",
                "schemas_dir",
            ],
            "streams.schemas.compatibility": [
                "Incompatibility",
                "IncompatibleSchemaError",
                "check_catalog",
                "reader_problems",
            ],
            "streams.schemas.errors": [
                "CatalogLoadError",
                "SchemaError",
                "SchemaFileError",
                "SchemaNotFoundError",
            ],
            "streams.schemas.modes": ["CompatibilityMode"],
        },
    )

__all__ = [
    "SCHEMAS_DIR_ENV",
    "CatalogLoadError",
    "CompatibilityMode",
    "EventType",
    "Incompatibility",
    "IncompatibleSchemaError",
    "SchemaCatalog",
    "SchemaError",
    "SchemaFileError",
    "SchemaNotFoundError",
    "SchemaVersion",
    "check_catalog",
    "default_catalog",
    "reader_problems",
    "schemas_dir",
]
