"""Errors raised by the code generators."""


class CodegenError(Exception):
    """An op, type or index expression that a code generator cannot lower."""
