"""Every exception dotjson raises derives from :class:`DotjsonError`.

Each class also derives from the builtin it refines, so ``except ValueError`` keeps working
for callers that do not know dotjson's hierarchy.
"""

from __future__ import annotations


class DotjsonError(Exception):
    """Base class of every dotjson exception."""


class DotjsonTypeError(DotjsonError, TypeError):
    """An argument of the wrong type (a token id that is not an integer, a foreign object)."""


class DotjsonValueError(DotjsonError, ValueError):
    """An argument of the right type with a value the call cannot use (a shape, a count, a
    mask value that cannot mask)."""


class DotjsonIndexError(DotjsonError, IndexError):
    """A row or position outside the object it indexes."""


class DotjsonImportError(DotjsonError, ImportError):
    """An optional dependency that an integration module needs is not installed."""


class DotjsonOSError(DotjsonError, OSError):
    """A file or directory that cannot be written (saving an index or a vocabulary)."""


class SchemaError(DotjsonError, ValueError):
    """A malformed JSON Schema (or grammar).

    Parameters
    ----------
    message : str
        What is wrong.
    pointer : str, optional
        JSON pointer (RFC 6901) of the offending sub-schema, ``""`` for the root.
    keyword : str, optional
        The keyword at fault, if one is.
    """

    def __init__(self, message: str, pointer: str | None = None, keyword: str | None = None):
        self.pointer = pointer
        self.keyword = keyword
        where = ""
        if pointer is not None:
            where = f" at {pointer or '/'!s}" if pointer is not None else ""
        super().__init__(f"{message}{where}")


class UnsupportedSchemaError(SchemaError):
    """A keyword (or keyword value) that dotjson cannot enforce exactly."""


class GrammarError(DotjsonError, ValueError):
    """A Lark grammar or regular expression dotjson cannot compile."""


class VocabularyError(DotjsonError, ValueError):
    """A tokenizer or vocabulary that cannot be loaded or is inconsistent."""


class TokenNotAllowedError(DotjsonError, ValueError):
    """A sampled token that the guide's current state does not allow."""


class LimitExceededError(DotjsonError, RuntimeError):
    """A configured resource budget (states, cache memory, search fuel) was exceeded."""


class IndexFormatError(DotjsonError, ValueError):
    """A serialized index or vocabulary file that is truncated, corrupt or foreign."""


class ModelLoadError(DotjsonError, OSError):
    """A model or tokenizer that cannot be found, reached or loaded (:mod:`dotjson.tools.models`)."""
