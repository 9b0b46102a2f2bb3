"""Run a systemd service without libception again (remove the drop-in).

`libception disable UNIT [--user USER]...` removes what `libception
enable` wrote, and takes each USER out of the group libception.  Then
restart the service.  Exit status 1 if UNIT had no drop-in.
"""
import os
import sys

from . import service


def add_arguments(p):
    service.add_arguments(p, "take USER out of the group libception")


def main(args):
    def remove(unit, path):
        if not os.path.exists(path):
            print(f"libception: disable: {unit} has no drop-in ({path})", file=sys.stderr)
            return 1
        os.unlink(path)
        try:
            os.rmdir(os.path.dirname(path))     # only if nothing else is in it
        except OSError:
            pass
        print(f"libception: disable: removed {path}")
        return 0
    return service.run("disable", args, remove)
