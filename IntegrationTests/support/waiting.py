"""The one way the integration tests wait for something another thread or process does a
moment later (a log line, a metric, a reload, a process that is ready): poll, bounded. A wait
that ends as soon as its condition holds costs nothing on a fast machine and still holds on a
slow one, where a fixed sleep is both too long and sometimes too short."""
import time


def wait_for(predicate, timeout=5.0, interval=0.02, what="condition"):
    """Calls `predicate` until it returns something true and returns that. After `timeout`
    seconds (the predicate is asked once more at the end) raises AssertionError naming `what`:
    a string, or a function that makes one, called only then (e.g. to quote a log's end)."""
    deadline = time.monotonic() + timeout
    while True:
        value = predicate()
        if value:
            return value
        if time.monotonic() >= deadline:
            raise AssertionError(f"timed out after {timeout}s waiting for {what() if callable(what) else what}")
        # The poll's interval: what is waited for sends no signal, so it is asked again.
        time.sleep(interval)


def sleep_into_second(start, n):
    """Sleeps until the wall clock reads at least floor(start) + n whole seconds. The gateway
    (and the test AS) keep session and token times in whole Unix seconds, so a deadline n
    seconds after something that happened by `start` has passed then — without the extra
    half second on average that a flat wait of n + 0.5 s spends. Only for tests that must let
    real time pass end to end; the timeouts' exact boundaries are tested with a manual clock
    in Tests/GatewayTests (SessionTimeTests, TokenTimeTests, IntrospectionTimeTests)."""
    # Real time is what the deadline is made of: no event comes when a second passes.
    time.sleep(max(0.0, int(start) + n + 0.05 - time.time()))


def wait_for_streak(attempt, in_a_row, timeout, interval=0.1, what="a run of successes"):
    """Calls `attempt` (True: success, False: not yet; it may assert what else is allowed)
    until `in_a_row` successes come one after another, and returns the seconds that took. A
    run, not one success: each attempt is a fresh connection the kernel hands to any worker,
    and every worker must have recovered. Pauses `interval` only after a failure. Past
    `timeout` seconds raises AssertionError naming `what`."""
    started, streak = time.monotonic(), [0]

    def run():
        while attempt():
            streak[0] += 1
            if streak[0] >= in_a_row:
                return True
        streak[0] = 0
        return False
    wait_for(run, timeout, interval, what)
    return time.monotonic() - started


def wait_until_still(read, timeout=30.0, interval=0.25, what="a count to stop growing"):
    """Waits until `read()` (a growing count: bytes written, bytes sent) is above zero and the
    same at two looks `interval` apart: the writer is blocked, held back by its peer. Only then
    does "it has not finished" say that something holds it, rather than that it has not got
    there yet. Returns the count."""
    last = [None]

    def still():
        now, before = read(), last[0]
        last[0] = now
        return now and now == before and now
    return wait_for(still, timeout, interval, what)
