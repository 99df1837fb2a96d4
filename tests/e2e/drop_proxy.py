#!/usr/bin/python3
"""A TCP proxy in front of a real redis-server that loses chosen replies, for the tests of
ambiguous outcomes: the command reaches Redis and runs, but its reply never reaches the client.

    drop_proxy.py PORT_FILE REDIS_PORT [--drop N] [--match CMD,CMD] [--mode close|stall]
                  [--delay CMD:MS] [--log FILE]

Listens on a free loopback port (written to PORT_FILE) and forwards each client connection to
127.0.0.1:REDIS_PORT. The replies to the first N commands (counted over all connections) whose
name is in --match (default EVALSHA,EVAL) are dropped after Redis sent them; then --mode close
closes that client's connection (a reset mid-command), and --mode stall keeps it open but silent
(a timeout). --delay CMD:MS holds the first command named CMD that long before forwarding it.
Each dropped or delayed command is logged to --log as one line: "dropped EVALSHA" or "delayed
BLPOP". Everything else passes through unchanged.
"""
import argparse
import collections
import os
import socket
import threading
import time


class Incomplete(Exception):
    pass


def parse(buf, i):
    """Parses one RESP2 value at buf[i:]; returns (value, next index) or raises Incomplete."""
    nl = buf.find(b"\r\n", i)
    if nl < 0:
        raise Incomplete()
    kind, line, j = buf[i:i + 1], buf[i + 1:nl], nl + 2
    if kind in (b"+", b"-", b":"):
        return line, j
    if kind == b"$":
        n = int(line)
        if n < 0:
            return None, j
        if len(buf) < j + n + 2:
            raise Incomplete()
        return buf[j:j + n], j + n + 2
    if kind == b"*":
        n = int(line)
        items = []
        for _ in range(max(n, 0)):
            item, j = parse(buf, j)
            items.append(item)
        return items, j
    raise ValueError("not RESP: %r" % buf[i:i + 20])


class Proxy:
    def __init__(self, args):
        self.redis_port = args.redis_port
        self.match = {m.upper() for m in args.match.split(",")}
        self.drops_left = args.drop
        self.mode = args.mode
        self.delays = {}
        for d in args.delay:
            name, ms = d.split(":")
            self.delays[name.upper()] = int(ms) / 1000.0
        self.log_path = args.log
        self.lock = threading.Lock()

    def log(self, line):
        if self.log_path:
            with self.lock, open(self.log_path, "a") as f:
                f.write(line + "\n")

    def take_drop(self, name):
        with self.lock:
            if name in self.match and self.drops_left > 0:
                self.drops_left -= 1
                return True
            return False

    def take_delay(self, name):
        with self.lock:
            return self.delays.pop(name, 0)

    def serve(self, client):
        server = socket.create_connection(("127.0.0.1", self.redis_port))
        for s in (client, server):
            s.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        pending = collections.deque()  # command names, in the order their replies will come
        state = {"dead": False}

        def shut():
            state["dead"] = True
            for s in (client, server):
                try:
                    s.shutdown(socket.SHUT_RDWR)
                except OSError:
                    pass

        def upstream():
            buf = b""
            try:
                while True:
                    data = client.recv(65536)
                    if not data:
                        break
                    buf += data
                    while True:
                        try:
                            value, end = parse(buf, 0)
                        except Incomplete:
                            break
                        name = value[0].decode().upper() if isinstance(value, list) else "?"
                        delay = self.take_delay(name)
                        if delay:
                            self.log("delayed " + name)
                            time.sleep(delay)
                        pending.append(name)
                        server.sendall(buf[:end])
                        buf = buf[end:]
            except OSError:
                pass
            shut()

        def downstream():
            buf = b""
            silent = False
            try:
                while True:
                    data = server.recv(65536)
                    if not data:
                        break
                    buf += data
                    while True:
                        try:
                            _, end = parse(buf, 0)
                        except Incomplete:
                            break
                        reply, buf = buf[:end], buf[end:]
                        name = pending.popleft() if pending else "?"
                        if not silent and self.take_drop(name):
                            self.log("dropped " + name)
                            if self.mode == "close":
                                shut()
                                return
                            silent = True
                        if not silent:
                            client.sendall(reply)
            except OSError:
                pass
            if not silent:
                shut()

        threading.Thread(target=upstream, daemon=True).start()
        threading.Thread(target=downstream, daemon=True).start()


def main():
    p = argparse.ArgumentParser()
    p.add_argument("port_file")
    p.add_argument("redis_port", type=int)
    p.add_argument("--drop", type=int, default=0)
    p.add_argument("--match", default="EVALSHA,EVAL")
    p.add_argument("--mode", choices=("close", "stall"), default="close")
    p.add_argument("--delay", action="append", default=[])
    p.add_argument("--log")
    args = p.parse_args()
    proxy = Proxy(args)
    listener = socket.socket()
    listener.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    listener.bind(("127.0.0.1", 0))
    listener.listen(64)
    tmp = args.port_file + ".tmp"
    with open(tmp, "w") as f:
        f.write("%d\n" % listener.getsockname()[1])
    os.rename(tmp, args.port_file)
    while True:
        client, _ = listener.accept()
        try:
            proxy.serve(client)
        except OSError:
            client.close()


if __name__ == "__main__":
    main()
