"""Real Redis deployments on loopback ports for the replica tests: a TLS server with a
throwaway CA, a Sentinel set (master, replica, three sentinels), a three-master Cluster.
Every process is Debian's redis-server; all are killed at close()."""
import os
import random
import shutil
import socket
import subprocess
import tempfile

from .authserver.server import free_port
from .waiting import wait_for


def cli(port, *args, tls=None):
    extra = ["--tls", "--cacert", tls] if tls else []
    r = subprocess.run(["redis-cli", "-p", str(port), *extra, *args], capture_output=True, text=True, timeout=10)
    return r.stdout.strip()


class Processes:
    def __init__(self):
        self.dir = tempfile.mkdtemp(prefix="tg-redis-")
        self.procs = {}

    def start(self, name, args):
        self.procs[name] = subprocess.Popen(["redis-server", *args], cwd=self.dir, stdout=subprocess.DEVNULL, stderr=subprocess.STDOUT)

    def kill(self, name):
        p = self.procs.pop(name, None)
        if p:
            p.kill()
            p.wait()

    def close(self):
        for name in list(self.procs):
            self.kill(name)
        shutil.rmtree(self.dir, ignore_errors=True)


class TLSRedis(Processes):
    """redis-server on a TLS port only, its certificate (for 127.0.0.1) from a CA made here."""

    def __init__(self):
        super().__init__()
        self.port = free_port()
        d = self.dir
        run = lambda *a: subprocess.run(["openssl", *a], cwd=d, capture_output=True, check=True)
        run("req", "-x509", "-newkey", "rsa:2048", "-nodes", "-keyout", "ca.key", "-out", "ca.pem", "-days", "2", "-subj", "/CN=test CA")
        run("req", "-newkey", "rsa:2048", "-nodes", "-keyout", "server.key", "-out", "server.csr", "-subj", "/CN=127.0.0.1")
        with open(os.path.join(d, "ext.cnf"), "w") as f:
            f.write("subjectAltName=IP:127.0.0.1\nbasicConstraints=CA:FALSE\n")
        run("x509", "-req", "-in", "server.csr", "-CA", "ca.pem", "-CAkey", "ca.key", "-CAcreateserial", "-days", "2",
            "-extfile", "ext.cnf", "-out", "server.pem")
        self.ca = os.path.join(d, "ca.pem")
        self.start("tls", ["--port", "0", "--tls-port", str(self.port), "--bind", "127.0.0.1", "--save", "", "--appendonly", "no",
                           "--tls-cert-file", "server.pem", "--tls-key-file", "server.key", "--tls-ca-cert-file", "ca.pem",
                           "--tls-auth-clients", "no"])
        wait_for(lambda: cli(self.port, "PING", tls=self.ca) == "PONG",
                 timeout=15, interval=0.1, what="TLS redis-server")

    @property
    def url(self):
        return f"rediss://127.0.0.1:{self.port}/0?ca_file={self.ca}"


class SentinelSet(Processes):
    """A master, a replica and three sentinels (quorum 2) watching `mymaster`."""

    def __init__(self):
        super().__init__()
        self.master, self.replica = free_port(), free_port()
        base = ["--bind", "127.0.0.1", "--save", "", "--appendonly", "no", "--repl-diskless-sync-delay", "0"]
        self.start("master", ["--port", str(self.master), *base])
        wait_for(lambda: cli(self.master, "PING") == "PONG", timeout=15, interval=0.1, what="master")
        self.start("replica", ["--port", str(self.replica), "--replicaof", "127.0.0.1", str(self.master), *base])
        wait_for(lambda: "master_link_status:up" in cli(self.replica, "INFO", "replication"),
                 timeout=15, interval=0.1, what="replica in sync")
        self.sentinels = [free_port() for _ in range(3)]
        for i, port in enumerate(self.sentinels):
            conf = os.path.join(self.dir, f"sentinel-{i}.conf")
            with open(conf, "w") as f:
                f.write(f"port {port}\nbind 127.0.0.1\nsentinel monitor mymaster 127.0.0.1 {self.master} 2\n"
                        "sentinel down-after-milliseconds mymaster 1000\nsentinel failover-timeout mymaster 3000\n")
            self.start(f"sentinel-{i}", [conf, "--sentinel"])
        for port in self.sentinels:
            wait_for(lambda p=port: str(self.master) in cli(p, "SENTINEL", "get-master-addr-by-name", "mymaster"),
                     timeout=15, interval=0.1, what="sentinel")

    @property
    def url(self):
        return "redis+sentinel://" + ",".join(f"127.0.0.1:{p}" for p in self.sentinels) + "/mymaster/0"

    def current_master(self):
        return int(cli(self.sentinels[0], "SENTINEL", "get-master-addr-by-name", "mymaster").split()[-1])


def ephemeral_low():
    """The lowest port the kernel hands out to outgoing connections (any of those may take a
    port we picked between our check and redis-server's bind)."""
    try:
        with open("/proc/sys/net/ipv4/ip_local_port_range") as f:
            return int(f.read().split()[0])
    except (OSError, ValueError, IndexError):
        return 32768


def cluster_port():
    """A free port whose cluster bus port (port + 10000) is free too, both below the kernel's
    ephemeral range: there no outgoing connection can take them before the node binds them
    (and above 55535 a cluster node cannot start at all)."""
    high = min(ephemeral_low(), 55536) - 10000
    for _ in range(200):
        port = random.randint(10000, max(10001, high - 1))
        try:
            for p in (port, port + 10000):
                with socket.socket() as s:
                    s.bind(("127.0.0.1", p))
            return port
        except OSError:
            continue
    raise RuntimeError("no free port pair for a cluster node")


class Cluster(Processes):
    """Three masters, no replicas, slots split by redis-cli --cluster create."""

    def __init__(self):
        super().__init__()
        # A node whose port was taken meanwhile exits at once: start the three again elsewhere.
        for attempt in range(3):
            self.ports = [cluster_port() for _ in range(3)]
            for port in self.ports:
                self.start(f"node-{port}", ["--port", str(port), "--bind", "127.0.0.1", "--save", "", "--appendonly", "no",
                                            "--cluster-enabled", "yes", "--cluster-config-file", f"nodes-{port}.conf",
                                            "--cluster-require-full-coverage", "no"])
            if self.nodes_answer():
                break
            for port in self.ports:
                self.kill(f"node-{port}")
        else:
            raise AssertionError("three cluster nodes did not start")
        subprocess.run(["redis-cli", "--cluster", "create", *[f"127.0.0.1:{p}" for p in self.ports], "--cluster-replicas", "0",
                        "--cluster-yes"], capture_output=True, timeout=30, check=True)
        for port in self.ports:
            wait_for(lambda p=port: "cluster_state:ok" in cli(p, "CLUSTER", "INFO"),
                     timeout=15, interval=0.1, what="cluster_state:ok")

    def nodes_answer(self):
        """Whether the three nodes answer PING; False once one has exited, or after 15 s."""
        def settled():
            if any(self.procs[f"node-{p}"].poll() is not None for p in self.ports):
                return "exited"
            if all(cli(p, "PING") == "PONG" for p in self.ports):
                return "up"
            return None
        try:
            return wait_for(settled, 15, interval=0.1, what="the cluster nodes to answer") == "up"
        except AssertionError:
            return False

    @property
    def url(self):
        return "redis+cluster://" + ",".join(f"127.0.0.1:{p}" for p in self.ports)

    def keys_per_node(self, pattern):
        return [len(cli(p, "--scan", "--pattern", pattern).split()) for p in self.ports]
