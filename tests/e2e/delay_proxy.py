#!/usr/bin/python3
"""A TCP proxy that makes a loopback redis-server look far away: every byte is held MS
milliseconds in each direction (a round trip of 2 * MS), in order, as a long link would.

    delay_proxy.py PORT_FILE REDIS_PORT MS

Listens on a free loopback port (written to PORT_FILE) and forwards each client connection to
127.0.0.1:REDIS_PORT. The TCP handshake with the proxy itself is not delayed, but nothing the
client sends reaches Redis before MS, and nothing Redis answers reaches the client before MS.
Used by the round-trip tests (tests/e2e/rtt.bats) and bench/rtt.
"""
import collections
import os
import socket
import sys
import threading
import time

port_file, redis_port, delay = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]) / 1000.0


def pump(src, dst):
    """Copies src to dst, each chunk sent `delay` after it arrived; EOF is passed on the same way."""
    queue = collections.deque()
    ready = threading.Condition()

    def send():
        while True:
            with ready:
                while not queue:
                    ready.wait()
                due, data = queue.popleft()
            pause = due - time.monotonic()
            if pause > 0:
                time.sleep(pause)
            try:
                if data is None:
                    dst.shutdown(socket.SHUT_WR)
                    return
                dst.sendall(data)
            except OSError:
                return

    threading.Thread(target=send, daemon=True).start()
    while True:
        try:
            data = src.recv(65536)
        except OSError:
            data = b""
        with ready:
            queue.append((time.monotonic() + delay, data or None))
            ready.notify()
        if not data:
            return


def serve(client):
    try:
        upstream = socket.create_connection(("127.0.0.1", redis_port))
    except OSError:
        client.close()
        return
    for s in (client, upstream):
        s.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
    threading.Thread(target=pump, args=(client, upstream), daemon=True).start()
    threading.Thread(target=pump, args=(upstream, client), daemon=True).start()


listener = socket.socket()
listener.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
listener.bind(("127.0.0.1", 0))
listener.listen(128)
with open(port_file + ".tmp", "w") as f:
    f.write(str(listener.getsockname()[1]))
os.rename(port_file + ".tmp", port_file)
while True:
    c, _ = listener.accept()
    threading.Thread(target=serve, args=(c,), daemon=True).start()
