"""The schema catalog over ``schemas/`` and the compatibility gate between versions."""

from streams.schemas.catalog import (
    SCHEMAS_DIR_ENV,
    EventType,
    SchemaCatalog,
    SchemaVersion,
    default_catalog,
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
]
