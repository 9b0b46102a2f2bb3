"""Remove what killed benchmark runs and tests left: block-disk stacks (file system mounts, loop devices, hddsim mounts) and memory cgroups.

    libception cleanup

Only the pieces of owners that are gone are touched: each stack is named
in a state file under /run/libception-stacks/ with its owner's pid, so a
run still going keeps its devices.  Use it after a SIGKILL (a Ctrl-C or
SIGTERM tears down by itself).
"""
import sys

from . import cleanup


def add_arguments(p):
    p.add_argument("--state-dir", default=cleanup.STATE_DIR, help=f"(default {cleanup.STATE_DIR})")


def main(args):
    from .cmd_bench import _remove_stale_groups
    n = cleanup.remove_leftovers(args.state_dir)
    _remove_stale_groups()
    print(f"cleanup: {n} stack{'s' if n != 1 else ''} of dead runs removed", file=sys.stderr)
    return 0
