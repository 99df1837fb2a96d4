#!/usr/bin/python3
"""The commands' own start/end log under a permits lock, and the checker of its invariants.

    permit_probe.py hold LOG SECONDS
        Run as the command under the lock. Appends "start T FENCE PERMIT PID" to LOG (T:
        time.monotonic(), one clock for every process on the host; FENCE and PERMIT from
        REDLOCK_FENCE and REDLOCK_PERMIT), sleeps SECONDS, appends "end T FENCE PERMIT PID".

    permit_probe.py check LOG N [RUNS]
        Checks that never more than N commands ran at once, never two at once with the same
        permit, every permit is within 1..N, fences never repeat, and a command that started
        more than half a second after another ended has the larger fence; with RUNS, that exactly RUNS commands ran.
        Prints each violation and exits 1 if there is any; prints the peak concurrency.
"""
import os
import sys
import time


def append(path, line):
    fd = os.open(path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)
    os.write(fd, (line + "\n").encode())
    os.close(fd)


def hold(log, seconds):
    me = "%s %s %d" % (os.environ["REDLOCK_FENCE"], os.environ["REDLOCK_PERMIT"], os.getpid())
    append(log, "start %.6f %s" % (time.monotonic(), me))
    time.sleep(seconds)
    append(log, "end %.6f %s" % (time.monotonic(), me))


def check(log, n, runs):
    runs_seen = {}  # pid -> [start, end, fence, permit]
    events = []
    with open(log) as f:
        for line in f:
            kind, t, fence, permit, pid = line.split()
            run = runs_seen.setdefault(pid, [None, None, int(fence), int(permit)])
            run[0 if kind == "start" else 1] = float(t)
            events.append((float(t), 0 if kind == "end" else 1, pid))
    bad = []
    for pid, (start, end, fence, permit) in runs_seen.items():
        if start is None or end is None:
            bad.append("run %s has no %s" % (pid, "start" if start is None else "end"))
        if not 1 <= permit <= n:
            bad.append("run %s has permit %d outside 1..%d" % (pid, permit, n))
    fences = [r[2] for r in runs_seen.values()]
    if len(set(fences)) != len(fences):
        bad.append("fences repeat: %s" % sorted(fences))
    active, peak = {}, 0
    for t, kind, pid in sorted(events):  # ends before starts at the same instant
        permit = runs_seen[pid][3]
        if kind == 0:
            active.pop(pid, None)
            continue
        if permit in active.values():
            bad.append("permit %d held twice at %.6f" % (permit, t))
        active[pid] = permit
        peak = max(peak, len(active))
        if len(active) > n:
            bad.append("%d holders at once at %.6f (at most %d)" % (len(active), t, n))
    done = sorted((r for r in runs_seen.values() if None not in r[:2]), key=lambda r: r[1])
    for a in done:
        for b in done:
            # Half a second after: b's acquire then followed a's (a command starts within
            # milliseconds of its acquire), so Redis drew b's fence after a's.
            if b[0] > a[1] + 0.5 and b[2] <= a[2]:
                bad.append("fence %d started after fence %d ended" % (b[2], a[2]))
    if runs is not None and len(runs_seen) != runs:
        bad.append("%d runs logged, expected %d" % (len(runs_seen), runs))
    for line in bad:
        print(line)
    print("peak %d" % peak)
    return 1 if bad else 0


if __name__ == "__main__":
    if sys.argv[1] == "hold":
        hold(sys.argv[2], float(sys.argv[3]))
    else:
        sys.exit(check(sys.argv[2], int(sys.argv[3]), int(sys.argv[4]) if len(sys.argv) > 4 else None))
