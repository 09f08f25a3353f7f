"""`frameport demo` (what `make demo` runs): the whole round trip on the embedded local service.

A seeded sample of people is loaded into a table, a filtered view exported to Parquet and
checked against pandas' own ``DataFrame.query``, and a summary uploaded to a bucket and read
back, all under ``./out/`` (or `--out`). With ``keep`` the service runs on until Ctrl-C, its
connection settings in ``frameport.env`` beside the files (the key is never printed).

>>> from frameport._demo import sample_people
>>> sample_people(3).dtypes.astype(str).to_dict()  # doctest: +NORMALIZE_WHITESPACE
{'name': 'str', 'age': 'Int64', 'city': 'str', 'score': 'float64',
 'signup': 'datetime64[ms, UTC]', 'active': 'boolean'}
"""

from __future__ import annotations

import os
import shutil
import sys
import textwrap
import time
from collections.abc import Callable
from pathlib import Path

import numpy as np
import pandas as pd
import pyarrow.parquet as pq

from ._core import ENDPOINT_ENV, KEY_ENV, PROJECT_ENV
from ._schema import STR_DTYPE, to_pandas

DEMO_ROWS = 100_000
DEMO_FILTER = "age > 30 and city in ['Oslo', 'Bergen']"

CITIES = ("Oslo", "Bergen", "Trondheim", "Stavanger", "Tromsø", "Kristiansand", "Bodø")
_CITY_WEIGHTS = (0.3, 0.18, 0.15, 0.13, 0.09, 0.09, 0.06)
_FIRST_NAMES = ["Ada", "Bjørn", "Camilla", "Dag", "Eva", "Frida", "Geir", "Hanne", "Ivar"]
_LAST_NAMES = ["Hansen", "Johansen", "Olsen", "Larsen", "Andersen", "Pedersen", "Berg", "Dahl"]


def sample_people(rows: int, seed: int = 6) -> pd.DataFrame:
    """A seeded sample of people: `name` (str), `age` (Int64, about 5 % missing), `city`
    (str), `score` (float64, about 2 % NaN), `signup` (datetime64[ms, UTC]), `active`
    (boolean)."""
    rng = np.random.default_rng(seed)
    first = np.array(_FIRST_NAMES)[rng.integers(0, len(_FIRST_NAMES), rows)]
    last = np.array(_LAST_NAMES)[rng.integers(0, len(_LAST_NAMES), rows)]
    age = pd.array(rng.integers(16, 90, rows), dtype="Int64")
    age[rng.random(rows) < 0.05] = pd.NA
    score = rng.normal(60.0, 15.0, rows).round(2)
    score[rng.random(rows) < 0.02] = np.nan
    start = pd.Timestamp("2015-01-01", tz="UTC")
    offsets = pd.to_timedelta(rng.integers(0, 10 * 365 * 86_400_000, rows), unit="ms")
    signup = (start + offsets).astype("datetime64[ms, UTC]")
    return pd.DataFrame(
        {
            "name": pd.array(np.char.add(np.char.add(first, " "), last), dtype=STR_DTYPE),
            "age": age,
            "city": pd.array(rng.choice(CITIES, rows, p=_CITY_WEIGHTS), dtype=STR_DTYPE),
            "score": score,
            "signup": signup,
            "active": pd.array(rng.random(rows) < 0.7, dtype="boolean"),
        }
    )


def next_steps(env_file: Path, *, kept: bool) -> str:
    """The three things to try after the demo."""
    frameport = _frameport_command()
    command_line = (
        f"in another shell, `source {env_file}`,\n     then `{frameport} ls demo`"
        if kept
        else f"`{frameport} demo --keep` leaves the service running;\n"
        f"     then, in another shell, `source {env_file}` and `{frameport} ls demo`"
    )
    return (
        "Next:\n"
        "  1. Open the quickstart notebook, notebooks/quickstart.ipynb, in JupyterLab\n"
        "     (`pip install jupyterlab 'frameport[local,widgets]' matplotlib`; `jupyter lab`)\n"
        f"  2. Try the command line: {command_line}\n"
        "  3. Read the guides, starting with docs/getting-started.md (`make docs` builds them)"
    )


def _frameport_command() -> str:
    """How to run this installation's `frameport` from here: its name when PATH finds it
    (an activated venv), else its path (``.venv/bin/frameport`` after ``make demo``)."""
    script = Path(sys.executable).parent / "frameport"
    found = shutil.which("frameport")
    if found is not None and Path(found).resolve() == script.resolve():
        return "frameport"
    return os.path.relpath(script) if script.is_relative_to(Path.cwd()) else str(script)


