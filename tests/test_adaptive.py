"""The concurrency controller of adaptive reads and uploads: more in flight when units wait
on the network, fewer when waits grow from queueing, within the cap and the memory budget."""

from __future__ import annotations

from frameport._core._adaptive import AdaptiveConcurrency

MB = 1_000_000


def test_a_distant_service_gets_as_many_units_as_cover_the_wait() -> None:
    concurrency = AdaptiveConcurrency(cap=16, budget=10**9)
    assert concurrency() == 1  # nothing measured yet
    for _ in range(5):
        concurrency.waited(0.070, nbytes=MB)
        concurrency.worked(0.017)
    assert concurrency() == 6  # ceil(1.25 * 70 / 17)


def test_a_near_service_stays_at_one() -> None:
    concurrency = AdaptiveConcurrency(cap=16, budget=10**9, start=2)
    for _ in range(5):
        concurrency.waited(0.004, nbytes=MB)
        concurrency.worked(0.017)
    assert concurrency() == 1


def test_the_cap_and_the_budget_bound_it() -> None:
    capped = AdaptiveConcurrency(cap=4, budget=10**9)
    budgeted = AdaptiveConcurrency(cap=16, budget=12 * MB, units_per_slot=4)
    for concurrency in (capped, budgeted):
        concurrency.waited(0.500, nbytes=MB)
        concurrency.worked(0.010)
    assert capped() == 4
    assert budgeted() == 3  # 12 MB hold 3 slots of 4 one-MB units


def test_queueing_lowers_the_ceiling_and_calm_raises_it_again() -> None:
    concurrency = AdaptiveConcurrency(cap=16, budget=10**9)
    concurrency.waited(0.050, nbytes=MB)
    concurrency.worked(0.010)
    assert concurrency() == 7
    for _ in range(8):  # the service is the limit: every unit now waits four times longer
        concurrency.waited(0.200, nbytes=MB)
    lowered = concurrency()
    assert lowered < 7
    for _ in range(40):  # waits are back to the round trip
        concurrency.waited(0.050, nbytes=MB)
    assert concurrency() == 7
    assert concurrency.history[0] == 1 and lowered in concurrency.history


def test_a_guess_starts_a_distant_read_wide_until_measurements_replace_it() -> None:
    concurrency = AdaptiveConcurrency(cap=16, budget=10**9, start=2)
    concurrency.guess(0.055, 0.010)
    assert concurrency() == 7  # ceil(1.25 * 55 / 10)
    concurrency.guess(0.004, 0.010)
    assert concurrency() == 7  # a guess never narrows
    concurrency.waited(0.004, nbytes=MB)
    concurrency.worked(0.017)
    assert concurrency() == 1  # measured: a near service
    concurrency.guess(0.055, 0.010)
    assert concurrency() == 1  # once measured, guesses are ignored


def test_a_guess_for_a_near_service_keeps_the_start() -> None:
    concurrency = AdaptiveConcurrency(cap=16, budget=10**9, start=2)
    concurrency.guess(0.003, 0.010)
    assert concurrency() == 2


def test_a_pinned_controller_keeps_its_number_whatever_it_hears() -> None:
    concurrency = AdaptiveConcurrency.pinned_at(4)
    concurrency.guess(0.5, 0.001)
    for _ in range(20):
        concurrency.waited(0.2, nbytes=10**9)
        concurrency.worked(0.001)
    assert concurrency() == 4 and concurrency.history == [4]
