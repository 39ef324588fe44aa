"""Compatibility alias: the JSON Schema compiler lives in :mod:`dotjson.jsonschema`.

``from dotjson.schema import schema_to_grammar`` keeps working; new code should import from
``dotjson.jsonschema``.
"""

from dotjson.jsonschema import (  # noqa: F401
    IGNORED_KEYWORDS,
    PROPERTY_ORDERS,
    UNSUPPORTED_KEYWORDS,
    _load,
    check_schema,
    schema_to_grammar,
)

__all__ = ["schema_to_grammar", "check_schema", "IGNORED_KEYWORDS", "UNSUPPORTED_KEYWORDS"]
