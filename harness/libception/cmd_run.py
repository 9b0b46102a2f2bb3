"""Run a program under libception (starting receptiond if none listens).

`libception run [--mode M] [--prefetch SIZE] [--lookahead] [--socket P] [--no-daemon] [--log FILE] -- CMD ARGS...`
prepends libception.so to LD_PRELOAD, sets the LIBCEPTION_* variables and
executes CMD in place of itself.  Unless --no-daemon or a mode without a
daemon is asked for, it first starts receptiond, detached, if nothing
listens on the socket, so the daemon keeps serving programs that outlive
this command (nginx daemonizes) until `libception stop` or its idle timeout.
"""
import argparse
import os
import sys

from . import daemon

MODES = ["prefetch+serialize", "serialize", "prefetch", "track", "off"]
DAEMON_MODES = {"prefetch+serialize", "serialize"}
IDLE_TIMEOUT = 900


def add_arguments(p):
    p.add_argument("--mode", choices=MODES, default=None,
                   help="what the library does (default prefetch+serialize)")
    p.add_argument("--prefetch", metavar="SIZE",
                   help="prefetch size, bytes or with K/M/G (default 2M)")
    p.add_argument("--lookahead", action="store_true",
                   help="ask for the next window without waiting when a reader nears the end"
                        " of the current one (LIBCEPTION_LOOKAHEAD=1; prefetch+serialize only)")
    p.add_argument("--socket", metavar="PATH", help="receptiond's socket")
    p.add_argument("--no-daemon", action="store_true",
                   help="never start receptiond (the library passes through if none listens)")
    p.add_argument("--access", default=daemon.HARNESS_ACCESS, metavar="all|owner|group:NAME",
                   help="who may use a daemon started here (default all: a server's workers"
                        " run as another user; docs/libception-security.md)")
    p.add_argument("--idle-timeout", type=int, default=IDLE_TIMEOUT, metavar="SEC",
                   help=f"a daemon started here exits after this long unused (default {IDLE_TIMEOUT})")
    p.add_argument("--log", metavar="FILE",
                   help="a daemon started here appends its log to FILE (default: no log)")
    p.add_argument("command", nargs=argparse.REMAINDER, metavar="-- CMD ARGS",
                   help="the program and its arguments")


def library_path():
    return os.path.join(daemon.prefix(), "lib", "libception.so")


def prepend_preload(current, lib):
    """LD_PRELOAD with lib first, keeping what was there (once)."""
    parts = [p for p in (current or "").replace(":", " ").split() if p and p != lib]
    return " ".join([lib] + parts)


def _valid_size(text):
    t = text.strip()
    for suffix in ("KiB", "MiB", "GiB", "KB", "MB", "GB", "K", "M", "G", "k", "m", "g"):
        if t.endswith(suffix):
            t = t[:-len(suffix)]
            break
    return t.isdigit()


def main(args):
    lib = library_path()
    if not os.path.exists(lib):
        print(f"libception: run: {lib} not found (build with `make`)", file=sys.stderr)
        return 1
    if args.prefetch is not None and not _valid_size(args.prefetch):
        print(f"libception: run: --prefetch \"{args.prefetch}\": expected a size like 2M",
              file=sys.stderr)
        return 2
    env = dict(os.environ)
    sock = daemon.socket_path(args.socket)
    env[daemon.ENV_SOCKET] = sock
    if args.mode:
        env["LIBCEPTION_MODE"] = args.mode
    if args.prefetch is not None:
        env["LIBCEPTION_PREFETCH"] = args.prefetch
    if args.lookahead:
        env["LIBCEPTION_LOOKAHEAD"] = "1"
    env["LD_PRELOAD"] = prepend_preload(env.get("LD_PRELOAD"), lib)
    mode = args.mode or env.get("LIBCEPTION_MODE") or "prefetch+serialize"
    if mode in DAEMON_MODES and not args.no_daemon and not daemon.is_listening(sock):
        try:
            # The daemon works in /: a relative log path means the caller's.
            daemon.start(sock, detached=True, log=args.log and os.path.abspath(args.log),
                         access=args.access,
                         args=["--idle-timeout", str(args.idle_timeout)])
        except (daemon.DaemonError, OSError) as e:
            # The program still runs: the library passes calls through.
            print(f"libception: run: could not start receptiond: {e}", file=sys.stderr)
    cmd = args.command
    if cmd and cmd[0] == "--":
        cmd = cmd[1:]
    if not cmd:
        print("libception: run: no command given", file=sys.stderr)
        return 2
    try:
        os.execvpe(cmd[0], cmd, env)
    except OSError as e:
        print(f"libception: run: {cmd[0]}: {e.strerror}", file=sys.stderr)
        return 127 if isinstance(e, FileNotFoundError) else 126
