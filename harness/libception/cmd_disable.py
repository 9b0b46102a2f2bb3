"""Run a systemd service without libception again (remove the drop-in).

`libception disable UNIT [--user USER]...` removes what `libception
enable` wrote, and takes each USER out of the group libception.  Then
restart the service.  Exit status 1 if UNIT had no drop-in.
"""
import os
import sys

from . import service


def add_arguments(p):
    p.add_argument("unit", metavar="UNIT", help="the service, e.g. nginx.service")
    p.add_argument("--user", action="append", default=[], metavar="USER",
                   help="take USER out of the group libception; repeatable")
    p.add_argument("--root", default="/", metavar="DIR",
                   help="change the system installed under DIR (an image), not this one")


def main(args):
    try:
        unit = service.unit_name(args.unit)
        for user in args.user:
            if service.set_member(user, False, args.root):
                print(f"libception: disable: {user} taken out of the group {service.GROUP}")
        path = service.dropin_path(unit, args.root)
        if not os.path.exists(path):
            print(f"libception: disable: {unit} has no drop-in ({path})", file=sys.stderr)
            return 1
        os.unlink(path)
        try:
            os.rmdir(os.path.dirname(path))     # only if nothing else is in it
        except OSError:
            pass
        print(f"libception: disable: removed {path}")
        if service.reload_systemd(args.root):
            print(f"libception: disable: now `systemctl restart {unit}`")
    except (service.ServiceError, OSError) as e:
        print(f"libception: disable: {e}", file=sys.stderr)
        return 1
    return 0
