"""griffe extensions for the API reference (and for the test that checks it).

The reference is loaded by importing the package (dynamic analysis), because the
synchronous classes get their methods from the asynchronous ones at import time. Two things
dynamic analysis gets wrong are put right here:

- `SourceDocstrings`: a module attribute (``__version__``, ``DTYPE_TABLE``) has no docstring
  of its own at run time, so inspection reports its type's (``str``'s, ``tuple``'s); the
  docstring written under the assignment is read from the source instead. So is a class
  attribute's (a dataclass field's), where the source has one.
- `PublicMembers`: the exported classes say they live in ``frameport`` (``frameport.Client``)
  while their methods still name the private module they were written in, which griffe
  reads as an alias of an alias, in a cycle; for this build, the methods say ``frameport``
  too.
- `DoctestFences`: the ``>>>`` examples of a docstring are shown as Python console blocks
  (fenced ``pycon``), without their ``# doctest:`` directives.
"""

from __future__ import annotations

import re
from functools import cache
from typing import Any

import griffe

DIRECTIVE = re.compile(r"\s*#\s*doctest:.*$")


def fence_examples(text: str) -> str:
    """`text` with each run of ``>>>``/``...`` lines (and their output) in a pycon fence."""
    out: list[str] = []
    in_example = False
    for line in text.splitlines():
        stripped = line.strip()
        if stripped.startswith(">>>") and not in_example:
            out.append("```pycon")
            in_example = True
        elif in_example and not stripped:
            out.append("```")
            in_example = False
        out.append(DIRECTIVE.sub("", stripped) if in_example else line)
    if in_example:
        out.append("```")
    return "\n".join(out)


@cache
def static_package(name: str) -> griffe.Object | griffe.Alias:
    """The package `name` as read from its source, without importing it."""
    return griffe.load(name, allow_inspection=False, resolve_aliases=True)


def source_docstring(path: str) -> griffe.Docstring | None:
    """The docstring written under the assignment of the attribute `path` (re-exports
    followed), or None when the source has none."""
    package, _, rest = path.partition(".")
    try:
        return static_package(package)[rest].docstring
    except (KeyError, griffe.AliasResolutionError, griffe.CyclicAliasError):
        return None


def present_members_as_frameport() -> None:
    """Give the own methods and properties of each class exported as ``frameport.X`` the
    module ``frameport`` (in this process only: the documentation build)."""
    import frameport

    for name in frameport.__all__:
        cls = getattr(frameport, name)
        if not (isinstance(cls, type) and cls.__module__ == "frameport"):
            continue
        for member in vars(cls).values():
            if isinstance(member, property):
                member = member.fget
            elif isinstance(member, classmethod | staticmethod):
                member = member.__func__
            if getattr(member, "__module__", "").startswith("frameport."):
                member.__module__ = "frameport"


class PublicMembers(griffe.Extension):
    """Runs `present_members_as_frameport` before griffe inspects the package."""

    def __init__(self) -> None:
        super().__init__()
        present_members_as_frameport()


class SourceDocstrings(griffe.Extension):
    """Module attributes keep the docstring written under them in the source, and class
    attributes the one they have there."""

    def on_attribute_instance(self, *, attr: griffe.Attribute, **kwargs: Any) -> None:
        if isinstance(attr.parent, griffe.Module):
            attr.docstring = source_docstring(attr.path)
        elif isinstance(attr.parent, griffe.Class):
            attr.docstring = source_docstring(attr.path) or attr.docstring


class DoctestFences(griffe.Extension):
    """Fences the examples of every docstring griffe loads."""

    def on_instance(self, *, obj: griffe.Object, **kwargs: Any) -> None:
        if obj.docstring is not None and ">>>" in obj.docstring.value:
            obj.docstring.value = fence_examples(obj.docstring.value)
