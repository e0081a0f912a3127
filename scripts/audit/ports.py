"""Prints N free TCP ports on 127.0.0.1, one per line, chosen by the kernel now, so that the
audit does not collide with other gateways on the machine (all sockets are held until every
port is picked, so the N differ)."""
import socket
import sys

held = []
for _ in range(int(sys.argv[1])):
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    held.append(s)
print("\n".join(str(s.getsockname()[1]) for s in held))
