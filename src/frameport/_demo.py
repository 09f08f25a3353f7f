"""`frameport demo` (what `make demo` runs): the whole round trip on the embedded local service.

1. start the local service (a temporary data directory, a free loopback port);
2. generate a seeded sample of people (name, age with nulls, city, score, signup, active) and
   load it into a table: the columns come from the DataFrame's dtypes, the rows go in bulk;
3. export a filtered view to Parquet, streaming: ``age > 30 and city in ['Oslo', 'Bergen']``;
4. check the file against pandas' own ``DataFrame.query`` on the generated frame;
5. upload a per-city summary DataFrame to a bucket and read it back.

Everything it writes goes to ``./out/`` (or `--out`).

>>> from frameport._demo import sample_people
>>> sample_people(3).dtypes.astype(str).to_dict()  # doctest: +NORMALIZE_WHITESPACE
{'name': 'str', 'age': 'Int64', 'city': 'str', 'score': 'float64',
 'signup': 'datetime64[ms, UTC]', 'active': 'boolean'}
"""

from __future__ import annotations

import time
from collections.abc import Callable
from pathlib import Path

import numpy as np
import pandas as pd
import pyarrow.parquet as pq

from ._schema import to_pandas

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
            "name": pd.array(np.char.add(np.char.add(first, " "), last), dtype="str"),
            "age": age,
            "city": pd.array(rng.choice(CITIES, rows, p=_CITY_WEIGHTS), dtype="str"),
            "score": score,
            "signup": signup,
            "active": pd.array(rng.random(rows) < 0.7, dtype="boolean"),
        }
    )


def run_demo(
    out: str | Path = "out", rows: int = DEMO_ROWS, *, say: Callable[[str], None] = print
) -> Path:
    """Run the demo (see the module docstring); return the Parquet file it wrote."""
    from .local import LocalService

    began = time.perf_counter()
    out_dir = Path(out)
    out_dir.mkdir(parents=True, exist_ok=True)
    with LocalService() as service:
        say(f"local service: {service.endpoint} (project {service.project!r})")
        with service.client() as client:
            step = time.perf_counter()
            people = sample_people(rows)
            table = client.create_table("demo", "people", schema=people)
            table.insert(people)
            say(f"loaded {rows:,} people into table demo/people ({_since(step)})")

            step = time.perf_counter()
            view = table.query(DEMO_FILTER)
            say(f"filter: {DEMO_FILTER}\n{_indent(view.explain())}")
            parquet = out_dir / "people-oslo-bergen-over-30.parquet"
            exported = view.to_parquet(parquet)
            say(f"exported {exported:,} rows to {parquet} ({_since(step)})")

            written = to_pandas(pq.read_table(parquet))
            same = _same_rows(written, people.query(DEMO_FILTER))
            say(f"the file matches pandas' DataFrame.query on the generated frame: {same}")

            summary = _city_summary(written)
            bucket = client.create_bucket("reports", "Reports")
            uploaded = bucket.upload_dataframe(summary, "oslo-bergen-summary.parquet")
            summary_path = out_dir / "oslo-bergen-summary.csv"
            bucket.read_parquet(uploaded.id).to_csv(summary_path, index=False)
            say(
                f"uploaded a summary DataFrame to bucket reports as file {uploaded.id} "
                f"({uploaded.size:,} bytes); read back into {summary_path}"
            )
    say(f"done in {_since(began)}; files in {out_dir.resolve()}")
    return parquet


def _same_rows(read: pd.DataFrame, expected: pd.DataFrame) -> bool:
    """Whether both frames hold the same rows (in any order) with the same dtypes."""
    columns = list(expected.columns)

    def ordered(frame: pd.DataFrame) -> pd.DataFrame:
        return frame[columns].sort_values(columns).reset_index(drop=True)

    return bool(ordered(read).equals(ordered(expected)))


def _city_summary(frame: pd.DataFrame) -> pd.DataFrame:
    grouped = frame.groupby("city", as_index=False)
    return grouped.agg(
        people=("$id", "size"), mean_age=("age", "mean"), mean_score=("score", "mean")
    )


def _since(moment: float) -> str:
    return f"{time.perf_counter() - moment:.1f} s"


def _indent(text: str) -> str:
    return "\n".join(f"  {line}" for line in text.splitlines())
