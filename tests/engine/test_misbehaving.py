"""The engine against servers that misbehave: every fault ends as counted
errors in the right category within the timeout, never a hang or a crash."""

import time

import pytest

import corebench
from corebench.testing.misbehaving import MisbehavingServer

TIMEOUT_S = 1.0

# mode -> (error category that must count every request, or None for success)
CASES = {
    "ok": None,
    "chunked_valid": None,
    "status_500": None,
    "garbage": "exceptions",
    "chunked_broken": "exceptions",
    "short_body_close": "length",
    "close_mid_body": "length",
    "short_body_hold": "timeout",
    "close_mid_headers": "receive",
    "reset": "receive",
    "never_answers": "timeout",
}


@pytest.mark.parametrize("mode", sorted(CASES))
@pytest.mark.parametrize("keep_alive", [False, True])
def test_fault_is_counted_in_its_category(mode, keep_alive):
    with MisbehavingServer(mode) as srv:
        t0 = time.monotonic()
        r = corebench.load(srv.url, concurrency=2, requests=6, keep_alive=keep_alive, timeout=TIMEOUT_S, threads=1)
        elapsed = time.monotonic() - t0
    assert r.requests == 6
    expected = CASES[mode]
    errors = r.errors.model_dump()
    if expected is None:
        assert r.failed == 0 and r.responses == 6, r.error_samples
    else:
        assert errors[expected] == 6, (errors, r.error_samples)
        assert r.failed == 6
    # Six requests two at a time: at most three timeouts back to back.
    assert elapsed < 3 * TIMEOUT_S + 5


def test_status_500_is_non_2xx_not_failed():
    with MisbehavingServer("status_500") as srv:
        r = corebench.load(srv.url, concurrency=1, requests=4, keep_alive=True)
    assert (r.non_2xx, r.failed, r.status_counts) == (4, 0, {500: 4})


def test_varying_length_is_ab_length_failure_unless_variable():
    with MisbehavingServer("varying_length") as srv:
        strict = corebench.load(srv.url, concurrency=1, requests=10, keep_alive=True)
        loose = corebench.load(srv.url, concurrency=1, requests=10, keep_alive=True, variable_length=True)
    assert strict.errors.length == 5 and strict.responses == 10 and strict.requests == 10
    assert loose.failed == 0
