"""Running systemd services under libception: the drop-in that
`libception enable UNIT` writes and `libception disable UNIT` removes,
and membership of the group that may use the daemon's socket
(receptiond.socket: root and the group libception, mode 0660)."""
import os
import re
import shutil
import subprocess
import sys

from . import daemon
from .cmd_run import library_path

GROUP = "libception"
DROPIN = "libception.conf"
SYSTEM_UNITS = "etc/systemd/system"
UNIT_NAME = re.compile(r"^[A-Za-z0-9:_.\\@-]+\.service$")


class ServiceError(Exception):
    """A one-line reason the change was not made."""


def add_arguments(p, user_help):
    """What enable and disable both take: UNIT, --user, --root."""
    p.add_argument("unit", metavar="UNIT", help="the service, e.g. nginx.service")
    p.add_argument("--user", action="append", default=[], metavar="USER",
                   help=user_help + "; repeatable")
    p.add_argument("--root", default="/", metavar="DIR",
                   help="change the system installed under DIR (an image), not this one")


def run(verb, args, change):
    """The frame of enable and disable: the unit's name, the users'
    membership (added for enable), then change(unit, path) on the
    drop-in; a reload of systemd after it.  Returns the exit status."""
    try:
        unit = unit_name(args.unit)
        done = "added to" if verb == "enable" else "taken out of"
        for user in args.user:
            if set_member(user, verb == "enable", args.root):
                print(f"libception: {verb}: {user} {done} the group {GROUP}")
        rc = change(unit, dropin_path(unit, args.root))
        if rc == 0 and reload_systemd(args.root):
            print(f"libception: {verb}: now `systemctl restart {unit}`")
        return rc
    except (ServiceError, OSError) as e:
        print(f"libception: {verb}: {e}", file=sys.stderr)
        return 1


def unit_name(text):
    """UNIT as systemd names it: "nginx" is nginx.service; other kinds
    (.socket, .timer) run no program and are refused."""
    name = text if "." in text else text + ".service"
    if not UNIT_NAME.match(name) or name.startswith("."):
        raise ServiceError(f"\"{text}\": expected a service unit name such as nginx.service")
    return name


def dropin_path(unit, root="/"):
    return os.path.join(root, SYSTEM_UNITS, unit + ".d", DROPIN)


def dropin_text(unit, env):
    """The drop-in: the variables, the group for the socket, and the
    socket's unit started first (its daemon starts on first use)."""
    lines = [f"# Written by `libception enable {unit}`; `libception disable {unit}` removes it.",
             "[Unit]", "Wants=receptiond.socket", "After=receptiond.socket", "",
             "[Service]"]
    lines += [f'Environment="{k}={v}"' for k, v in env.items()]
    # Processes that keep the unit's groups reach the socket through this;
    # workers that switch user (nginx's www-data) need `--user` instead.
    lines.append(f"SupplementaryGroups={GROUP}")
    return "\n".join(lines) + "\n"


def environment(mode=None, prefetch=None, socket=None):
    env = {"LD_PRELOAD": library_path(), daemon.ENV_SOCKET: socket or daemon.DEFAULT_SOCKET_ROOT}
    if mode:
        env["LIBCEPTION_MODE"] = mode
    if prefetch:
        env["LIBCEPTION_PREFETCH"] = prefetch
    return env


def _group_members(root):
    with open(os.path.join(root, "etc", "group"), encoding="utf-8") as f:
        for line in f:
            parts = line.rstrip("\n").split(":")
            if parts[0] == GROUP and len(parts) == 4:
                return [m for m in parts[3].split(",") if m]
    raise ServiceError(f"no group {GROUP} (the package makes it; by hand: "
                       f"groupadd --system {GROUP})")


def set_member(user, member, root="/"):
    """Add user to the group (member=True) or take them out; returns
    whether anything changed."""
    if (user in _group_members(root)) == member:
        return False
    if not shutil.which("gpasswd"):
        raise ServiceError("gpasswd not found (Debian package passwd)")
    cmd = ["gpasswd"] + (["-Q", root] if os.path.realpath(root) != "/" else [])
    cmd += ["-a" if member else "-d", user, GROUP]
    r = subprocess.run(cmd, capture_output=True, text=True)
    if r.returncode:
        raise ServiceError(f"{' '.join(cmd)}: {r.stderr.strip()}")
    return True


def reload_systemd(root="/"):
    """systemctl daemon-reload when systemd runs this system; False when
    there is nothing to reload (another root, or no systemd)."""
    if os.path.realpath(root) != "/" or not os.path.isdir("/run/systemd/system"):
        return False
    subprocess.run(["systemctl", "daemon-reload"], check=True)
    return True
