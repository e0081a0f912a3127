"""Fixtures every subject folder uses: a real upstream, real tokengate processes, the real
authorization server, a real redis-server, all on 127.0.0.1. The classes and helpers behind
them are in support/ (support/gateway.py); a subject folder's own fixtures are in its
conftest.py."""
import glob
import os
import sys

import pytest

HERE = os.path.dirname(os.path.abspath(__file__))
# A test module borrows another's helpers and fixtures by its basename (`from test_bearer
# import idp, token`), across subject folders: every folder is on the path, whichever one
# pytest was given. That is why basenames are unique across the tree.
for folder in sorted({os.path.dirname(p) for p in glob.glob(os.path.join(HERE, "*", "test_*.py"))}):
    if folder not in sys.path:
        sys.path.append(folder)

from support.gateway import Gateway, Upstream, basic_config  # noqa: E402
# The real authorization server (idpyoidc): fixtures `authserver`, `authserver_factory`.
from support.authserver.fixtures import authserver, authserver_factory  # noqa: E402,F401
from support.redis_server import RedisServer  # noqa: E402


@pytest.fixture
def upstream():
    u = Upstream().start()
    yield u
    u.stop()


@pytest.fixture
def gateway_factory():
    started = []

    def make(config_text, **kw):
        g = Gateway(config_text, **kw)
        started.append(g)
        return g.start()

    make.started = started
    yield make
    for g in started:
        g.stop()


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_makereport(item, call):
    """A failed test's report ends with the output of each gateway it started: what the
    gateway logged (refusals, upstream errors, access lines) is what tells a rare failure's
    cause, and the gateway's temp dir is gone by the time anyone reads a CI log."""
    outcome = yield
    report = outcome.get_result()
    factory = getattr(item, "funcargs", {}).get("gateway_factory")
    if report.when != "call" or not report.failed or factory is None:
        return
    for g in getattr(factory, "started", []):
        if g.proc is not None:
            report.sections.append((f"tokengate on port {g.port}: its output's end", g.output()[-4000:]))


@pytest.fixture
def gateway(upstream, gateway_factory):
    return gateway_factory(basic_config(upstream.port))


@pytest.fixture
def redis():
    """A real redis-server of the test's own (support/redis_server.py)."""
    r = RedisServer().start()
    yield r
    r.close()
