"""One tuning procedure for every configuration (issue 24, item 3).

`tune()` is a coordinate search over a grid given as data: for each
dimension in turn it walks up from the current best value, and down if
going up found nothing better, and stops walking a direction only when
two steps past the best scored worse (a tie is not worse: a plateau is
walked across).  A dimension of names (UNORDERED: the I/O scheduler,
Apache's MPM, lighttpd's backend) has no order for that rule to read,
so every one of its values is tried.  Passes repeat while one improves,
until the budget (distinct candidates evaluated) is spent.  Vanilla,
kernel tuning and libception get the same procedure and the same budget;
each kind's own knobs come first (with the server's first, a budget of
12 never reached read_ahead_kb), and kernel tuning and libception start
from vanilla's winning server settings.

Pure: the caller's `evaluate(point)` measures (bench/tune.py runs a
max-rate search per candidate); `configure()` turns a point into the
rig's configuration dictionary.
"""
import json

from .. import blockdisk

# Each server's knobs: (dimension, values in walking order).  Values are
# plain data; configure() maps them onto servers.py's tunables.
SERVER_GRID = {
    "nginx": [
        ("workers", [2, 4, 8, 16, 32, 64]),
        # 0: aio off; N: aio threads with a pool of N threads
        ("aio_threads", [0, 4, 16, 64, 256]),
        # bytes per sendfile() call; 0 (unlimited) is the top of the ladder
        ("sendfile_max_chunk", [131072, 524288, 2097152, 8388608, 0]),
    ],
    "apache": [
        # EnableSendfile: Debian ships Off (Apache's default since 2.3.9),
        # so Apache maps each file and writes from the mapping, reads the
        # preload library never sees; first, so that every kind reaches it
        ("sendfile", [False, True]),
        ("mpm", ["event", "worker"]),
        ("max_request_workers", [256, 512, 1024, 2048, 4096]),
        ("threads_per_child", [32, 64, 128]),
        ("mmap", [True, False]),
    ],
    "lighttpd": [
        # 0: one process (lighttpd's default); N: N forked workers
        ("max_worker", [0, 1, 2, 4, 8, 16, 32]),
        ("network_backend", ["sendfile", "writev", "write"]),
    ],
    # Go schedules its own threads; 0 is Go's default (one per CPU)
    "caddy": [("gomaxprocs", [0, 1, 4, 8, 16])],
}
# The shipped settings, where vanilla's search starts (nginx's
# worker_processes auto is 2 on this 2-core machine).  Apache's I/O path
# is Debian's (EnableSendfile Off, EnableMMAP On); its MPM is sized for
# the benchmark (Debian's 150 workers cap a video server's connections).
SERVER_START = {
    "nginx": {"workers": 2, "aio_threads": 0, "sendfile_max_chunk": 0},
    "apache": {"sendfile": False, "mpm": "event", "max_request_workers": 1024,
               "threads_per_child": 64, "mmap": True},
    "lighttpd": {"max_worker": 0, "network_backend": "sendfile"},
    "caddy": {"gomaxprocs": 0},
}

KIB_LADDER = [128, 256, 512, 1024, 2048, 4096, 8192]
# Kernel tuning by disk: the FUSE disk takes read_ahead_kb only (its
# request size is fixed at 1 MiB); the block disk also takes the I/O
# scheduler and max_sectors_kb (a loop device takes at most 1280).
KERNEL_GRID = {
    "fuse": [("read_ahead_kb", KIB_LADDER)],
    "block": [("read_ahead_kb", KIB_LADDER),
              ("scheduler", ["mq-deadline", "none", "bfq", "kyber"]),
              ("max_sectors_kb", [128, 256, 512, 1024, 1280])],
}
# A SATA disk's defaults on Debian: where the block disk starts.
KERNEL_START = blockdisk.SATA_QUEUE

LIBCEPTION_GRID = [
    ("window", ["512K", "1M", "2M", "4M", "8M"]),
    # reads the daemon runs at once on the device (policy fixed,parallel=N)
    ("parallel", [1, 2, 4, 8]),
]
LIBCEPTION_START = {"window": "2M", "parallel": 1}

# Dimensions whose values are names, not steps on a ladder: no value's
# neighbours say anything about the next, so tune() tries them all.
UNORDERED = frozenset({"scheduler", "mpm", "network_backend"})

