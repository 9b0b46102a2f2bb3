"""Run a systemd service under libception (a drop-in setting LD_PRELOAD).

`libception enable UNIT [--user USER]... [--mode M] [--prefetch SIZE]`
writes /etc/systemd/system/UNIT.d/libception.conf, which sets LD_PRELOAD
and the LIBCEPTION_* variables for the service, gives it the group
libception (the group that may use receptiond's socket) and starts
receptiond.socket with it.  A service whose workers switch to another user
(nginx, Apache: www-data) needs that user in the group: --user www-data.
Then restart the service.  `libception disable UNIT` undoes it.
"""
import os

from . import service
from .cmd_run import MODES


def add_arguments(p):
    service.add_arguments(p, "add USER to the group libception (the user the service's "
                             "workers run as)")
    p.add_argument("--mode", choices=MODES, help="LIBCEPTION_MODE for the service")
    p.add_argument("--prefetch", metavar="SIZE", help="LIBCEPTION_PREFETCH for the service")
    p.add_argument("--socket", metavar="PATH",
                   help="receptiond's socket (default /run/libception/receptiond.sock)")


def main(args):
    def write(unit, path):
        os.makedirs(os.path.dirname(path), exist_ok=True)
        env = service.environment(args.mode, args.prefetch, args.socket)
        with open(path, "w", encoding="utf-8") as f:
            f.write(service.dropin_text(unit, env))
        print(f"libception: enable: wrote {path}")
        return 0
    return service.run("enable", args, write)
