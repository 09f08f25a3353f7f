"""The package's public surface: `__all__` lists exactly the public names, sorted, and every
exported class and function presents itself as ``frameport.<name>``."""

from __future__ import annotations

import inspect
import pickle
import re
from types import ModuleType

import pytest

import frameport as fp


def test_all_lists_exactly_the_public_names() -> None:
    public = {
        name
        for name in dir(fp)
        if not name.startswith("_") and not isinstance(getattr(fp, name), ModuleType)
    }
    assert set(fp.__all__) - {"__version__"} == public
    assert fp.__all__ == sorted(fp.__all__, key=lambda name: (not name.isupper(), name))


@pytest.mark.parametrize(
    "name", [name for name in fp.__all__ if isinstance(getattr(fp, name), type)]
)
def test_exported_classes_say_frameport(name: str) -> None:
    value = getattr(fp, name)
    assert value.__module__ == "frameport"
    assert repr(value) == f"<class 'frameport.{name}'>"


def test_exported_functions_say_frameport() -> None:
    assert fp.col.__module__ == "frameport"


def test_errors_pickle_through_their_public_name() -> None:
    error = fp.NotFoundError(
        "gone", status=404, type="row_not_found", method="GET", url="http://127.0.0.1/v1/x"
    )
    copy = pickle.loads(pickle.dumps(error))
    assert type(copy) is fp.NotFoundError and str(copy) == str(error)


def public_docstrings() -> dict[str, str]:
    """The docstring of every public name of frameport, frameport.widgets, frameport.ray and
    frameport.spark, and of every public member of their classes (inherited ones included),
    by dotted path."""
    import frameport.ray
    import frameport.spark
    import frameport.widgets

    found: dict[str, str] = {}
    for module in (fp, frameport.widgets, frameport.ray, frameport.spark):
        for name in module.__all__:
            value = getattr(module, name)
            if isinstance(value, str | tuple):  # __version__, DTYPE_TABLE
                continue
            found[f"{module.__name__}.{name}"] = inspect.getdoc(value) or ""
            if not isinstance(value, type):
                continue
            for member in dir(value):
                if member.startswith("_") and member != "__init__":
                    continue
                attribute = inspect.getattr_static(value, member)
                doc = inspect.getdoc(
                    attribute.fget if isinstance(attribute, property) else attribute
                )
                found[f"{module.__name__}.{name}.{member}"] = doc or ""
    return found


# A backticked name of a private module or function: `_parallel`, `_tables._resume`.
PRIVATE_REFERENCE = re.compile(r"`+[^`]*?(?<![\w$])_[a-z][\w.]*[^`]*`+")
# A class that users never import: named in a docstring, it would send them looking for it.
UNEXPORTED_CLASSES = ("ExportReport", "SyncReport", "TablePager", "InferredSchema", "Requester")


def test_public_docstrings_point_only_at_public_names() -> None:
    private = {
        path: PRIVATE_REFERENCE.findall(doc) + [n for n in UNEXPORTED_CLASSES if n in doc]
        for path, doc in public_docstrings().items()
    }
    assert {path: names for path, names in private.items() if names} == {}
