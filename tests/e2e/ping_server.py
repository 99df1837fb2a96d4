#!/usr/bin/python3
"""A stand-in for Healthchecks.io's ping endpoint, for ping.bats.

ping_server.py DIR [hang]: listens on a free loopback port, writes the port to DIR/port, and
appends each request's path to DIR/requests (one line each, written when the request arrives).
Answers 200 "OK", or with "hang" accepts and reads the request but never answers (a service
that hangs), so that the client's own time bound is what ends the ping.
"""
import http.server
import os
import sys
import threading

directory = sys.argv[1]
hang = len(sys.argv) > 2 and sys.argv[2] == "hang"
log_lock = threading.Lock()


class Handler(http.server.BaseHTTPRequestHandler):
    def do_GET(self):
        with log_lock, open(os.path.join(directory, "requests"), "a") as log:
            log.write(self.path + "\n")
        if hang:
            threading.Event().wait()  # never answers; the thread dies with the server
        body = b"OK"
        self.send_response(200)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, *args):
        pass


server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
server.daemon_threads = True
tmp = os.path.join(directory, "port.tmp")
with open(tmp, "w") as f:
    f.write(str(server.server_address[1]))
os.rename(tmp, os.path.join(directory, "port"))  # whole or absent: the test polls for it
server.serve_forever()
