"""Other processes' CPU use during a probe (docs/benchmark.md, "Other
load"): the machine's busy time from /proc/stat minus the CPU time of the
run's own processes, sampled every `interval` seconds in a thread.

Which processes are ours is the caller's `ours()` (by default the bench
process and its descendants).  A process of ours that exits between two
samples loses its CPU time since the last sample to "other", at most one
interval of it; a process that starts counts from zero.
"""
import os
import threading
import time

TICK = os.sysconf("SC_CLK_TCK")


def machine_times():
    """(busy, stolen): seconds of CPU the whole machine spent busy since
    boot (all cores), and seconds the hypervisor gave its CPUs to others
    (steal: load this machine's processes cannot show)."""
    with open("/proc/stat") as f:
        fields = [int(x) for x in f.readline().split()[1:]]
    idle = fields[3] + (fields[4] if len(fields) > 4 else 0)   # idle + iowait
    steal = fields[7] if len(fields) > 7 else 0
    return (sum(fields[:8]) - idle - steal) / TICK, steal / TICK


def _stat(pid):
    """(ppid, utime + stime in seconds) of a process, None if it is gone."""
    try:
        with open(f"/proc/{pid}/stat") as f:
            stat = f.read()
    except OSError:
        return None
    rest = stat[stat.rindex(")") + 2:].split()
    return int(rest[1]), (int(rest[11]) + int(rest[12])) / TICK


def process_cpu():
    """{pid: (ppid, cpu seconds)} of every process."""
    out = {}
    for d in os.listdir("/proc"):
        if d.isdigit():
            st = _stat(d)
            if st is not None:
                out[int(d)] = st
    return out


def descendants(root, procs):
    """root and every process below it in `procs` ({pid: (ppid, cpu)})."""
    children = {}
    for pid, (ppid, _) in procs.items():
        children.setdefault(ppid, []).append(pid)
    out, todo = set(), [root]
    while todo:
        pid = todo.pop()
        if pid not in out:
            out.add(pid)
            todo += children.get(pid, [])
    return out


class CpuMeter:
    """with CpuMeter(ours) as m: ...; then m.result(): {"cpu_s",
    "seconds", "cores", "machine_cores"} for the processes not ours, and
    "steal_cores", the CPU the hypervisor took (recorded, not judged:
    the machine's quietness as seen from outside it)."""

    def __init__(self, ours=None, interval=2.0, clock=time.monotonic):
        self.clock = clock
        self.ours = ours or (lambda procs: descendants(os.getpid(), procs))
        self.interval = interval
        self.other_s = 0.0
        self.machine_s = 0.0
        self.steal_s = 0.0
        self._stop = threading.Event()
        self._thread = None

    def _sample(self):
        procs = process_cpu()
        mine = self.ours(procs)
        return machine_times(), {p: procs[p][1] for p in mine if p in procs}

    def _account(self, new):
        (busy, steal), mine = new
        (busy0, steal0), mine0 = self._last
        ours = sum(c - mine0.get(p, 0.0) for p, c in mine.items())
        self.machine_s += busy - busy0
        self.steal_s += steal - steal0
        self.other_s += max(0.0, (busy - busy0) - ours)
        self._last = new

    def _run(self):
        while not self._stop.wait(self.interval):
            self._account(self._sample())

    def __enter__(self):
        self._t0 = self.clock()
        self._last = self._sample()
        self._thread = threading.Thread(target=self._run, daemon=True)
        self._thread.start()
        return self

    def __exit__(self, *exc):
        self._stop.set()
        self._thread.join()
        self._account(self._sample())
        self._t1 = self.clock()

    def result(self):
        secs = max(1e-9, self._t1 - self._t0)
        return {"cpu_s": round(self.other_s, 3), "seconds": round(secs, 3),
                "cores": round(self.other_s / secs, 3),
                "machine_cores": round(self.machine_s / secs, 3),
                "steal_cores": round(self.steal_s / secs, 3)}

    def verdict(self, threshold):
        """result() judged by the benchmarks' one rule: `disturbed` when
        the other processes used more than `threshold` cores (None: the
        load is recorded and never judged disturbing)."""
        r = self.result()
        r.update(threshold=threshold, disturbed=threshold is not None and r["cores"] > threshold)
        return r
