"""The `libception` command: one subcommand per module `cmd_<name>.py`.

Each such module has a docstring whose first line is the subcommand's
help, `add_arguments(parser)` and `main(args) -> int`.  Modules are
imported only when their subcommand runs, so `libception run` starts fast.
"""
import argparse
import importlib
import os
import pkgutil
import sys

PROG = "libception"


def _commands():
    here = os.path.dirname(__file__)
    return sorted(m.name[4:] for m in pkgutil.iter_modules([here])
                  if m.name.startswith("cmd_"))


def _summary(name):
    # Read the first docstring line without importing the module.
    path = os.path.join(os.path.dirname(__file__), f"cmd_{name}.py")
    with open(path, encoding="utf-8") as f:
        for line in f:
            line = line.strip().strip('"').strip()
            if line:
                return line
    return ""


def version():
    """The text of VERSION: at the top of the source tree, installed as
    PREFIX/share/libception/VERSION; both are ../../VERSION from here."""
    path = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "VERSION")
    try:
        with open(path, encoding="utf-8") as f:
            return f.read().strip()
    except OSError:
        return "unknown"


def main(argv=None):
    argv = sys.argv[1:] if argv is None else argv
    names = _commands()
    parser = argparse.ArgumentParser(
        prog=PROG, description="Serialized, aggressive prefetching for unmodified programs.")
    parser.add_argument("--version", action="version", version=f"{PROG} {version()}")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")
    for name in names:
        sub.add_parser(name, help=_summary(name), add_help=False)
    if not argv or argv[0] not in names:
        if argv and not argv[0].startswith("-"):
            print(f"{PROG}: unknown command \"{argv[0]}\" (one of: {', '.join(names)})",
                  file=sys.stderr)
            return 2
        parser.parse_args(argv)
        parser.print_help()
        return 2
    module = importlib.import_module(f"libception.cmd_{argv[0]}")
    cmd_parser = argparse.ArgumentParser(prog=f"{PROG} {argv[0]}",
                                         description=module.__doc__)
    module.add_arguments(cmd_parser)
    args = cmd_parser.parse_args(argv[1:])
    try:
        return module.main(args) or 0
    except KeyboardInterrupt:
        return 130
