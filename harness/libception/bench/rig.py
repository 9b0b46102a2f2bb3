"""The test rig every scenario uses: one configuration (server, its
tunables, libception mode, prefetch size, kernel tuning, drive, library,
memory limit) set up as the paper's server, measured, and torn down.

Order of setup (teardown is the reverse, through cleanup.Cleanup):
  hddsim mount -> memory cgroup -> receptiond inside the cgroup (only
  under libception) -> web server inside the cgroup -> load.
Prefetched pages are charged to the cgroup of the process that reads
them; receptiond reads them, so it must sit in the server's group: the
libception runs get exactly the vanilla runs' memory.
"""
import json
import os
import shutil
import time

from .. import blockdisk, cgroup, daemon, hddsim, pagecache, servers
from . import probe, search

# Modes of the library as the paper's ablation names them.
MODES = {
    "vanilla": None,
    "libception": "prefetch+serialize",
    "serialize": "serialize",
    "prefetch": "prefetch",
    "track": "track",          # only count and time calls (for latency CDFs)
    # no library in the server: receptiond --watch on the block disk's file
    # system (fanotify pre-content events, docs/libception-watch.md)
    "watch": None,
}
DAEMON_MODES = {"libception", "serialize", "track", "watch"}
# A configuration's keys for receptiond's queue order, and their options.
QUEUE_ORDER_FLAGS = {"order": "--order", "deadline_ms": "--deadline", "inflight": "--inflight"}


def library_videos(path):
    """(name, bytes, chunk) of every video of a library file
    (docs/library-format.md), in its order."""
    out = []
    with open(path, encoding="ascii") as f:
        for line in f:
            parts = line.split()
            if parts and parts[0] == "video":
                out.append((parts[1], int(parts[2]), int(parts[4])))
    return out


def library_bytes(path):
    return sum(size for _, size, _ in library_videos(path))


