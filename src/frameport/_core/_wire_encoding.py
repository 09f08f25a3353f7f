"""The ``Accept-Encoding`` the client sends, chosen for the link as measured.

Compressing a page costs CPU on both sides (zstd much less than gzip) and makes it several
times smaller (benchmarks/README.md): lost CPU when the service is near, many times repaid
when it is far and the wire is the limit. So with ``compression="auto"`` the client asks for
no encoding while the fastest answer so far came within `FAR_ROUND_TRIP`, else (and before
any answer, the cheaper mistake) for zstd, or gzip from a service without it.

>>> choose_wire_encoding("auto", 0.002).accept_encoding
'identity'
>>> choose_wire_encoding("auto", 0.08).accept_encoding
'zstd, gzip;q=0.5'
>>> choose_wire_encoding("gzip", 0.002).reason
"compression='gzip' fixes it"
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal, cast, get_args

Compression = Literal["auto", "off", "zstd", "gzip"]
"""How answers are asked for: chosen by the link (``"auto"``), or fixed."""

COMPRESSIONS: tuple[str, ...] = get_args(Compression)

FAR_ROUND_TRIP = 0.04
"""Seconds: a service whose fastest answer took at least this long is far (another region,
across the internet), where the wire rather than the CPU limits a read. A near service's
answers take a few milliseconds, tens on a busy machine."""

_ACCEPT_ENCODING = {"off": "identity", "zstd": "zstd, gzip;q=0.5", "gzip": "gzip"}


def check_compression(compression: object) -> Compression:
    if compression not in COMPRESSIONS:
        choices = ", ".join(repr(name) for name in COMPRESSIONS)
        raise ValueError(f"compression must be one of {choices} (got {compression!r}).")
    return cast(Compression, compression)


@dataclass(frozen=True)
class WireEncoding:
    """The encoding answers are asked for with (``"off"``, ``"zstd"`` or ``"gzip"``), and
    why."""

    encoding: Literal["off", "zstd", "gzip"]
    reason: str

    @property
    def accept_encoding(self) -> str:
        return _ACCEPT_ENCODING[self.encoding]

    def describe(self) -> str:
        """The sentence `explain()` prints."""
        return f"Pages are asked for with Accept-Encoding: {self.accept_encoding}: {self.reason}."


def choose_wire_encoding(compression: Compression, round_trip: float | None) -> WireEncoding:
    """The encoding for the setting `compression` and the fastest answer so far (`round_trip`
    seconds, None before the first)."""
    if compression != "auto":
        return WireEncoding(compression, f"compression={compression!r} fixes it")
    if round_trip is None:
        return WireEncoding(
            "zstd",
            "no answer has come yet to tell how far the service is, and zstd costs little "
            "near and saves most far",
        )
    limit = f"{FAR_ROUND_TRIP * 1e3:.0f} ms"
    if round_trip >= FAR_ROUND_TRIP:
        return WireEncoding(
            "zstd",
            f"the service is far (no answer came within {limit}), so the wire is the limit: "
            "zstd makes pages about 7x smaller for little CPU (gzip if the service has no zstd)",
        )
    return WireEncoding(
        "off",
        f"the service is near (an answer came within {limit}), so the wire is not the limit "
        "and compressing would only cost CPU on both sides",
    )
