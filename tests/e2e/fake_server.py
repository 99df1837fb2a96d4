#!/usr/bin/python3
"""A TCP server that is not a well-behaved Redis, for the hostile-input tests.

Usage: fake_server.py MODE PORTFILE [REPLY]
Listens on a free loopback port, writes the port to PORTFILE, and serves every connection:
  silent      accepts and reads, never answers
  close-mid   answers the first command with half a reply, then closes the connection
  garbage     answers with text that is not RESP (an HTTP error page)
  reply       answers every command with REPLY (Python escapes such as \\r\\n are decoded)
  stream      answers the first command with REPLY and then streams 'x' until the client hangs up
  script      answers the Nth command with the Nth of REPLY's '|'-separated replies (the last one
              again after that); PORT in a reply stands for the fake's own port
  acquire-then answers the first command as a successful acquire (fence 1) and every later one
              with REPLY
"""
import os
import socket
import sys
import threading

mode, port_file = sys.argv[1], sys.argv[2]
reply = sys.argv[3].encode().decode("unicode_escape").encode("latin-1") if len(sys.argv) > 3 else b""
ACQUIRED = b"*2\r\n:1\r\n:1\r\n"


lock = threading.Lock()
commands = 0  # across connections: a reconnect does not start the script again


def complete_commands(buf):
    """How many whole commands (RESP arrays of bulk strings) `buf` starts with, and the bytes
    they take: a client may send several in one write (a pipeline), each owed its own answer.
    Bytes that are not RESP count as one command, as a server that answers per line would."""
    count, pos = 0, 0
    while pos < len(buf):
        if buf[pos:pos + 1] != b"*":
            return count + 1, len(buf)
        end = buf.find(b"\r\n", pos)
        if end < 0:
            break
        n, at = int(buf[pos + 1:end]), end + 2
        for _ in range(n):
            end = buf.find(b"\r\n", at)
            if end < 0:
                return count, pos
            at = end + 2 + int(buf[at + 1:end]) + 2
        if at > len(buf):
            break
        count, pos = count + 1, at
    return count, pos


def serve(conn):
    with conn:
        buf = b""
        while True:
            data = conn.recv(65536)
            if not data:
                return
            buf += data
            n, used = complete_commands(buf)
            buf = buf[used:]
            for _ in range(n):
                if not answer(conn):
                    return


def answer(conn):
    """Answers one command; False when the connection is to end."""
    global commands
    with lock:
        commands += 1
        count = commands
    if mode == "close-mid":
        conn.sendall(b"*2\r\n:1\r\n$10\r\nabc")
        return False
    if mode == "garbage":
        conn.sendall(b"HTTP/1.1 400 Bad Request\r\nContent-Length: 0\r\n\r\n")
    elif mode == "reply":
        conn.sendall(reply)
    elif mode == "stream":
        conn.sendall(reply)
        chunk = b"x" * 65536
        try:
            while True:
                conn.sendall(chunk)
        except OSError:
            return False
    elif mode == "script":
        replies = reply.split(b"|")
        conn.sendall(replies[min(count, len(replies)) - 1].replace(b"PORT", own_port))
    elif mode == "acquire-then":
        conn.sendall(ACQUIRED if count == 1 else reply)
    return True  # "silent" answers nothing and reads on


listener = socket.socket()
listener.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
listener.bind(("127.0.0.1", 0))
listener.listen(16)
own_port = str(listener.getsockname()[1]).encode()
with open(port_file + ".tmp", "w") as f:
    f.write(str(listener.getsockname()[1]))
os.rename(port_file + ".tmp", port_file)
while True:
    c, _ = listener.accept()
    threading.Thread(target=serve, args=(c,), daemon=True).start()
