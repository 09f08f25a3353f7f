"""The encoding a read asks its pages in, over real HTTP: none when the service is near, zstd
(falling back to gzip) when it is far, fixed by `compression=`; zstd and gzip answers of the
local service read the same frame as plain ones; a service that ignores ``Accept-Encoding``
is read all the same. A relay between client and service shows what went over the wire.
"""

from __future__ import annotations

from collections.abc import Iterator

import pandas as pd
import pytest

import frameport as fp
from cutting_proxy import CuttingProxy
from frameport._demo import sample_people
from frameport.local import LocalService
from tables_support import assert_same_rows, load

ROWS = 1200
PAGE = 500  # three pages, each well over the 1024 bytes below which answers go plain


@pytest.fixture(scope="module")
def people() -> pd.DataFrame:
    return sample_people(ROWS)


@pytest.fixture(scope="module")
def far_service() -> Iterator[LocalService]:
    with LocalService(latency=60) as service:
        yield service


@pytest.fixture(scope="module")
def plain_service() -> Iterator[LocalService]:
    with LocalService(compression=False) as service:
        yield service


def read_through_relay(
    service: LocalService, people: pd.DataFrame, **options: object
) -> tuple[pd.DataFrame, pd.DataFrame, str, CuttingProxy]:
    """A table of `people` on `service`, read whole through a relay by a new client made with
    `options`, after one warm-up read that measures the link: (the frame read, the expected
    rows, the read's explain(), the relay, which holds what the read sent and received)."""
    with service.client() as owner:
        table, expected = load(owner, "wire", people)
    with (
        CuttingProxy(service.endpoint, cut_after=0, cuts=0) as relay,
        fp.Client(relay.endpoint, service.project, key=service.key, **options) as client,  # type: ignore[arg-type]
    ):
        read = client.table("wire", table.id, page_size=PAGE)
        read.head(1).to_pandas(progress=False)
        relay.forget()
        explained = read.explain()
        frame = read.to_pandas(progress=False)
    return frame, expected, explained, relay


@pytest.mark.parametrize(
    ("distance", "options", "why"),
    [
        ("service", {}, "the service is near"),
        ("far_service", {"compression": "off"}, "compression='off' fixes it"),
    ],
    ids=["near", "far with compression off"],
)
def test_plain_pages_are_asked_for_near_or_when_compression_is_off(
    request: pytest.FixtureRequest,
    people: pd.DataFrame,
    distance: str,
    options: dict[str, str],
    why: str,
) -> None:
    service = request.getfixturevalue(distance)
    frame, expected, explained, relay = read_through_relay(service, people, **options)
    assert_same_rows(frame, expected)
    assert "Accept-Encoding: identity" in explained and why in explained
    assert set(relay.request_headers("Accept-Encoding")) == {"identity"}
    assert relay.answer_headers("Content-Encoding") == []


def test_far_reads_ask_for_zstd_falling_back_to_gzip_and_inflate_it(
    far_service: LocalService, people: pd.DataFrame
) -> None:
    frame, expected, explained, relay = read_through_relay(far_service, people)
    assert_same_rows(frame, expected)
    assert "Accept-Encoding: zstd, gzip;q=0.5" in explained and "is far" in explained
    asked = relay.request_headers("Accept-Encoding")
    assert set(asked) == {"zstd, gzip;q=0.5"}
    answered = relay.answer_headers("Content-Encoding")
    assert answered and set(answered) == {"zstd"}  # every page of the read came compressed
    assert len(answered) >= ROWS // PAGE + 1


@pytest.mark.parametrize("encoding", ["gzip", "zstd"])
def test_a_fixed_encoding_is_asked_for_near_and_read_the_same(
    service: LocalService, people: pd.DataFrame, encoding: str
) -> None:
    frame, expected, explained, relay = read_through_relay(service, people, compression=encoding)
    assert_same_rows(frame, expected)
    assert f"compression={encoding!r} fixes it" in explained
    answered = relay.answer_headers("Content-Encoding")
    assert len(answered) >= ROWS // PAGE + 1 and set(answered) == {encoding}


def test_an_accept_encoding_among_the_clients_headers_is_sent_as_it_is(
    service: LocalService, people: pd.DataFrame
) -> None:
    headers = {"Accept-Encoding": "br"}
    frame, expected, _, relay = read_through_relay(service, people, headers=headers)
    assert_same_rows(frame, expected)
    assert set(relay.request_headers("Accept-Encoding")) == {"br"}
    assert relay.answer_headers("Content-Encoding").count("br") >= ROWS // PAGE + 1


def test_a_service_that_ignores_accept_encoding_is_read_all_the_same(
    plain_service: LocalService, people: pd.DataFrame
) -> None:
    frame, expected, _, relay = read_through_relay(plain_service, people, compression="zstd")
    assert_same_rows(frame, expected)
    assert set(relay.request_headers("Accept-Encoding")) == {"zstd, gzip;q=0.5"}
    assert relay.answer_headers("Content-Encoding") == []


def test_an_unknown_compression_is_refused_with_the_choices(service: LocalService) -> None:
    with pytest.raises(ValueError, match=r"compression must be one of 'auto', 'off', 'zstd'"):
        fp.Client(service.endpoint, service.project, compression="brotli")  # type: ignore[arg-type]
