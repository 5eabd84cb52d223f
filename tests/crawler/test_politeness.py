from __future__ import annotations

import itertools
import math
from dataclasses import replace

import pytest
import trio

from crawler.errors import HostBadError
from crawler.politeness import HostState, Politeness
from crawler.settings import CrawlSettings

QUIET = CrawlSettings(download_delay=0.5, autothrottle_enabled=False, concurrent_requests_per_domain=2)


class FakeClock:
    def __init__(self) -> None:
        self.now = 100.0

    def __call__(self) -> float:
        return self.now


def test_host_marked_slow_then_bad_after_three_failures():
    p = Politeness(QUIET, clock=FakeClock())
    p.record("h:80", 0.1, ok=False, error_kind="timeout")
    assert p.state("h:80") == "slow"
    p.record("h:80", 0.1, ok=False, error_kind="reset")
    assert p.state("h:80") is HostState.SLOW
    p.record("h:80", 0.1, ok=False, error_kind="http_5xx")
    assert p.state("h:80") == "bad"
    assert p.ready_at("h:80") == 100.0 + QUIET.host_bad_retry_delay  # tried again then, not before


def test_success_between_failures_restores_ok():
    p = Politeness(QUIET, clock=FakeClock())
    for _ in range(5):
        p.record("h:80", 0.1, ok=False, error_kind="timeout")
        p.record("h:80", 0.1, ok=True, status=200)
    assert p.state("h:80") == "ok"


def test_page_level_errors_are_not_host_failures():
    p = Politeness(QUIET, clock=FakeClock())
    for _ in range(5):
        p.record("h:80", 0.1, ok=False, error_kind="http_4xx")
    assert p.state("h:80") == "ok"


def test_backoff_doubles_per_consecutive_failure():
    clock = FakeClock()
    settings = CrawlSettings(
        autothrottle_enabled=False, retry_backoff_base=1.0, host_bad_after_failures=10, download_delay=0.0
    )
    p = Politeness(settings, clock=clock)
    waits = []
    for _ in range(4):
        p.record("h:80", 0.1, ok=False, error_kind="connect")
        waits.append(p.ready_at("h:80") - clock.now)
    assert waits == [1.0, 2.0, 4.0, 8.0]


def test_crawl_delay_capped():
    p = Politeness(CrawlSettings(crawl_delay_cap=3.0, download_delay=0.1, autothrottle_enabled=False))
    p.set_crawl_delay("h:80", 60)
    assert p.gap("h:80") == 3.0
    assert p.min_gap("h:80") == 3.0


def test_autothrottle_follows_latency_as_scrapy_does():
    settings = CrawlSettings(download_delay=0.1, autothrottle_start_delay=1.0, autothrottle_max_delay=5.0)
    p = Politeness(settings, clock=FakeClock())
    assert p.gap("h:80") == 1.0
    p.record("h:80", 0.2, ok=True, status=200)  # mean of 1.0 and 0.2
    assert p.gap("h:80") == pytest.approx(0.6)
    p.record("h:80", 3.0, ok=True, status=200)  # the target is larger than the mean: jump to it
    assert p.gap("h:80") == pytest.approx(3.0)
    p.record("h:80", 0.0, ok=True, status=404)  # error pages never lower the delay
    assert p.gap("h:80") == pytest.approx(3.0)
    for _ in range(30):
        p.record("h:80", 0.0, ok=True, status=200)
    assert p.gap("h:80") == pytest.approx(0.1)  # never below download_delay


@pytest.mark.trio
async def test_slots_space_starts_and_cap_concurrency(autojump_clock):
    p = Politeness(QUIET)
    starts: list[float] = []
    in_flight = 0
    peak = 0

    async def request() -> None:
        nonlocal in_flight, peak
        async with p.slot("h:80") as grant:
            p.mark_sent("h:80", grant)
            starts.append(trio.current_time())
            in_flight += 1
            peak = max(peak, in_flight)
            await trio.sleep(2.0)  # slower than the delay: concurrency is the limit
            in_flight -= 1

    async with trio.open_nursery() as nursery:
        for _ in range(6):
            nursery.start_soon(request)
    assert peak == 2
    gaps = [b - a for a, b in itertools.pairwise(starts)]
    assert min(gaps) >= 0.5
    assert p.in_flight("h:80") == 0


