"""Run a benchmark scenario (SCENARIO in `libception bench --help` lists them).

`libception bench SCENARIO [--out DIR] [--quick] [--resume [--across-commits]]` sets up the
emulated disk, memory cgroups, receptiond and the web servers, measures,
prints a table, and writes versioned JSON (SCENARIO.json), every probe as
it ends (probes.jsonl.gz) and PNG plots into DIR (default
results/SCENARIO-DATE).  Everything it sets up is torn
down on exit, on an error, on Ctrl-C and on SIGTERM.  See docs/benchmark.md.
"""
import datetime
import json
import os
import sys
import time

from . import blockdisk, cgroup, cleanup, progress, results, servers
from .bench import SCENARIOS, journal, load, past, probe

PROG = "libception bench"
EX_TEMPFAIL = 75   # sysexits.h: stopped by --stop-after, to be resumed


def add_arguments(p):
    p.add_argument("scenario", choices=SCENARIOS, metavar="SCENARIO",
                   help="one of: " + ", ".join(SCENARIOS))
    p.add_argument("--out", metavar="DIR",
                   help="output directory (default results/SCENARIO-YYYYMMDD-HHMM)")
    p.add_argument("--quick", action="store_true",
                   help="a small library and short probes: checks the pipeline, "
                        "numbers not meaningful")
    p.add_argument("--resume", action="store_true",
                   help="keep the points and probes already in DIR and measure the rest "
                        "(same commit only)")
    p.add_argument("--across-commits", action="store_true",
                   help="with --resume: continue at this commit a run started at another, "
                        "for changes that leave its probes as they were (the tuning "
                        "search, the report); each probe keeps the commit that measured "
                        "it and the results record the files changed in between")
    p.add_argument("--duration", type=float, metavar="S",
                   help="judged seconds per probe (default: the scenario's; 200 s full, "
                        "20 s quick)")
    p.add_argument("--warmup", type=float, metavar="S",
                   help="unjudged seconds of load before each probe's judged window "
                        "(default 100 s full, 10 s quick)")
    p.add_argument("--past", metavar="S|longest",
                   help="start each probe as if sessions had been arriving for S seconds, "
                        "their reads in the page cache (default: longest, the library's "
                        "longest video; 0 starts cold)")
    p.add_argument("--seeds", type=int, metavar="N",
                   help="seeds each rate is judged on (default 3 full, 1 quick)")
    p.add_argument("--judged-sessions", type=int, metavar="N",
                   help="judge the N sessions that start after the warm-up instead of "
                        "--duration seconds (the paper's experiment: 14400)")
    p.add_argument("--videos", type=int, metavar="N",
                   help="library size in videos (default: the paper's 20,000; 60 with --quick); "
                        "the memory limit follows at 1/32 of the library")
    p.add_argument("--only", metavar="LIST",
                   help="comma-separated names; run only the parts of the scenario whose "
                        "name contains one (e.g. --only nginx)")
    p.add_argument("--port", type=int, default=None,
                   help="web server port (default 18700, or the next free one)")
    p.add_argument("--stop-after", metavar="DURATION",
                   help="start no probe that would end later than DURATION from now "
                        "(seconds, or with m or h: 150m, 2.5h); then stop, exit status 75, "
                        "and --resume continues there")
    p.add_argument("--set", action="append", default=[], metavar="KEY=VALUE",
                   help="override one of the scenario's settings (a top-level key; VALUE "
                        "as JSON, else a string), e.g. --set mixed_size=1M; recorded in "
                        "the JSON")


def seeds_of(settings):
    """The seeds each rate is judged on: the scenario's own `seeds` (a
    comparison's), else its search's."""
    search = settings.get("search") or {}
    first = search.get("seed", 1)
    return list(range(first, first + (settings.get("seeds") or search.get("seeds", 1))))


def _default_out(scenario):
    stamp = datetime.datetime.now().strftime("%Y%m%d-%H%M")
    return os.path.join("results", f"{scenario}-{stamp}")


def _free_port(first=18700, count=100):
    """The first port from `first` nothing listens on, so that a second
    benchmark (or a demo) started beside a running one does not collide."""
    return next((p for p in range(first, first + count) if servers.port_free(p)), first)


