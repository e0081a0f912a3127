"""A real redis-server (Debian's) on 127.0.0.1 for the tests of the shared store: DPoP replay,
sessions, rate limits, caches shared by several tokengate processes."""
import shutil
import subprocess
import tempfile

from support.authserver.server import free_port
from support.waiting import wait_for


class RedisServer:
    """A real redis-server on 127.0.0.1 (no persistence), restartable on the same port."""

    def __init__(self):
        self.port = free_port()
        self.dir = tempfile.mkdtemp(prefix="tg-redis-")
        self.proc = None

    def start(self):
        self.proc = subprocess.Popen(["redis-server", "--port", str(self.port), "--bind", "127.0.0.1", "--save", "",
                                      "--appendonly", "no", "--dir", self.dir], stdout=subprocess.DEVNULL, stderr=subprocess.STDOUT)
        wait_for(lambda: self.cli("PING") == "PONG", 10, interval=0.05, what="redis-server to start")
        return self

    def stop(self):
        if self.proc:
            self.proc.kill()
            self.proc.wait()
            self.proc = None

    def cli(self, *args):
        r = subprocess.run(["redis-cli", "-p", str(self.port), *args], capture_output=True, text=True, timeout=5)
        return r.stdout.strip()

    def close(self):
        self.stop()
        shutil.rmtree(self.dir, ignore_errors=True)
