#!/usr/bin/python3
"""The commands' own start/end log, for proving that no two commands under one lock overlap.

    lease_probe.py hold LOG TAG PGID_FILE SECONDS
        Run as the command under the lock. Appends "start TAG T" to LOG (T: time.monotonic(),
        one clock for every process on the host), writes its process group to PGID_FILE, then
        does its work in a subprocess (sh -c 'sleep SECONDS; true', so that killing only the
        direct child would leave the work running), and appends "done TAG T" when it is over.
        An observer outside the command's process group (setsid) appends "end TAG T" when the
        last process of the command has died: it waits for EOF on a pipe whose write end every
        process of the command holds. So a command killed with SIGKILL, which logs no "done",
        still has an end, and never one before its true end.
        Before its work it also tries a non-blocking exclusive flock on LOG + ".flock", which
        every process of an earlier command still alive holds: "busy TAG" is logged if it fails.

    lease_probe.py check LOG
        Prints and counts overlapping [start, done or else end] intervals, "busy" lines, and
        starts without an observer's end (a command still running); exits 1 if there is any.
"""
import fcntl
import os
import sys
import time


def append(path, line):
    fd = os.open(path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)
    os.write(fd, (line + "\n").encode())
    os.close(fd)


def hold(log, tag, pgid_file, seconds):
    append(log, "start %s %.6f" % (tag, time.monotonic()))
    with open(pgid_file, "w") as f:
        f.write("%d\n" % os.getpgrp())
    r, w = os.pipe()
    if os.fork() == 0:
        os.setsid()
        os.close(w)
        for fd in (0, 1):
            os.dup2(os.open(os.devnull, os.O_RDWR), fd)
        while os.read(r, 1):
            pass
        append(log, "end %s %.6f" % (tag, time.monotonic()))
        os._exit(0)
    os.close(r)
    os.set_inheritable(w, True)
    lock = os.open(log + ".flock", os.O_RDWR | os.O_CREAT, 0o644)
    try:
        fcntl.flock(lock, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        append(log, "busy %s" % tag)
    os.set_inheritable(lock, True)
    work = os.fork()
    if work == 0:
        os.execv("/bin/sh", ["sh", "-c", "sleep %s; true" % seconds])
    os.waitpid(work, 0)
    # The work is over and this is the last process of the command: "done" is its true end,
    # which the observer's "end" can only follow, late by however long it takes to be scheduled.
    append(log, "done %s %.6f" % (tag, time.monotonic()))


def check(log):
    starts, ends, observed, problems = {}, {}, set(), []
    with open(log) as f:
        for line in f:
            parts = line.split()
            if parts[0] == "start":
                starts[parts[1]] = float(parts[2])
            elif parts[0] == "end":
                ends.setdefault(parts[1], float(parts[2]))
                observed.add(parts[1])
            elif parts[0] == "done":
                ends[parts[1]] = float(parts[2])
            elif parts[0] == "busy":
                problems.append("%s started while an earlier command still held the flock" %
                                parts[1])
    for tag in starts:
        if tag not in observed:
            problems.append("%s never ended" % tag)
    spans = sorted((starts[t], ends[t], t) for t in starts if t in ends)
    for i, (s1, e1, t1) in enumerate(spans):
        for s2, e2, t2 in spans[i + 1:]:
            if s2 < e1:
                problems.append("%s [%.3f, %.3f] overlaps %s [%.3f, %.3f]" %
                                (t1, s1, e1, t2, s2, e2))
    for p in problems:
        print(p)
    print("%d commands, %d problems" % (len(starts), len(problems)))
    return 1 if problems else 0


if __name__ == "__main__":
    if sys.argv[1] == "hold":
        hold(*sys.argv[2:6])
    elif sys.argv[1] == "check":
        sys.exit(check(sys.argv[2]))
    else:
        sys.exit("usage: lease_probe.py hold LOG TAG PGID_FILE SECONDS | check LOG")