def _remove_stale_groups():
    """Groups of earlier runs killed too hard to clean up (named
    bench-PID-...; the PID is gone)."""
    base = os.path.join(cgroup.MEMORY_ROOT, cgroup.BASE)
    for name in os.listdir(base) if os.path.isdir(base) else []:
        parts = name.split("-")
        if len(parts) > 2 and parts[0] == "bench" and parts[1].isdigit() \
                and not os.path.exists(f"/proc/{parts[1]}"):
            cgroup.MemoryGroup(name).destroy()


def parse_duration(text):
    """Seconds from "90", "150m" or "2.5h"; ValueError otherwise."""
    scale = {"s": 1, "m": 60, "h": 3600}.get(text[-1:], None)
    value = float(text[:-1] if scale else text)
    if not value >= 0 or value == float("inf"):
        raise ValueError(text)
    return value * (scale or 1)


def _hours(seconds):
    return f"{int(seconds // 3600)} h {int(seconds % 3600 // 60):02d} min"


def _same_commit(json_path, scenario, across=False):
    """--resume continues a run only at the commit that started it (a
    directory holding only a carried journal answers by its probes'),
    unless `across`: then it returns the crossing to record, {"from",
    "to", "changed": the files that differ}, or None on the same commit."""
    out = os.path.dirname(json_path)
    if os.path.exists(json_path):
        data = results.load(json_path)
        if data.get("scenario") != scenario:
            return None   # Results names that mismatch
        # the commit it was last resumed at, if it crossed, else its first
        was = (data.get("resumed_across") or [{}])[-1].get("to") or data.get("git_commit")
        where = f"{out} was measured at commit {was}"
    else:
        entries = journal.read(os.path.join(out, journal.NAME))
        was = entries[-1].get("git_commit") if entries else None
        if not was:
            return None
        where = f"{out}: its probes were measured at commit {was}"
    now = results.git_commit()
    if was == now:
        return None
    if not across:
        raise results.ResultsError(f"{where}, this is {now}: --resume continues a run only "
                                   "on the same commit (use a worktree at that commit, or "
                                   "--across-commits)")
    if not now or now.endswith("-dirty"):
        raise results.ResultsError(f"this tree is at {now}: commit first, so that the probes "
                                   "measured here name their commit")
    changed = results.git_changed(was.removesuffix("-dirty"), now)
    if changed is None:
        raise results.ResultsError(f"{where}, a commit this repository does not know: "
                                   "--across-commits needs both, to record what changed")
    return {"from": was, "to": now, "changed": changed}


