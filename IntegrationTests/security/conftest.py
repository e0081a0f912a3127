"""The attacker's side of the HTTP/1 engine: smuggling, request-line paths, header hygiene both
ways, the outside security test's findings, a differential test against llhttp. Shared
fixtures are in the root conftest.py."""
import pytest

from support.gateway import basic_config


@pytest.fixture
def one_worker(upstream, gateway_factory):
    """A gateway with one worker in front of the echo upstream (one worker: what one client
    connection does to the next is seen by the same process)."""
    return gateway_factory(basic_config(upstream.port, workers=1))
