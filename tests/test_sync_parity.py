"""Every synchronous face mirrors its async twin: the same public members, the same parameters,
and each method a delegate rather than a hand-written copy."""

from __future__ import annotations

import inspect
from typing import Any

import pytest

import frameport as fp
from frameport._core._sync import SyncFacade

# Members a face writes out because a delegate cannot serve: constructors and class methods
# (they make the face itself), and the context-manager protocol of the sync face.
WRITTEN_BY_HAND = {"__init__", "from_env", "from_saved", "impersonate", "__enter__", "__exit__"}

PAIRS: list[tuple[type[SyncFacade[Any]], type]] = [
    (fp.Client, fp.AsyncClient),
    (fp.Table, fp.AsyncTable),
    (fp.TableQuery, fp.AsyncTableQuery),
    (fp.Bucket, fp.AsyncBucket),
    (fp.Function, fp.AsyncFunction),
]


def _public_names(cls: type) -> set[str]:
    return {name for name in dir(cls) if not name.startswith("_")}


def _members() -> list[tuple[type, type, str]]:
    return [
        (sync, asynchronous, name)
        for sync, asynchronous in PAIRS
        for name in sorted(_public_names(asynchronous))
    ]


def test_every_face_of_the_package_is_checked() -> None:
    faces = {
        value
        for value in vars(fp).values()
        if isinstance(value, type) and issubclass(value, SyncFacade) and value is not SyncFacade
    }
    assert faces == {sync for sync, _ in PAIRS}


@pytest.mark.parametrize(("sync", "asynchronous"), PAIRS, ids=lambda c: c.__name__)
def test_a_face_has_every_public_member_of_its_twin(sync: type, asynchronous: type) -> None:
    assert _public_names(sync) == _public_names(asynchronous)


@pytest.mark.parametrize(
    ("sync", "asynchronous", "name"),
    _members(),
    ids=[f"{sync.__name__}.{name}" for sync, _, name in _members()],
)
def test_parameters_match_and_the_method_is_delegated(
    sync: type, asynchronous: type, name: str
) -> None:
    async_member = inspect.getattr_static(asynchronous, name)
    sync_member = inspect.getattr_static(sync, name)
    if isinstance(async_member, property):
        assert isinstance(sync_member, property)
        assert sync_member.__doc__ == async_member.__doc__
        assert getattr(sync_member.fget, "_frameport_delegate", False), f"{name} by hand"
        return
    async_signature = inspect.signature(getattr(asynchronous, name))
    sync_signature = inspect.signature(getattr(sync, name))
    assert list(sync_signature.parameters.values()) == list(async_signature.parameters.values())
    assert not inspect.iscoroutinefunction(getattr(sync, name))
    if name not in WRITTEN_BY_HAND:
        assert getattr(sync_member, "_frameport_delegate", False), f"{name} is written by hand"
