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


def serve(conn):
    global commands
    with conn:
        while True:
            data = conn.recv(65536)
            if not data:
                return
            with lock:
                commands += 1
                count = commands
            if mode == "silent":
                continue
            if mode == "close-mid":
                conn.sendall(b"*2\r\n:1\r\n$10\r\nabc")
                return
            if mode == "garbage":
                conn.sendall(b"HTTP/1.1 400 Bad Request\r\nContent-Length: 0\r\n\r\n")
                continue
            if mode == "reply":
                conn.sendall(reply)
                continue
            if mode == "stream":
                conn.sendall(reply)
                chunk = b"x" * 65536
                try:
                    while True:
                        conn.sendall(chunk)
                except OSError:
                    return
            if mode == "script":
                replies = reply.split(b"|")
                conn.sendall(replies[min(count, len(replies)) - 1].replace(b"PORT", own_port))
                continue
            if mode == "acquire-then":
                conn.sendall(ACQUIRED if count == 1 else reply)
                continue


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