class Rig:
    """One scenario's shared state: output directory, cleanup stack,
    progress, results, the port and names to use."""

    def __init__(self, name, out, cleanup, progress, results, port=18700, log=print):
        self.name = name
        self.out = out
        self.cleanup = cleanup
        self.progress = progress
        self.results = results
        self.port = port
        self.log = log
        self.work = os.path.join(out, "work")
        os.makedirs(self.work, exist_ok=True)
        self.lib_so = os.path.join(daemon.prefix(), "lib", "libception.so")
        self.only = []
        self.disk = {}   # the scenario's disk settings (blockdisk.DISK_SETTINGS)
        self.journal = None   # journal.Journal: every probe persisted as it ends
        self._replaying = False   # in replays(): the journal alone answers
        self.stop_at = None   # --stop-after: no probe starts that would end past it
        self._longest = 0.0   # the longest probe measured in this run, seconds

    def with_disk(self, cfg):
        """`cfg` with the scenario's disk and block-queue knobs, which the
        configuration's own keys (a kernel row's read_ahead_kb) override.
        A configuration that serves a real directory (docroot) has no
        emulated disk, and records none."""
        if "docroot" in cfg:
            return cfg
        return {**blockdisk.disk_config(self.disk), **cfg}

    def socket_path(self, tag):
        """A socket path short enough for sun_path (108 bytes) wherever the
        output directory is; its directory lives as long as the run."""
        d = f"/tmp/libception-bench-{os.getpid()}"
        if not os.path.isdir(d):
            os.makedirs(d)
            os.chmod(d, 0o755)
            self.cleanup.push(f"remove {d}", lambda: shutil.rmtree(d, ignore_errors=True))
        return os.path.join(d, f"{tag}.sock")

    def wants(self, label):
        """Whether --only lets configuration `label` run."""
        return not self.only or any(o in label for o in self.only)

    # --- one configuration ---------------------------------------------------
    def setup(self, cfg, tag):
        """Bring up mount, cgroup, daemon and server for `cfg` (a dict, see
        Config in docs/benchmark.md); returns a handle with .url, .mount,
        .group, .socket and .server, torn down by teardown(handle)."""
        h = _Handle(cfg, tag)
        c = self.cleanup
        base = os.path.join(self.work, tag)
        os.makedirs(base, exist_ok=True)
        # One mount per configuration: a fresh mount starts with a cold page
        # cache.  cfg["mounts"] (two disks): several mounts under one docroot.
        docroot = cfg.get("docroot")
        if docroot is None:
            specs = cfg.get("mounts") or [{"name": None, "library": cfg["library"]}]
            root = os.path.join(base, "root")
            for spec in specs:
                where = os.path.join(root, spec["name"]) if spec["name"] else \
                    os.path.join(base, "mnt")
                opts = dict(spec.get("hddsim", cfg.get("hddsim")) or {})
                if opts.get("trace") is True:  # one trace per configuration and mount
                    opts["trace"] = os.path.join(base, f"disk-trace-{spec['name'] or 'mnt'}.txt")
                m = blockdisk.mount(where, spec.get("drive", cfg.get("drive", "wd-red")),
                                    spec["library"], cfg, **opts)
                h.handles.append(c.push(f"unmount {m.path}", m.unmount))
                h.mounts.append(m)
                ra = spec.get("read_ahead_kb", cfg.get("read_ahead_kb"))
                if ra is not None:
                    m.read_ahead_kb = ra
                if getattr(m, "queue", None):   # what the block device accepted
                    h.disk_queue.append(dict(m.queue))
            docroot = root if cfg.get("mounts") else h.mounts[0].path
        h.docroot = docroot
        h.group = cgroup.MemoryGroup(f"bench-{os.getpid()}-{tag}", cfg.get("memory_limit"))
        h.group.create()
        h.handles.append(c.push(f"remove cgroup {h.group.path}", h.group.destroy))
        env = None
        mode = cfg.get("mode", "vanilla")
        if MODES.get(mode, "?") == "?":
            raise ValueError(f"unknown mode {mode!r}")
        if mode != "vanilla":
            h.socket = self.socket_path(tag)
        if MODES[mode]:
            env = servers.libception_env(self.lib_so, h.socket, MODES[mode],
                                         cfg.get("prefetch"), cfg.get("lookahead", False))
        if mode in DAEMON_MODES:
            args = []
            if mode == "watch":
                if not h.mounts or not all(getattr(m, "dev", None) for m in h.mounts):
                    raise ValueError("mode watch needs the block disk (--set disk=block): "
                                     "pre-content events come from ext4 or xfs, not FUSE")
                for m in h.mounts:
                    args += ["--watch", m.path]
                if cfg.get("watch_deadline_ms") is not None:
                    args += ["--watch-deadline", str(cfg["watch_deadline_ms"])]
                if cfg.get("watch_due") is not None:
                    args += ["--watch-due", "yes" if cfg["watch_due"] else "no"]
            if cfg.get("prefetch") is not None:
                args += ["--prefetch", str(cfg["prefetch"])]
            if cfg.get("policy"):   # a sizing policy (docs/prefetch-sizing.md)
                args += ["--policy", str(cfg["policy"])]
            for key, flag in QUEUE_ORDER_FLAGS.items():   # docs/receptiond.md QUEUE ORDER
                if cfg.get(key) is not None:
                    args += [flag, str(cfg[key])]
            h.daemon = daemon.start(h.socket, detached=False, in_cgroup=h.group.add,
                                    log=os.path.join(base, "receptiond.log"), args=args)
            h.handles.append(c.push("stop receptiond", lambda: _stop_daemon(h.daemon)))
            # The fairness claim: prefetched pages are charged to this group.
            if h.daemon.pid not in h.group.pids():
                raise RuntimeError(f"receptiond (pid {h.daemon.pid}) is not in {h.group.path}")
        h.server = servers.make_server(cfg.get("server", "nginx"), os.path.join(base, "server"),
                                       docroot, self.port, cfg.get("tunables"))
        h.handles.append(c.push(f"stop {h.server.name}", h.server.stop))
        h.server.start(cgroup=h.group, env=env)
        h.url = h.server.url()
        return h

    def teardown(self, h):
        for handle in reversed(h.handles):
            self.cleanup.run_now(handle)
        h.handles.clear()

    # --- measurements --------------------------------------------------------
    def snapshot(self, h):
        """Counters before/after a probe: disk and daemon."""
        snap = {}
        if h.mounts:
            disks = [m.stats() for m in h.mounts]
            snap["disks"] = disks
            snap["disk"] = {k: sum(d.get(k, 0) for d in disks)
                            for k in ("bytes", "busy_s", "reads", "reads_4k",
                                      "reads_under_128k", "continued", "cache_hits")}
        if h.daemon is not None:
            # A busy daemon may miss one request's timeout; a lost snapshot
            # loses the probe's per-call figures, so ask again before giving up.
            for attempt in range(3):
                try:
                    snap["daemon"] = daemon.stats(h.socket)
                    snap.pop("daemon_error", None)
                    break
                except (OSError, daemon.DaemonError) as e:
                    snap["daemon_error"] = str(e)
                    time.sleep(1)
        return snap

    def max_rate(self, cfg, tag, settings, point):
        """The maximum failure-free session rate of one configuration,
        recorded under `point` (skipped if already in the results)."""
        done = self.results.get(point)
        if done is not None:
            self.progress.skip(f"{tag}: {done.get('answer')} sessions/s")
            return done
        cfg = self.with_disk(cfg)
        if self._replaying:   # nothing to set up: every probe is in the journal
            return search.max_failure_free(
                self, None, cfg, {k: v for k, v in settings.items() if k != "warmup"},
                tag, point)
        self.log(f"{tag}: setting up ({describe(cfg)})")
        h = self.setup(cfg, tag)
        try:
            outcome = search.max_failure_free(self, h, cfg, settings, tag, point)
        finally:
            self.teardown(h)
        record = {"config": _jsonable(cfg), **h.disk_record(), **outcome}
        self.results.add(point, **record)
        return self.results.get(point)


    def probe_at(self, cfg, tag, point, settings, rate, what=None):
        """One vidload probe of one configuration at a fixed `rate`,
        recorded under `point` (skipped if already in the results); the
        record holds the configuration, the rate and the probe."""
        done = self.results.get(point)
        if done is not None:
            self.progress.skip(f"{tag} at {rate:g}/s")
            return done
        cfg = self.with_disk(cfg)
        h = self.setup(cfg, tag)
        try:
            rec = self.measure(h, cfg, settings, rate, settings["seed"], point,
                               f"{what or tag}: {rate:g} sessions/s")
        finally:
            self.teardown(h)
        self.results.add(point, config=_jsonable(cfg), rate=rate, probe=rec, **h.disk_record())
        return self.results.get(point)


    def measure(self, h, cfg, settings, rate, seed, point, what):
        """One probe (probe.probe), persisted in the journal as it ends;
        one the journal already holds is not run again (--resume).  A
        probe that overlapped other processes' load beyond
        `other_cpu_max` cores is run once more at once; the second is
        kept and marked `rerun`, the first stays in the journal."""
        done = self.journal.find(point, rate, seed) if self.journal and point else None
        if done is None and self._replaying:
            raise ReplayMiss(what)
        if done is not None:
            self.progress.skip(f"{what}: probe")
            return done
        self.check_time_left(settings, what)
        started = time.monotonic()
        self.progress.begin(what)
        rec = probe.probe(self, h, cfg, settings, rate, seed)
        self.progress.end()
        self._longest = max(self._longest, time.monotonic() - started)
        attempt = 1
        if rec["other_cpu"]["disturbed"]:
            first = rec
            self._persist(point, h.tag, first, attempt, superseded=True)
            self.progress.line(f"{h.tag}: other processes used {first['other_cpu']['cores']:.2f} "
                               f"cores (more than {first['other_cpu']['threshold']:g}): "
                               "running the probe again")
            self.progress.begin(f"{what} (again: other load)")
            rec = probe.probe(self, h, cfg, settings, rate, seed)
            self.progress.end()
            attempt = 2
            rec["rerun"] = {"why": "other load",
                            "first": {k: first[k] for k in ("other_cpu", "failed_pct", "pass")}}
        self._persist(point, h.tag, rec, attempt)
        return rec

    def check_time_left(self, settings, what):
        """Raise TimeUp rather than start a probe that would end past
        `stop_at` (--stop-after): a probe cut short is lost, one not begun
        costs nothing, and --resume starts there.  A probe is expected to
        take as long as the longest this run has measured, else the
        scenario's estimate (one attempt: a re-run for other load can
        overrun)."""
        if self.stop_at is None:
            return
        need = self._longest or probe.probe_seconds(settings)
        if time.monotonic() + need > self.stop_at:
            raise TimeUp(f"next: {what} (about {need:.0f} s)")

    def replays(self, run):
        """Whether `run()` goes through on the journal alone, every probe
        it asks for already there (a resumed part finished or not).
        Nothing is set up, measured, printed or recorded."""
        progress, self.progress, self._replaying = self.progress, _Silent(), True
        try:
            run()
            return True
        except ReplayMiss:
            return False
        finally:
            self.progress, self._replaying = progress, False

    def _persist(self, point, tag, rec, attempt, superseded=False):
        if self.journal is not None and point is not None:
            self.journal.add(point, tag, rec, attempt, superseded)


