#!/usr/bin/python3
"""The commands' own start/end log, for proving that no two commands under one lock overlap.

    lease_probe.py hold LOG TAG PGID_FILE SECONDS
        Run as the command under the lock. Writes its process group to PGID_FILE, has "start TAG T
        [FENCE [PERMIT]]" appended to LOG (T: time.monotonic(), one clock for every process on the
        host; FENCE: its REDLOCK_FENCE, when the run gave one, and PERMIT its REDLOCK_PERMIT), then
        does its work in a subprocess (sh -c 'sleep SECONDS; true', so that killing only the direct
        child would leave the work running), and appends "done TAG T" when it is over. An observer
        outside the command's process group (setsid) appends the start line, which the command
        sends it, and "end TAG T" when the last process of the command has died: it waits for EOF
        on a pipe whose write end every process of the command holds, and then for the kernel to
        drop the command's flock. So a command killed with SIGKILL, which logs no "done", still has
        an end, and never one before its true end. SECONDS may be until:PATH instead: the work
        lasts until the file PATH exists (a test's gate).
        Before its start's time it also tries a non-blocking exclusive flock on LOG + ".flock",
        which every process of an earlier command still alive holds: "busy TAG" is logged if it
        fails.

        Each command also holds a lock on LOG.alive/TAG while any of its processes lives, and
        logs "dead TAG BY" for each earlier command whose lock it could take before its start.

    lease_probe.py check LOG [--admit-key-lost] [--at-once N [--exclusive PREFIX]]
        Prints and counts overlapping [start, done or else end] intervals (a killed command's
        end, its observer's, may come late: an overlap with a later command that was not "busy"
        is not one, since that command's flock, taken before its start, found nothing of the
        killed one alive), "busy" lines, and
        starts without an observer's end (a command still running); exits 1 if there is any.
        Fences, where logged, must all differ and grow in the order the commands started.
        The contenders' loop may log "exit TAG STATUS [key-lost]" after each run ("key-lost":
        the run reported its key gone or holding another token). With --admit-key-lost, an
        overlap is admitted when the earlier command's run ended 76 with key-lost: the limit the
        man page states for a failover or a restart that loses the key (the holder learns it at
        its next renewal and stops its command; until then both run). Admitted overlaps are
        printed and counted, not failed; the later command's larger fence is then the defence.
        With --at-once N (--permits N, or 0 for shared holders: no bound), up to N commands may
        run at once instead of one: more is a problem, the flock's "busy" proves nothing, and
        fences must differ but need not grow in start order (holders that overlap may log their
        starts in either order), and two commands that run at once never hold the same permit
        (when N > 1). With --exclusive PREFIX, a command whose tag starts with PREFIX
        (an exclusive run among shared ones) must overlap no other.
"""
import fcntl
import os
import sys
import time


def append(path, line):
    fd = os.open(path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)
    os.write(fd, (line + "\n").encode())
    os.close(fd)


def flock_held(path, pid):
    """True while the flock(2) that process `pid` took on `path` is held (by any process that
    inherited it): /proc/locks names the process that took a flock."""
    try:
        inode = os.stat(path).st_ino
    except FileNotFoundError:
        return False
    with open("/proc/locks") as f:
        for line in f:
            fields = line.split()
            # "1: FLOCK  ADVISORY  WRITE 4242 00:2a:1234 0 EOF"
            if (fields[1] == "FLOCK" and fields[4] == str(pid) and
                    fields[5].rsplit(":", 1)[-1] == str(inode)):
                return True
    return False


