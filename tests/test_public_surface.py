"""The package's public surface: `__all__` lists exactly the public names, sorted, and every
exported class and function presents itself as ``frameport.<name>``."""

from __future__ import annotations

import pickle
from types import ModuleType

import pytest

import frameport as fp


def test_all_lists_exactly_the_public_names() -> None:
    public = {
        name
        for name, value in vars(fp).items()
        if not name.startswith("_") and not isinstance(value, ModuleType)
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
