#!/usr/bin/python3
"""The commands' own start/end log under a permits or shared lock, and the checkers of its
invariants.

    permit_probe.py hold LOG SECONDS [MODE]
        Run as the command under the lock. Appends "start T FENCE PERMIT PID" to LOG (T:
        time.monotonic(), one clock for every process on the host; FENCE and PERMIT from
        REDLOCK_FENCE and REDLOCK_PERMIT), sleeps SECONDS, appends "end T FENCE PERMIT PID".
        With MODE (S for a --shared run, X for an exclusive one), MODE takes PERMIT's place.
        SECONDS may be until:PATH instead: the command lasts until the file PATH exists (a
        test's gate).

    permit_probe.py check LOG N [RUNS]
        Checks that never more than N commands ran at once, never two at once with the same
        permit, every permit is within 1..N, fences never repeat, and a command that started
        more than half a second after another ended has the larger fence; with RUNS, that exactly RUNS commands ran.
        Prints each violation and exits 1 if there is any; prints the peak concurrency.

    permit_probe.py check-shared LOG [RUNS]
        For runs logged with MODE: checks that an exclusive (X) command never ran beside any
        other, that fences never repeat, that every run that started after an exclusive one
        ended has a larger fence and every run that ended before it started a smaller one (an
        exclusive holder's fence is above every fence admitted before it), that a shared command
        that started more than half a second after another ended has the larger fence, and with
        RUNS that exactly RUNS commands ran. Prints each violation and exits 1 if there is any;
        prints the peak number of shared commands at once ("peak shared K").
"""
import os
import sys
import time


def append(path, line):
    fd = os.open(path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)
    os.write(fd, (line + "\n").encode())
    os.close(fd)


def hold(log, seconds, mode=None):
    me = "%s %s %d" % (os.environ["REDLOCK_FENCE"], mode or os.environ["REDLOCK_PERMIT"],
                       os.getpid())
    append(log, "start %.6f %s" % (time.monotonic(), me))
    if seconds.startswith("until:"):
        while not os.path.exists(seconds[len("until:"):]):
            time.sleep(0.02)
    else:
        time.sleep(float(seconds))
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


def check_shared(log, runs):
    runs_seen = {}  # pid -> [start, end, fence, mode]
    with open(log) as f:
        for line in f:
            kind, t, fence, mode, pid = line.split()
            run = runs_seen.setdefault(pid, [None, None, int(fence), mode])
            run[0 if kind == "start" else 1] = float(t)
    bad = []
    for pid, (start, end, fence, mode) in runs_seen.items():
        if start is None or end is None:
            bad.append("run %s has no %s" % (pid, "start" if start is None else "end"))
        if mode not in ("S", "X"):
            bad.append("run %s has mode %s, not S or X" % (pid, mode))
    fences = [r[2] for r in runs_seen.values()]
    if len(set(fences)) != len(fences):
        bad.append("fences repeat: %s" % sorted(fences))
    done = [r for r in runs_seen.values() if None not in r[:2]]
    for x in (r for r in done if r[3] == "X"):
        for r in done:
            if r is x:
                continue
            if r[0] < x[1] and x[0] < r[1]:
                bad.append("%s fence %d ran beside exclusive fence %d" % (r[3], r[2], x[2]))
            # Exact, no slack: nothing holds beside an exclusive holder, so a command that
            # started after it ended was admitted after it, and one that ended before it
            # started was admitted before it.
            elif r[0] >= x[1] and r[2] <= x[2]:
                bad.append("fence %d started after exclusive fence %d ended" % (r[2], x[2]))
            elif r[1] <= x[0] and r[2] >= x[2]:
                bad.append("exclusive fence %d is not above fence %d admitted before it" %
                           (x[2], r[2]))
    for a in done:
        for b in done:
            # As in check: half a second after, b's acquire followed a's.
            if b[0] > a[1] + 0.5 and b[2] <= a[2]:
                bad.append("fence %d started after fence %d ended" % (b[2], a[2]))
    events = sorted((t, k, pid) for pid, r in runs_seen.items() if r[3] == "S"
                    for t, k in ((r[0], 1), (r[1], 0)) if t is not None)
    active, peak = 0, 0
    for _, k, _ in events:  # ends before starts at the same instant
        active += 1 if k else -1
        peak = max(peak, active)
    if runs is not None and len(runs_seen) != runs:
        bad.append("%d runs logged, expected %d" % (len(runs_seen), runs))
    for line in sorted(set(bad)):
        print(line)
    print("peak shared %d" % peak)
    return 1 if bad else 0


if __name__ == "__main__":
    if sys.argv[1] == "hold":
        hold(sys.argv[2], sys.argv[3], sys.argv[4] if len(sys.argv) > 4 else None)
    elif sys.argv[1] == "check-shared":
        sys.exit(check_shared(sys.argv[2], int(sys.argv[3]) if len(sys.argv) > 3 else None))
    else:
        sys.exit(check(sys.argv[2], int(sys.argv[3]), int(sys.argv[4]) if len(sys.argv) > 4 else None))
