"""Stop the receptiond listening on the socket.

Exit status 0 when it has exited; 1 if none was running (said on
stderr), or it refused or would not exit.
"""
import sys

from . import daemon


def add_arguments(p):
    p.add_argument("--socket", metavar="PATH", help="receptiond's socket")
    p.add_argument("--timeout", type=float, default=10.0, metavar="SEC",
                   help="how long to wait for it to exit (default 10)")


def main(args):
    path = daemon.socket_path(args.socket)
    try:
        if not daemon.stop(path, timeout=args.timeout):
            print(f"libception: stop: no receptiond listening on {path}", file=sys.stderr)
            return 1
    except (daemon.DaemonError, OSError) as e:
        print(f"libception: stop: {e}", file=sys.stderr)
        return 1
    return 0