@pytest.mark.trio
async def test_hosts_do_not_wait_for_each_other(autojump_clock):
    p = Politeness(CrawlSettings(download_delay=10.0, autothrottle_enabled=False))
    t0 = trio.current_time()
    for host in ("a:80", "b:80", "c:80"):
        async with p.slot(host):
            pass
    assert trio.current_time() - t0 < 1.0


@pytest.mark.trio
async def test_waiting_for_a_bad_host_raises(autojump_clock):
    p = Politeness(QUIET)
    for _ in range(3):
        p.record("h:80", 0.1, ok=False, error_kind="timeout")
    with pytest.raises(HostBadError):
        async with p.slot("h:80"):
            pass


def test_timed_out_request_keeps_its_slot_for_a_timeout_more():
    clock = FakeClock()
    settings = CrawlSettings(
        concurrent_requests_per_domain=1,
        download_timeout=5.0,
        retry_backoff_base=1.0,
        autothrottle_enabled=False,
    )
    p = Politeness(settings, clock=clock)
    p.record("h:80", -1.0, ok=False, error_kind="timeout")
    clock.now += 2.0  # back-off over, but the server may still be working on the old request
    assert p.ready_at("h:80") == math.inf
    clock.now += 3.0
    assert p.ready_at("h:80") <= clock.now
    assert p.in_flight("h:80") == 0


@pytest.mark.trio
@pytest.mark.parametrize("sent", [True, False])
async def test_a_request_cancelled_after_it_left_keeps_its_slot_for_a_timeout_more(autojump_clock, sent):
    settings = CrawlSettings(
        concurrent_requests_per_domain=1, download_timeout=5.0, autothrottle_enabled=False
    )
    p = Politeness(settings)
    with trio.CancelScope() as scope:
        async with p.slot("h:80") as grant:
            if sent:
                p.mark_sent("h:80", grant)
            scope.cancel()  # a stop: `Crawler.abandon_in_flight`
            await trio.sleep_forever()
    assert p.in_flight("h:80") == (1 if sent else 0)
    cancelled_at = trio.current_time()
    async with p.slot("h:80"):
        waited = trio.current_time() - cancelled_at
    assert waited >= 5.0 if sent else waited < 1.0  # a request that never left holds nothing


def test_late_send_pushes_the_next_start():
    clock = FakeClock()
    p = Politeness(QUIET, clock=clock)
    clock.now = 200.0
    p.mark_sent("h:80")  # the request left long after its slot was granted
    assert p.ready_at("h:80") == 200.5


@pytest.mark.trio
async def test_next_grant_waits_until_the_previous_request_is_sent(autojump_clock):
    p = Politeness(CrawlSettings(download_delay=1.0, autothrottle_enabled=False))
    sent_at = []

    async def request(send_after: float) -> None:
        async with p.slot("h:80") as grant:
            await trio.sleep(send_after)  # e.g. waiting for a connection
            p.mark_sent("h:80", grant)
            sent_at.append(trio.current_time())
            await trio.sleep(0.1)

    async with trio.open_nursery() as nursery:
        nursery.start_soon(request, 5.0)
        await trio.sleep(0.01)
        nursery.start_soon(request, 0.0)
    assert sent_at[1] - sent_at[0] >= 1.0


RETRYING = CrawlSettings(
    download_delay=0.0,
    autothrottle_enabled=False,
    host_bad_after_failures=2,
    host_bad_retry_delay=10.0,
    host_bad_retries=3,
)


def turn_bad(p: Politeness, host: str = "h:80") -> None:
    while p.state(host) != "bad":
        p.record(host, 0.1, ok=False, error_kind="connect")


