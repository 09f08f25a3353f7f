"""The exception tree drawn in `frameport._exceptions` and in the API reference names every
exception and warning class frameport exports, each under its parent, with the other base it
has ("also ValueError"): adding a class without drawing it, or moving one, fails here."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

import frameport as fp
from frameport import _exceptions

REPOSITORY = Path(__file__).resolve().parents[1]
ROOTS = ("FrameportError", "FrameportWarning")
BRANCH = re.compile(r"^(?P<rails>(?:│   |    )*)[├└]── (?P<rest>.*)$")
NAMED = re.compile(r"^(?P<name>\w+)(?: \(also (?P<also>\w+)\))?")

Drawn = dict[str, tuple[str | None, str | None]]


def drawn_trees(text: str) -> Drawn:
    """Each class drawn in the trees of `text` (a line naming a root, then its branches):
    its parent, and the other base its line names after "also"."""
    drawn: Drawn = {}
    path: list[str] = []
    margin = 0  # the indentation of the tree's root line
    for line in text.splitlines():
        if line.lstrip(" ").startswith(ROOTS):
            margin = len(line) - len(line.lstrip(" "))
            rest, depth = line[margin:], 0
        elif path and (branch := BRANCH.match(line[margin:])):
            rest, depth = branch["rest"], len(branch["rails"]) // 4 + 1
        else:
            path = []
            continue
        named = NAMED.match(rest)
        assert named and depth <= len(path), line
        del path[depth:]
        assert named["name"] not in drawn, f"{named['name']} is drawn twice"
        drawn[named["name"]] = (path[-1] if path else None, named["also"])
        path.append(named["name"])
    return drawn


def real_tree() -> Drawn:
    """Each exception and warning class frameport exports: its parent among them, and its
    other base (none for `Exception`, every exception's)."""
    exported = {
        name: value
        for name in fp.__all__
        if isinstance(value := getattr(fp, name), type) and issubclass(value, BaseException)
    }
    tree: Drawn = {}
    for name, cls in exported.items():
        ours = [base.__name__ for base in cls.__bases__ if base in exported.values()]
        others = [
            b.__name__ for b in cls.__bases__ if b not in exported.values() and b is not Exception
        ]
        assert len(ours) <= 1 and len(others) <= 1, name
        tree[name] = (ours[0] if ours else None, others[0] if others else None)
    return tree


@pytest.mark.parametrize(
    "text",
    [
        pytest.param(_exceptions.__doc__ or "", id="frameport._exceptions"),
        pytest.param((REPOSITORY / "docs/reference/api.md").read_text(), id="api.md"),
    ],
)
def test_the_drawn_exception_tree_is_the_real_one(text: str) -> None:
    assert drawn_trees(text) == real_tree()


def test_a_class_left_out_of_the_drawing_is_found() -> None:
    drawing = _exceptions.__doc__ or ""
    without = "\n".join(line for line in drawing.splitlines() if "ServerError" not in line)
    assert set(real_tree()) - set(drawn_trees(without)) == {"ServerError"}