class TimeUp(Exception):
    """The next probe would end past --stop-after (Rig.check_time_left)."""


class ReplayMiss(Exception):
    """A probe the journal does not hold, asked for in Rig.replays."""


class _Silent:
    """A Progress that prints nothing (Rig.replays)."""

    def __getattr__(self, name):
        return lambda *args, **kwargs: None


class _Handle:
    """What setup() brought up for one configuration."""

    @property
    def mount(self):
        return self.mounts[0] if self.mounts else None

    def drop_cache(self):
        """Evict the served files from the page cache (every probe starts
        cold, whatever ran before it).  The mounts' files are dropped
        first (POSIX_FADV_DONTNEED), then the group is emptied of whatever
        is left.  Emptying the group alone reclaims, and reclaim leaves
        shadow entries, so receptiond counted every window of the last
        probe as evicted, and as a "needed" eviction wherever a new
        session read into one: on the HD library from 8M the adaptive
        policy saw intervals with 70-135% of their prefetch "needed"
        (more than they prefetched) and cut 8M to 1M within the first
        probes.  Dropped pages leave no shadow, and receptiond counts them
        as dropped, as it would an operator's drop.  A real-directory
        docroot may also hold pages charged elsewhere (it was just
        written)."""
        for m in self.mounts:
            m.drop_cache()
        if self.group is not None:
            self.group.drop_cache()
        if not self.mounts and self.docroot:
            pagecache.evict_tree(self.docroot)

    def __init__(self, cfg, tag):
        self.cfg = cfg
        self.tag = tag
        self.mounts = []
        self.docroot = None
        self.group = None
        self.daemon = None
        self.socket = None
        self.server = None
        self.url = None
        self.handles = []
        self.disk_queue = []   # per block-disk mount: the queue knobs the kernel accepted

    def disk_record(self):
        return {"disk_queue": self.disk_queue} if self.disk_queue else {}