def test_a_bad_host_is_tried_again_by_one_request_the_wait_doubling_until_it_is_given_up():
    clock = FakeClock()
    p = Politeness(RETRYING, clock=clock)
    waits = []
    for _ in range(RETRYING.host_bad_retries):
        turn_bad(p)
        waits.append(p.ready_at("h:80") - clock.now)
        clock.now = p.ready_at("h:80")
        assert p.state("h:80") == "slow"  # its wait is over: a request may go
        p.record("h:80", 0.1, ok=False, error_kind="timeout")  # one failure makes it bad again
    assert waits == [10.0, 20.0, 40.0]
    assert p.state("h:80") == "bad" and p.given_up("h:80") and p.ready_at("h:80") == math.inf


def test_the_wait_of_a_bad_host_is_at_most_a_day():
    clock = FakeClock()
    p = Politeness(replace(RETRYING, host_bad_retry_delay=50_000.0, host_bad_retries=5), clock=clock)
    turn_bad(p)
    clock.now = p.ready_at("h:80")
    turn_bad(p)
    assert p.ready_at("h:80") - clock.now == 86_400.0


def test_a_host_that_answers_its_try_is_ok_and_starts_counting_afresh():
    clock = FakeClock()
    p = Politeness(RETRYING, clock=clock)
    turn_bad(p)
    clock.now = p.ready_at("h:80")
    p.record("h:80", 0.1, ok=True, status=200)
    assert p.state("h:80") == "ok" and p.record_of("h:80").bad_spells == 0
    turn_bad(p)
    assert p.ready_at("h:80") - clock.now == 10.0


def test_without_a_retry_delay_a_bad_host_is_given_up_at_once():
    p = Politeness(replace(RETRYING, host_bad_retry_delay=0.0), clock=FakeClock())
    turn_bad(p)
    assert p.given_up("h:80") and p.ready_at("h:80") == math.inf


def test_a_bad_host_restored_from_its_record_waits_out_what_was_left_of_its_wait():
    clock = FakeClock()
    before = Politeness(RETRYING, clock=clock)
    turn_bad(before)
    clock.now += 4.0
    record = before.record_of("h:80")
    assert (record.state, record.bad_spells, record.retry_in) == ("bad", 1, 6.0)
    later = FakeClock()
    later.now = 5_000.0
    after = Politeness(RETRYING, clock=later)
    after.restore("h:80", record)
    assert after.state("h:80") == "bad" and after.ready_at("h:80") == 5_006.0
    later.now = 5_006.0
    after.record("h:80", 0.1, ok=False, error_kind="connect")
    assert after.ready_at("h:80") - later.now == 20.0  # its second spell: the wait doubled


def test_retry_settings_below_zero_are_refused():
    with pytest.raises(ValueError, match="host_bad_retry_delay"):
        CrawlSettings(host_bad_retry_delay=-1.0)
    with pytest.raises(ValueError, match="host_bad_retries"):
        CrawlSettings(host_bad_retries=-1)


@pytest.mark.parametrize(
    ("outcome", "answered"),
    [
        ({"ok": True, "status": 200}, True),
        ({"ok": True, "error_kind": "http_4xx", "status": 404}, True),
        ({"ok": False, "error_kind": "http_5xx", "status": 503}, True),  # an answer, if not a good one
        ({"ok": False, "error_kind": "timeout", "status": 200}, True),  # its headers came, the body did not
        ({"ok": False, "error_kind": "connect"}, False),
        ({"ok": False, "error_kind": "timeout"}, False),
        ({"ok": True, "error_kind": "local_resources"}, False),  # this machine's fault: nothing was asked
    ],
)
def test_a_host_has_answered_once_it_sent_any_http_status(outcome, answered):
    p = Politeness(QUIET, clock=FakeClock())
    assert not p.answered("h:80")  # a new host has not
    p.record("h:80", 0.1, **outcome)
    assert p.answered("h:80") is answered
    for _ in range(3):  # and failures later do not undo an answer
        p.record("h:80", 0.1, ok=False, error_kind="connect")
    assert p.answered("h:80") is answered
