"""Prefetch for every program reading PATH, with no library (receptiond --watch).

`libception watch [--deadline MS] [--prefetch SIZE] [--policy SPEC] [--socket P] PATH...`
starts receptiond, detached, watching the mounts that hold each PATH through
fanotify pre-content events (Linux 6.14 or later; ext4, xfs or btrfs; as
root).  Every read of a file there that would miss the page cache waits
for the daemon's serialized window, at most the deadline.  Programs under
libception.so as well are not handled twice: the library makes the range
resident first, and the event then finds it cached.  `libception stop`
ends it; `libception stats` shows the "watch" counters.
"""
import os
import sys

from . import daemon


def add_arguments(p):
    p.add_argument("--deadline", type=int, metavar="MS",
                   help="longest a reader waits for its window (receptiond's default 500)")
    p.add_argument("--prefetch", metavar="SIZE", help="prefetch size (receptiond's default 2M)")
    p.add_argument("--policy", action="append", default=[], metavar="SPEC",
                   help="sizing policy, as receptiond --policy (repeatable)")
    p.add_argument("--socket", metavar="PATH", help="receptiond's socket")
    p.add_argument("--log", metavar="FILE", help="the daemon's log (default: none)")
    p.add_argument("paths", nargs="+", metavar="PATH", help="a path on each mount to watch")


def main(args):
    sock = daemon.socket_path(args.socket)
    if daemon.is_listening(sock):
        print(f"libception: watch: a daemon already listens on {sock}; marks are set when it "
              "starts, so stop it first (libception stop)", file=sys.stderr)
        return 1
    cmd = []
    for p in args.paths:
        cmd += ["--watch", os.path.abspath(p)]
    if args.deadline is not None:
        cmd += ["--watch-deadline", str(args.deadline)]
    if args.prefetch:
        cmd += ["--prefetch", args.prefetch]
    for spec in args.policy:
        cmd += ["--policy", spec]
    try:
        pid = daemon.start(sock, detached=True, args=cmd, log=args.log)
    except (daemon.DaemonError, OSError) as e:
        print(f"libception: watch: {e}", file=sys.stderr)
        return 1
    print(f"libception: watch: receptiond (pid {pid}) on {sock} watching {', '.join(args.paths)}")
    return 0