def _stop_daemon(proc):
    if proc.poll() is None:
        proc.terminate()
        try:
            proc.wait(10)
        except Exception:
            proc.kill()
            proc.wait()


def _jsonable(cfg):
    return json.loads(json.dumps(cfg, default=str))


def describe(cfg):
    parts = [cfg.get("server", "nginx"), cfg.get("mode", "vanilla")]
    if cfg.get("disk") == "block":
        parts.append(f"block disk ({cfg.get('fs', 'ext4')})")
    elif cfg.get("disk") == "fuse":
        parts.append("FUSE disk")
    for k in ("scheduler", "max_sectors_kb", "nr_requests"):
        if cfg.get(k) is not None:
            parts.append(f"{k} {cfg[k]}")
    if cfg.get("prefetch") is not None:
        parts.append(f"prefetch {cfg['prefetch']}")
    if cfg.get("policy"):
        parts.append(f"policy {cfg['policy']}")
    if cfg.get("lookahead"):
        parts.append("look-ahead")
    if cfg.get("watch_deadline_ms") is not None:
        parts.append(f"watch deadline {cfg['watch_deadline_ms']} ms")
    if cfg.get("watch_due") is not None:
        parts.append(f"watch due {'yes' if cfg['watch_due'] else 'no'}")
    for key in QUEUE_ORDER_FLAGS:
        if cfg.get(key) is not None:
            parts.append(f"{key} {cfg[key]}")
    if cfg.get("read_ahead_kb") is not None:
        parts.append(f"read_ahead_kb {cfg['read_ahead_kb']}")
    for k, v in (cfg.get("hddsim") or {}).items():
        parts.append(f"{k} {v}")
    for k, v in (cfg.get("tunables") or {}).items():
        parts.append(f"{k}={v}")
    if cfg.get("memory_limit"):
        parts.append(f"memory {cfg['memory_limit'] / 2**20:.0f} MiB")
    return ", ".join(parts)
