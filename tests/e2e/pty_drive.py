"""Drives an interactive bash in a pseudo-terminal, as a person at a terminal would.

Usage: pty_drive.py STEP...   where STEP is send:TEXT (\\n, \\x1a for ^Z, \\x03 for ^C are
understood), expect:REGEX (waits up to 10 s for the regex in the output since the last
expect) or run:SHELL-COMMAND (runs it outside the terminal and waits for it, e.g. to let a
holder go while a command in the terminal waits). Exits 0 when every step passed; otherwise
prints the output seen and exits 1.
"""
import os
import pty
import re
import select
import subprocess
import sys
import time

pid, fd = pty.fork()
if pid == 0:
    os.environ["PS1"] = "PROMPT$ "
    os.execvp("bash", ["bash", "--norc", "--noprofile", "-i"])

seen = b""
ok = True
for step in sys.argv[1:]:
    kind, _, arg = step.partition(":")
    if kind == "send":
        os.write(fd, arg.encode().decode("unicode_escape").encode("latin-1"))
        continue
    if kind == "run":
        if subprocess.run(["sh", "-c", arg]).returncode != 0:
            ok = False
            print(f"step {step!r} failed")
            break
        continue
    pattern = re.compile(arg.encode())
    deadline = time.monotonic() + 10
    while not pattern.search(seen):
        left = deadline - time.monotonic()
        if left <= 0:
            ok = False
            break
        r, _, _ = select.select([fd], [], [], left)
        if r:
            try:
                seen += os.read(fd, 4096)
            except OSError:
                break
    if not ok:
        print(f"step {step!r} not satisfied; output was:\n{seen.decode(errors='replace')}")
        break
    seen = seen[pattern.search(seen).end():]

try:
    os.write(fd, b"exit\n")
except OSError:
    pass
time.sleep(0.1)
os.kill(pid, 9)
sys.exit(0 if ok else 1)