def main(args):
    if os.geteuid() != 0:
        print(f"{PROG}: must run as root (mounts, cgroups, servers as www-data)", file=sys.stderr)
        return 1
    mod = load(args.scenario)
    settings = mod.settings(args.quick)
    settings["quick"] = bool(args.quick)
    if "library" in settings:   # a video scenario: its disk is a setting
        for key, value in blockdisk.DISK_SETTINGS.items():
            settings.setdefault(key, value)
    if args.videos is not None:
        if args.videos < 1 or "library" not in settings:
            print(f"{PROG}: --videos: expected a positive count, for a video scenario",
                  file=sys.stderr)
            return 2
        settings["library"]["count"] = args.videos
    if args.duration is not None:
        if args.duration <= 0:
            print(f"{PROG}: --duration must be positive", file=sys.stderr)
            return 2
        for key in ("search", "run"):
            if key in settings:
                settings[key]["duration"] = args.duration
    for opt, name, key, low in ((args.warmup, "warmup", "warmup_s", 0),
                                (args.seeds, "seeds", "seeds", 1),
                                (args.judged_sessions, "judged-sessions", "judged_sessions", 1)):
        if opt is None:
            continue
        if opt < low or "search" not in settings:
            print(f"{PROG}: --{name}: expected a number >= {low}, for a video scenario",
                  file=sys.stderr)
            return 2
        # a scenario's own setting (compare's seeds) over its search's
        (settings if key in settings else settings["search"])[key] = opt
    if args.past is not None:
        try:
            settings["search"]["past_s"] = past.parse(args.past)
        except (ValueError, KeyError):
            print(f"{PROG}: --past {args.past}: expected seconds >= 0 or \"longest\", "
                  "for a video scenario", file=sys.stderr)
            return 2
    for item in args.set:
        key, eq, value = item.partition("=")
        if not eq or key not in settings:
            print(f"{PROG}: --set {item}: expected KEY=VALUE with KEY one of: "
                  + ", ".join(sorted(settings)), file=sys.stderr)
            return 2
        try:
            settings[key] = json.loads(value)
        except ValueError:
            settings[key] = value
    try:
        blockdisk.check_settings(settings)
    except ValueError as e:
        print(f"{PROG}: --set {e}", file=sys.stderr)
        return 2
    stop_at = None   # --stop-after, on the monotonic clock
    if args.stop_after is not None:
        try:
            stop_at = time.monotonic() + parse_duration(args.stop_after)
        except ValueError:
            print(f"{PROG}: --stop-after {args.stop_after}: expected a duration: "
                  "seconds, or with m or h (150m, 2.5h)", file=sys.stderr)
            return 2
    settings["method"] = "quick" if args.quick else settings.get("method", "steady")
    out = os.path.abspath(args.out or _default_out(args.scenario))
    os.makedirs(out, exist_ok=True)
    json_path = os.path.join(out, f"{args.scenario}.json")
    search = settings.get("search") or {}
    seeds = seeds_of(settings)
    try:
        crossing = _same_commit(json_path, args.scenario, args.across_commits) \
            if args.resume else None
        res = results.Results(json_path, args.scenario, settings=settings, seeds=seeds,
                              resume=args.resume)
    except results.ResultsError as e:
        print(f"{PROG}: {e}", file=sys.stderr)
        return 1
    if crossing:
        res.data.setdefault("resumed_across", []).append(crossing)
        print(f"{PROG}: resuming a run of {crossing['from'][:12]} at {crossing['to'][:12]}; "
              f"changed in between: {', '.join(crossing['changed']) or 'nothing'}",
              file=sys.stderr)
    res.data.setdefault("command", ["libception", "bench"] + sys.argv[2:])
    res.data.setdefault("method", settings["method"])
    res.save()
    steps = mod.steps(settings)
    prog = progress.Progress(steps * len(seeds), prog=PROG)

    def log(msg):
        prog.line(msg)

    def log_plain(msg):
        print(msg, flush=True)

    from .bench.rig import Rig, TimeUp
    prog.line(f"{args.scenario}: results into {out}")
    if search:
        per = probe.probe_seconds(search)
        prog.line(f"{args.scenario}: estimated time at most {_hours(steps * len(seeds) * per)} "
                  f"({steps} rates x {len(seeds)} seeds x ~{per:.0f} s, method "
                  f"{settings['method']}; probes rerun for other load come on top)")
    dur = settings.get("search", {}).get("duration")
    if dur is not None and dur <= 10:
        # vidload's deadline is 10 s: a shorter probe cannot fail a session.
        prog.line(f"{args.scenario}: warning: probes of {dur:g} s cannot miss the 10 s "
                  "segment deadline; the rates only check the pipeline")
    _remove_stale_groups()
    cleanup.remove_leftovers(log=prog.line)   # block disks of killed runs
    try:
        with cleanup.Cleanup(prog=PROG) as c:
            rig = Rig(args.scenario, out, c, prog, res, port=args.port or _free_port(), log=log)
            rig.log_plain = log_plain
            rig.only = [o for o in (args.only or "").split(",") if o]
            rig.disk = {k: settings[k] for k in blockdisk.DISK_SETTINGS if k in settings}
            rig.journal = journal.Journal(out, res.commit)
            rig.stop_at = stop_at
            rc = mod.run(rig, settings)
    except TimeUp as e:
        print(f"{PROG}: --stop-after {args.stop_after}: stopped between probes ({e}); "
              f"cleaned up; rerun with --resume --out {out} to continue", file=sys.stderr)
        return EX_TEMPFAIL
    except (KeyboardInterrupt, cleanup.Interrupted):
        print(f"{PROG}: interrupted; cleaned up; rerun with --resume --out {out} to continue",
              file=sys.stderr)
        return 130
    except Exception as e:  # one line, the name of what failed
        print(f"{PROG}: {args.scenario}: {type(e).__name__}: {e}", file=sys.stderr)
        if os.environ.get("LIBCEPTION_BENCH_DEBUG"):
            raise
        return 1
    prog.line(f"{args.scenario}: done; JSON and plots in {out}")
    return rc
