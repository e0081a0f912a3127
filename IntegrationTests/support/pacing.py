"""Peers that are slow on purpose: a client that trickles its request or reads its answer
slowly, an upstream that spaces its events. The gaps are the input under test, not a wait for
something that happens, so no event can stand in for them; they live here, in one place, so
that a test says how slow its peer is rather than where to sleep."""
import itertools
import time


def paced(items, pause):
    """Yields each of `items`, then pauses `pause` seconds before the next: the caller's work
    on each item (a write, a read) is followed by a gap of that length."""
    for item in items:
        yield item
        # The gap is the input under test: nothing happens that it waits for.
        time.sleep(pause)


def during(seconds, since=None):
    """Counts 0, 1, 2, ... for as long as `seconds` have not passed since `since` (a
    time.time() value; by default the first call)."""
    end = (time.time() if since is None else since) + seconds
    return itertools.takewhile(lambda _: time.time() < end, itertools.count())
