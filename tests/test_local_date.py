"""The local service dates its answers by its own clock, the clock it stamps rows by: a
client that takes the service's time from ``Date`` (a watermark of changed rows) gets the
second the rows were stamped in, not a second cached before."""

from __future__ import annotations

import email.utils
import time

import httpx

from frameport.local import LocalService


def test_answers_are_dated_by_the_service_clock() -> None:
    with LocalService() as service:
        headers = {"X-Service-Project": service.project, "X-Service-Key": service.key}
        before = time.time()
        answer = httpx.get(f"{service.endpoint}/tablesdb", headers=headers)
        dated = email.utils.parsedate_to_datetime(answer.headers["date"]).timestamp()
        assert answer.headers.get_list("date") == [answer.headers["date"]]  # one Date
        assert int(before) <= dated <= time.time()
        service.advance_clock(7_200)  # two hours on: the rows' clock, and the Date with it
        later = httpx.get(f"{service.endpoint}/tablesdb", headers=headers)
        moved = email.utils.parsedate_to_datetime(later.headers["date"]).timestamp()
        assert 7_200 <= moved - dated <= 7_200 + time.time() - before + 1
        missing = httpx.get(f"{service.endpoint}/nowhere", headers=headers)
        assert missing.status_code == 404 and "date" in missing.headers
