"""pytest fixtures for the authorization server (imported by IntegrationTests/conftest.py).

  authserver          one started AS (issuer http://127.0.0.1:PORT), closed after the test
  authserver_factory  make(start=True, **AuthServer kwargs) → more (e.g. a second issuer),
                      or one not started yet (IdP down at start); all closed after the test
"""
import pytest

from .server import AuthServer


@pytest.fixture
def authserver_factory():
    made = []

    def make(start=True, **kw):
        a = AuthServer(**kw)
        made.append(a)
        return a.start() if start else a

    yield make
    for a in made:
        a.close()


@pytest.fixture
def authserver(authserver_factory):
    return authserver_factory()
