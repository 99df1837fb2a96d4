#!/usr/bin/python3
"""A TCP proxy that makes a loopback redis-server look far away: every byte is held MS
milliseconds in each direction (a round trip of 2 * MS), in order, as a long link would.

    delay_proxy.py PORT_FILE REDIS_PORT MS [TURNS_FILE]

Listens on a free loopback port (written to PORT_FILE) and forwards each client connection to
127.0.0.1:REDIS_PORT. The TCP handshake with the proxy itself is not delayed, but nothing the
client sends reaches Redis before MS, and nothing Redis answers reaches the client before MS.
Used by the round-trip tests (tests/e2e/rtt.bats) and bench/rtt.

With TURNS_FILE, it counts round trips, whatever the delay: a turn is the first data a client
sends on a connection, or data it sends after Redis answered something on that connection since
its last. Commands sent together in one write are one turn, each command sent after the answer to
the one before is one more. TURNS_FILE holds the total over all connections so far.
"""
import collections
import os
import socket
import sys
import threading
import time

port_file, redis_port, delay = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]) / 1000.0
turns_file = sys.argv[4] if len(sys.argv) > 4 else None
turns = 0
turns_lock = threading.Lock()


def count_turn():
    global turns
    with turns_lock:
        turns += 1
        with open(turns_file + ".tmp", "w") as f:
            f.write(str(turns))
        os.rename(turns_file + ".tmp", turns_file)


def pump(src, dst, turn=None):
    """Copies src to dst, each chunk sent `delay` after it arrived; EOF is passed on the same way.
    turn(), if given, is called with each chunk as it arrives."""
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
        if data and turn:
            turn()
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
    to_redis, to_client = None, None
    if turns_file:
        answered = [True]  # the first data on a connection is a turn

        def to_redis():
            if answered[0]:
                answered[0] = False
                count_turn()

        def to_client():
            answered[0] = True

    threading.Thread(target=pump, args=(client, upstream, to_redis), daemon=True).start()
    threading.Thread(target=pump, args=(upstream, client, to_client), daemon=True).start()


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