KINDS = ("vanilla", "kernel", "libception")
# Not tuned by default (`--set kinds=...` adds it): receptiond --watch on
# the block disk, no library in the server; the daemon's knobs as
# libception's.
WATCH = "watch"
BUDGET = 12


def grid(server, kind, disk=blockdisk.UNSAID):
    """The dimensions `kind` tunes on `server`, its own knobs first."""
    own = {"vanilla": [], "kernel": KERNEL_GRID[disk], "libception": LIBCEPTION_GRID,
           WATCH: LIBCEPTION_GRID}[kind]
    return list(own) + list(SERVER_GRID[server])


def start_point(server, kind, vanilla_best=None, disk=blockdisk.UNSAID):
    """Where `kind` starts: the shipped server settings for vanilla;
    vanilla's winning server settings, with the kind's own defaults, for
    the others."""
    server_part = dict(vanilla_best or SERVER_START[server]) if kind != "vanilla" \
        else dict(SERVER_START[server])
    own = {"vanilla": {}, "kernel": {k: KERNEL_START[k] for k, _ in KERNEL_GRID[disk]},
           "libception": dict(LIBCEPTION_START), WATCH: dict(LIBCEPTION_START)}[kind]
    server_part = {k: v for k, v in server_part.items() if k in dict(SERVER_GRID[server])}
    return {**own, **server_part}


def configure(base, server, kind, point):
    """The rig's configuration dictionary for one candidate."""
    t = {k: v for k, v in point.items() if k in dict(SERVER_GRID[server])}
    if server == "nginx" and "aio_threads" in t:
        n = t.pop("aio_threads")
        t.update({"aio": "threads", "thread_pool": n} if n else {"aio": "off"})
    cfg = {**base, "server": server, "mode": "vanilla", "tunables": t}
    # the disk's knobs, receptiond's queue order (docs/receptiond.md
    # QUEUE ORDER), watch mode's deadline and due times, the library's look-ahead:
    # not in any grid, set by a comparison's configuration
    for key in ("read_ahead_kb", "scheduler", "max_sectors_kb", "order", "deadline_ms",
                "inflight", "watch_deadline_ms", "watch_due", "lookahead"):
        if key in point:
            cfg[key] = point[key]
    if kind in ("libception", WATCH):
        window, parallel = point["window"], int(point["parallel"])
        cfg.update({"mode": kind, "prefetch": window})
        if parallel > 1:
            cfg["policy"] = f"fixed:{window},parallel={parallel}"
        # a sizing policy instead of the fixed window (docs/prefetch-sizing.md),
        # set by a comparison's configuration; the window stays --prefetch
        if point.get("policy"):
            cfg["policy"] = point["policy"]
    return cfg


class _Spent(Exception):
    pass


def _key(point):
    return json.dumps(point, sort_keys=True)


def tune(evaluate, dims, start, budget=BUDGET, unordered=UNORDERED):
    """Coordinate search.  dims: [(name, [values])]; start: {name: value}
    (every value on its ladder); evaluate(point) -> score (higher is
    better; None: could not run, worst).  Returns {"best", "score",
    "tried": [{"point", "score"}] in the order evaluated, "spent" (budget
    used up before the search converged)}."""
    for name, values in dims:
        if start.get(name) not in values:
            raise ValueError(f"tune: start {name}={start.get(name)!r} is not on its ladder "
                             f"{values}")
    scores, tried = {}, []

    def score(point):
        k = _key(point)
        if k not in scores:
            if len(scores) >= budget:
                raise _Spent()
            s = evaluate(dict(point))
            scores[k] = float("-inf") if s is None else s
            tried.append({"point": dict(point), "score": s})
        return scores[k]

    best = dict(start)
    spent = False
    try:
        best_s = score(best)
        improved = True
        while improved:
            improved = False
            for name, values in dims:
                moved = False
                for step in (1, -1):
                    if step == -1 and moved:
                        break   # up found better: the way down is not walked
                    j, worse = values.index(best[name]), 0
                    give_up = len(values) if name in unordered else 2
                    while worse < give_up and 0 <= j + step < len(values):
                        j += step
                        cand = {**best, name: values[j]}
                        s = score(cand)
                        if s > best_s:
                            best, best_s, worse, moved = cand, s, 0, True
                        elif s < best_s:
                            worse += 1
                improved = improved or moved
    except _Spent:
        spent = True
    best_s = scores[_key(best)] if tried else None
    return {"best": best, "score": None if best_s == float("-inf") else best_s,
            "tried": tried, "spent": spent}
