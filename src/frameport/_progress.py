"""Progress bars for long reads, exports, uploads and downloads (tqdm.auto).

`progress=None` means "on, unless FRAMEPORT_PROGRESS=0"; `progress=False` turns a bar off.
A total that is unknown or capped (the service caps `total` at 5000) is passed as None, so
the bar counts without pretending to know the end.

>>> with progress_bar(total=None, unit="rows", desc="people", enabled=None) as bar:
...     bar.update(5000)
"""

from __future__ import annotations

import os
from typing import Any

from tqdm.auto import tqdm


def progress_enabled(progress: bool | None) -> bool:
    """Resolve a `progress=` argument against FRAMEPORT_PROGRESS."""
    if progress is not None:
        return progress
    return os.environ.get("FRAMEPORT_PROGRESS", "1").strip().lower() not in ("0", "false", "no")


def progress_bar(
    *, total: float | None, unit: str, desc: str, enabled: bool | None, **options: Any
) -> tqdm[Any]:
    """A tqdm bar (disabled when progress is off); bytes bars scale with binary prefixes."""
    if unit == "B":
        options.setdefault("unit_scale", True)
        options.setdefault("unit_divisor", 1024)
    return tqdm(
        total=total,
        unit=unit,
        desc=desc,
        disable=not progress_enabled(enabled),
        leave=False,
        dynamic_ncols=True,
        **options,
    )