def hold(log, tag, pgid_file, seconds):
    fence = os.environ.get("REDLOCK_FENCE", "")
    holder = os.getpid()
    r, w = os.pipe()
    ready_r, ready_w = os.pipe()
    if os.fork() == 0:
        # The observer logs both the start and the end, and the command reports its start only
        # once the observer has left the command's group. A kill of the group (a lease's end, a
        # lost key) at any moment then leaves no start, or a start with its end: when the
        # command logged its own start, a kill before the observer's setsid left a start that
        # never ended (ciAA, cluster_failover.bats 2 under TSan).
        os.setsid()
        os.close(w)
        os.close(ready_r)
        for fd in (0, 1):
            os.dup2(os.open(os.devnull, os.O_RDWR), fd)
        try:
            os.write(ready_w, b".")
        except BrokenPipeError:
            os._exit(0)  # the command died before it read this: it never started
        os.close(ready_w)
        line = b""
        while not line.endswith(b"\n"):
            chunk = os.read(r, 4096)
            if not chunk:
                os._exit(0)  # the command died before it started: nothing to log
            line += chunk
        append(log, line.decode().rstrip("\n"))
        while os.read(r, 1):
            pass
        # The last process can close the pipe a moment before the kernel drops its flock (files
        # are released in no set order at exit): wait for that too, or a next command could
        # start after this "end" and still find the flock held.
        while flock_held(log + ".flock", holder):
            time.sleep(0.001)
        append(log, "end %s %.6f" % (tag, time.monotonic()))
        os._exit(0)
    os.close(r)
    os.close(ready_w)
    if not os.read(ready_r, 1):
        sys.exit("lease_probe.py: the observer died before it was ready")
    os.close(ready_r)
    with open(pgid_file, "w") as f:
        f.write("%d\n" % os.getpgrp())
    # A lock of the command's own on LOG.alive/TAG, held for as long as any of its processes
    # lives (taken under a temporary name, then renamed: never seen unlocked). Before its
    # start's time a command tries each earlier command's: one it can lock had no process left,
    # and "dead TAG BY" says so. check_many() ends a killed command (no "done") there at the
    # latest: its observer's "end" can come later, once the observer is scheduled, and with
    # shared holders the one flock below proves nothing (a reader that found it busy never held
    # it). The watchdog's hand-over frees a lock as soon as the command's group is dead, so a next
    # holder can start before that "end" (ci10: an exclusive run "beside" a killed reader).
    alive = log + ".alive"
    os.makedirs(alive, exist_ok=True)
    for other in sorted(os.listdir(alive)):
        if other.startswith("."):
            continue
        try:
            fd = os.open(os.path.join(alive, other), os.O_RDWR)
        except FileNotFoundError:
            continue
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            append(log, "dead %s %s" % (other, tag))
            try:
                os.unlink(os.path.join(alive, other))
            except FileNotFoundError:
                pass
        except BlockingIOError:
            pass
        finally:
            os.close(fd)
    own = os.open(os.path.join(alive, "." + tag), os.O_RDWR | os.O_CREAT, 0o644)
    fcntl.flock(own, fcntl.LOCK_EX)
    os.rename(os.path.join(alive, "." + tag), os.path.join(alive, tag))
    os.set_inheritable(own, True)
    # The flock before the start's time: a start without "busy" is then proof that no process
    # of an earlier command was alive at that time (check() relies on it for killed commands).
    lock = os.open(log + ".flock", os.O_RDWR | os.O_CREAT, 0o644)
    busy = False
    try:
        fcntl.flock(lock, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        busy = True
    # One write of a line shorter than PIPE_BUF: the observer gets it whole, or not at all.
    permit = os.environ.get("REDLOCK_PERMIT", "") if fence else ""
    line = "start %s %.6f %s %s" % (tag, time.monotonic(), fence, permit)
    os.write(w, (line.rstrip() + "\n").encode())
    if busy:
        append(log, "busy %s" % tag)
    os.set_inheritable(w, True)
    os.set_inheritable(lock, True)
    work = os.fork()
    if work == 0:
        if seconds.startswith("until:"):
            os.execv("/bin/sh", ["sh", "-c", 'while [ ! -e "$0" ]; do sleep 0.02; done',
                                 seconds[len("until:"):]])
        os.execv("/bin/sh", ["sh", "-c", "sleep %s; true" % seconds])
    os.waitpid(work, 0)
    # The work is over and this is the last process of the command; with its flock dropped,
    # "done" is its true end (a later command that finds the flock held started before it),
    # which the observer's "end" can only follow, late by however long it takes to be scheduled.
    os.close(lock)
    os.unlink(os.path.join(alive, tag))  # ended with "done": nothing for a later start to prove
    os.close(own)
    os.close(w)
    append(log, "done %s %.6f" % (tag, time.monotonic()))


def check(log, admit_key_lost=False, at_once=1, exclusive=None):
    if at_once != 1:
        return check_many(log, at_once, exclusive)
    starts, ends, observed, fences, busy, problems = {}, {}, set(), {}, [], []
    key_lost, statuses, done = set(), {}, set()
    with open(log) as f:
        for line in f:
            parts = line.split()
            if parts[0] == "start":
                starts[parts[1]] = float(parts[2])
                if len(parts) > 3:
                    fences[parts[1]] = int(parts[3])
            elif parts[0] == "end":
                ends.setdefault(parts[1], float(parts[2]))
                observed.add(parts[1])
            elif parts[0] == "done":
                ends[parts[1]] = float(parts[2])
                done.add(parts[1])
            elif parts[0] == "busy":
                busy.append(parts[1])
            elif parts[0] == "exit":
                statuses[parts[2]] = statuses.get(parts[2], 0) + 1
                if parts[2] == "76" and parts[3:] == ["key-lost"]:
                    key_lost.add(parts[1])
    for tag in starts:
        if tag not in observed:
            problems.append("%s never ended" % tag)
    spans = sorted((starts[t], ends[t], t) for t in starts if t in ends)
    admitted, admitted_later = [], set()
    for i, (s1, e1, t1) in enumerate(spans):
        for s2, e2, t2 in spans[i + 1:]:
            if s2 < e1:
                text = "%s [%.3f, %.3f] overlaps %s [%.3f, %.3f]" % (t1, s1, e1, t2, s2, e2)
                # A killed command (no "done") ends at its observer's "end", late by however
                # long the observer waited to be scheduled: a lock released as soon as the
                # command's group is dead (the watchdog's hand-over) lets the next start first.
                # Its true end is known from the next command's flock, taken before its start's
                # time: not "busy", so nothing of the killed command was alive by then.
                if t1 not in done and t2 not in busy:
                    continue
                if admit_key_lost and t1 in key_lost:
                    admitted.append("%s for %.3fs (admitted: %s lost its key)" %
                                    (text, min(e1, e2) - s2, t1))
                    admitted_later.add(t2)
                else:
                    problems.append(text)
    # The flock: proof of an overlap even should the clocks' order lie; an admitted overlap
    # explains it.
    for tag in busy:
        if tag not in admitted_later:
            problems.append("%s started while an earlier command still held the flock" % tag)
    # Fences in the order the commands started: every one unique and larger than the last.
    by_start = sorted((starts[t], t) for t in fences)
    seen = {}
    for _, tag in by_start:
        if fences[tag] in seen:
            problems.append("fence %d handed out twice: %s and %s" %
                            (fences[tag], seen[fences[tag]], tag))
        seen[fences[tag]] = tag
    for (_, t1), (_, t2) in zip(by_start, by_start[1:]):
        if fences[t2] <= fences[t1]:
            problems.append("%s started after %s with fence %d, not above %d" %
                            (t2, t1, fences[t2], fences[t1]))
    for a in admitted:
        print(a)
    for p in problems:
        print(p)
    print("%d commands, %d fences, exits %s, %d admitted overlaps, %d problems" %
          (len(starts), len(fences),
           " ".join("%s:%d" % kv for kv in sorted(statuses.items())) or "-",
           len(admitted), len(problems)))
    return 1 if problems else 0


def check_many(log, at_once, exclusive):
    """check() for permits (at_once N > 1) and shared holders (0: no bound)."""
    starts, ends, observed, fences, problems, statuses = {}, {}, set(), {}, [], {}
    done, dead, permits = set(), [], {}
    with open(log) as f:
        for line in f:
            parts = line.split()
            if parts[0] == "start":
                starts[parts[1]] = float(parts[2])
                if len(parts) > 3:
                    fences[parts[1]] = int(parts[3])
                if len(parts) > 4:
                    permits[parts[1]] = parts[4]
            elif parts[0] == "end":
                ends.setdefault(parts[1], float(parts[2]))
                observed.add(parts[1])
            elif parts[0] == "done":
                ends[parts[1]] = float(parts[2])
                done.add(parts[1])
            elif parts[0] == "dead":
                dead.append((parts[1], parts[2]))
            elif parts[0] == "exit":
                statuses[parts[2]] = statuses.get(parts[2], 0) + 1
    for tag in starts:
        if tag not in observed:
            problems.append("%s never ended" % tag)
    # A killed command had no process left when a later one found its own lock free ("dead"),
    # which that one did before its start's time: it ended by then at the latest.
    for tag, later in dead:
        if tag in ends and tag not in done and later in starts:
            ends[tag] = min(ends[tag], starts[later])
    spans = sorted((starts[t], ends[t], t) for t in starts if t in ends)
    # A sweep over starts and ends (an end before a start at the same instant).
    events = sorted([(s, 1, t) for s, _, t in spans] + [(e, 0, t) for _, e, t in spans])
    running, peak = set(), 0
    for _, kind, tag in events:
        if kind == 0:
            running.discard(tag)
            continue
        running.add(tag)
        peak = max(peak, len(running))
        if at_once > 1 and tag in permits:
            same = [t for t in running if t != tag and permits.get(t) == permits[tag]]
            if same:
                problems.append("permit %s held twice: %s" %
                                (permits[tag], " ".join(sorted(same + [tag]))))
        if at_once > 0 and len(running) > at_once:
            problems.append("%d commands at once: %s" % (len(running), " ".join(sorted(running))))
        if exclusive and len(running) > 1 and any(t.startswith(exclusive) for t in running):
            problems.append("an exclusive command beside others: %s" % " ".join(sorted(running)))
    seen = {}
    for tag in sorted(fences, key=lambda t: starts[t]):
        if fences[tag] in seen:
            problems.append("fence %d handed out twice: %s and %s" %
                            (fences[tag], seen[fences[tag]], tag))
        seen[fences[tag]] = tag
    for p in problems:
        print(p)
    print("%d commands, %d fences, exits %s, peak %d at once, %d problems" %
          (len(starts), len(fences),
           " ".join("%s:%d" % kv for kv in sorted(statuses.items())) or "-", peak,
           len(problems)))
    return 1 if problems else 0


if __name__ == "__main__":
    if sys.argv[1] == "hold":
        hold(*sys.argv[2:6])
    elif sys.argv[1] == "check" and len(sys.argv) > 2:
        opts, at_once, exclusive, admit = sys.argv[3:], 1, None, False
        while opts:
            if opts[0] == "--admit-key-lost":
                admit, opts = True, opts[1:]
            elif opts[0] == "--at-once" and len(opts) > 1 and opts[1].isdigit():
                at_once, opts = int(opts[1]), opts[2:]
            elif opts[0] == "--exclusive" and len(opts) > 1:
                exclusive, opts = opts[1], opts[2:]
            else:
                sys.exit("lease_probe.py: unknown check option " + opts[0])
        sys.exit(check(sys.argv[2], admit, at_once, exclusive))
    else:
        sys.exit("usage: lease_probe.py hold LOG TAG PGID_FILE SECONDS"
                 " | check LOG [--admit-key-lost] [--at-once N [--exclusive PREFIX]]")
