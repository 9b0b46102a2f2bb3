"""cgroup v1 memory groups for the benchmark: a server, and the receptiond
serving it, run inside one memory limit so that page cache (including the
pages receptiond prefetches, which are charged to the group of the process
that reads them) cannot hold the library.

Groups live under /sys/fs/cgroup/memory/libception/ (not inside the
caller's own group, so that their limit is the only one that applies).
"""
import os
import signal
import time

MEMORY_ROOT = "/sys/fs/cgroup/memory"
BASE = "libception"


# A charge that cannot wait (__GFP_HIGH or __GFP_NOFAIL, a task being killed)
# is let over the limit for a moment ("force charging" in mm/memcontrol.c),
# so memory.max_usage_in_bytes may pass the limit by a few pages even when
# the limit held. 64 pages is the kernel's charge batch (MEMCG_CHARGE_BATCH).
FORCED_CHARGE_SLACK = 64 * 4096


def held(max_usage, limit):
    """True if a group's high-water mark shows its limit held: at most the
    limit plus what the kernel may force-charge past it."""
    return max_usage <= limit + FORCED_CHARGE_SLACK


class CgroupError(Exception):
    """A cgroup could not be created, configured or removed."""


def _write(path, value):
    with open(path, "w") as f:
        f.write(str(value))


def _read(path):
    with open(path) as f:
        return f.read()


def ensure_mounted(root=MEMORY_ROOT):
    """Mount the v1 memory controller at `root` if it is not there yet."""
    if os.path.exists(os.path.join(root, "memory.limit_in_bytes")):
        return root
    os.makedirs(root, exist_ok=True)
    rc = os.system(f"mount -t cgroup -o memory cgroup {root} 2>/dev/null")
    if rc != 0 or not os.path.exists(os.path.join(root, "memory.limit_in_bytes")):
        raise CgroupError(f"cgroup v1 memory controller not available at {root}")
    return root


class MemoryGroup:
    """One memory cgroup.  Use create(), then spawn processes with
    `preexec_fn=group.preexec` (the child joins before it execs), or
    add(pid); destroy() kills members and removes the group."""

    def __init__(self, name, limit_bytes=None, root=MEMORY_ROOT):
        self.name = name
        self.limit_bytes = limit_bytes
        self.root = root
        self.path = os.path.join(root, BASE, name)

    # --- lifecycle ---------------------------------------------------------
    def create(self):
        ensure_mounted(self.root)
        if os.path.isdir(self.path):
            self.destroy()     # a leftover of an interrupted run
        os.makedirs(self.path)
        if self.limit_bytes is not None:
            self.set_limit(self.limit_bytes)
        return self

    def set_limit(self, limit_bytes):
        """Set the memory limit (and memory+swap, if the kernel has it, so
        that swap cannot extend it)."""
        self.limit_bytes = int(limit_bytes)
        memsw = os.path.join(self.path, "memory.memsw.limit_in_bytes")
        # memsw must stay >= memory: raise memory first when lowering, etc.
        # Writing memory then memsw works when lowering from unlimited.
        _write(os.path.join(self.path, "memory.limit_in_bytes"), self.limit_bytes)
        if os.path.exists(memsw):
            _write(memsw, self.limit_bytes)
        # Refuse swap so the limit acts on page cache, not on anonymous memory.
        try:
            _write(os.path.join(self.path, "memory.swappiness"), 0)
        except OSError:
            pass

    def add(self, pid):
        _write(self.procs_file(), pid)

    def procs_file(self):
        """The file a process writes its pid to, to join the group."""
        return os.path.join(self.path, "cgroup.procs")

    def preexec(self):
        """For subprocess.Popen(preexec_fn=...): runs in the child between
        fork and exec, so everything the program does is charged here."""
        _write(self.procs_file(), os.getpid())

    def pids(self):
        try:
            return [int(x) for x in _read(self.procs_file()).split()]
        except FileNotFoundError:
            return []

    def kill_all(self, timeout=10.0):
        """SIGKILL every member until the group is empty."""
        deadline = time.monotonic() + timeout
        while True:
            pids = self.pids()
            if not pids:
                return True
            for pid in pids:
                try:
                    os.kill(pid, signal.SIGKILL)
                except ProcessLookupError:
                    pass
            if time.monotonic() > deadline:
                return False
            time.sleep(0.05)

    def destroy(self):
        """Kill the members, drop the group's page cache charge and remove it."""
        if not os.path.isdir(self.path):
            return
        self.kill_all()
        deadline = time.monotonic() + 10
        while True:
            try:
                os.rmdir(self.path)
                return
            except FileNotFoundError:
                return
            except OSError as e:
                # EBUSY while exiting members are still being reaped.
                if time.monotonic() > deadline:
                    raise CgroupError(f"cgroup {self.path}: cannot remove: {e.strerror}")
                try:
                    _write(os.path.join(self.path, "memory.force_empty"), 0)
                except OSError:
                    pass
                time.sleep(0.05)

    def drop_cache(self):
        """Reclaim every page charged to the group (its page cache), members
        keep running: a cold start without touching other groups' cache."""
        _write(os.path.join(self.path, "memory.force_empty"), 0)

    # --- observation -------------------------------------------------------
    def usage(self):
        return int(_read(os.path.join(self.path, "memory.usage_in_bytes")))

    def max_usage(self):
        return int(_read(os.path.join(self.path, "memory.max_usage_in_bytes")))

    def failcnt(self):
        return int(_read(os.path.join(self.path, "memory.failcnt")))

    def oom_kills(self):
        """Processes the kernel killed for this group's limit (v1
        memory.oom_control's oom_kill; 0 where the kernel does not say)."""
        for line in _read(os.path.join(self.path, "memory.oom_control")).splitlines():
            key, _, value = line.partition(" ")
            if key == "oom_kill":
                return int(value)
        return 0

    def stat(self):
        """memory.stat as a dict of ints (cache, rss, mapped_file, ...)."""
        out = {}
        for line in _read(os.path.join(self.path, "memory.stat")).splitlines():
            key, _, value = line.partition(" ")
            out[key] = int(value)
        return out

    def file_lists(self):
        """The page cache's LRU lists and refaults, in bytes: prefetched
        pages wait on the inactive list, which reclaim empties first;
        pages read again after eviction come back active (workingset)."""
        st = self.stat()
        page = os.sysconf("SC_PAGE_SIZE")
        return {"active_file": st.get("total_active_file", st.get("active_file", 0)),
                "inactive_file": st.get("total_inactive_file", st.get("inactive_file", 0)),
                "refault_file": st.get("workingset_refault_file", 0) * page}

    def __enter__(self):
        return self.create()

    def __exit__(self, *exc):
        self.destroy()


def remove_stale(prefix, root=MEMORY_ROOT):
    """Remove leftover groups whose name starts with `prefix` (from runs
    that were killed too hard to clean up)."""
    base = os.path.join(root, BASE)
    if not os.path.isdir(base):
        return
    for name in os.listdir(base):
        if name.startswith(prefix) and os.path.isdir(os.path.join(base, name)):
            MemoryGroup(name, root=root).destroy()
