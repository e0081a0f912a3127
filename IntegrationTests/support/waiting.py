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
        time.sleep(interval)