ENV_FILE = "frameport.env"
"""The file `keep` writes beside the demo's files: the settings to reach the service."""


def run_demo(
    out: str | Path = "out",
    rows: int = DEMO_ROWS,
    *,
    keep: bool = False,
    say: Callable[[str], None] = print,
    until_stopped: Callable[[], None] | None = None,
) -> Path:
    """Run the demo (see the module docstring); return the Parquet file it wrote. With
    `keep`, the service keeps running until `until_stopped` returns (default: until
    Ctrl-C, which then propagates)."""
    from .local import LocalService

    began = time.perf_counter()
    out_dir = Path(out)
    out_dir.mkdir(parents=True, exist_ok=True)
    env_file = out_dir / ENV_FILE
    with LocalService() as service:
        say(
            f"Started a local service at {service.endpoint} (project {service.project!r}), "
            "with its data in a temporary folder."
        )
        with service.client() as client:
            step = time.perf_counter()
            people = sample_people(rows)
            table = client.create_table("demo", "people", schema=people, exist_ok=True)
            table.insert(people)
            say(
                f"Made {rows:,} sample people and wrote them to the new table demo/people "
                f"({_since(step)})."
            )

            step = time.perf_counter()
            view = table.query(DEMO_FILTER)
            say(f"Read the people over 30 in Oslo or Bergen ({DEMO_FILTER}); how it is done:")
            say(textwrap.indent(view.explain(), "  "))
            parquet = out_dir / "people-oslo-bergen-over-30.parquet"
            exported = view.to_parquet(parquet).rows
            say(f"Saved the {exported:,} people it found to {parquet} ({_since(step)}).")

            written = to_pandas(pq.read_table(parquet))
            expected = people.query(DEMO_FILTER)
            same = _same_rows(written, expected)
            say(
                "Checked the file against pandas, which filtered the same sample itself: "
                + ("the rows are the same." if same else f"pandas finds {len(expected):,} rows.")
            )

            summary = written.groupby("city", as_index=False).agg(
                people=("$id", "size"), mean_age=("age", "mean"), mean_score=("score", "mean")
            )
            bucket = client.create_bucket("reports", "Reports", exist_ok=True)
            uploaded = bucket.upload_dataframe(summary, "oslo-bergen-summary.parquet")
            summary_path = out_dir / "oslo-bergen-summary.csv"
            bucket.read_parquet(uploaded.id).to_csv(summary_path, index=False)
            say(
                f"Uploaded a summary per city to the bucket 'reports' ({uploaded.size:,} bytes) "
                f"and read it back into {summary_path}."
            )
        say(f"Done in {_since(began)}; the files are in {out_dir.resolve()}.\n")
        if not keep:
            say(next_steps(env_file, kept=False))
            return parquet
        _write_env(env_file, service.endpoint, service.project, service.key)
        try:
            say(
                f"The service keeps running at {service.endpoint}, with the table demo/people "
                f"and the bucket 'reports'; {env_file} holds the settings to reach it (its API "
                "key too, readable by you only).\n"
            )
            say(next_steps(env_file, kept=True))
            say("\nPress Ctrl-C to stop the service; its data goes with it, the files stay.")
            (until_stopped or _forever)()
        finally:
            env_file.unlink(missing_ok=True)
    return parquet


def _write_env(path: Path, endpoint: str, project: str, key: str) -> None:
    """The service's settings as shell exports, readable by the user only."""
    lines = [
        f"export {ENDPOINT_ENV}={endpoint}",
        f"export {PROJECT_ENV}={project}",
        f"export {KEY_ENV}={key}",
    ]
    descriptor = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    with os.fdopen(descriptor, "w") as file:
        file.write("\n".join(lines) + "\n")


def _forever() -> None:
    while True:
        time.sleep(3600)


def _same_rows(read: pd.DataFrame, expected: pd.DataFrame) -> bool:
    """Whether both frames hold the same rows (in any order) with the same dtypes."""
    columns = list(expected.columns)

    def ordered(frame: pd.DataFrame) -> pd.DataFrame:
        return frame[columns].sort_values(columns).reset_index(drop=True)

    return bool(ordered(read).equals(ordered(expected)))


def _since(moment: float) -> str:
    return f"{time.perf_counter() - moment:.1f} s"
