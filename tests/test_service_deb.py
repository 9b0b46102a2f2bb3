"""`make deb`: a Debian package that lintian passes (with the overrides
debian/libception.lintian-overrides explains), that installs into a
throwaway root, makes its group, runs `libception run -- cat` there with
the daemon it starts, and that purge removes again; and README's "Install
as a service" followed under a real systemd (scripts/service_walkthrough.sh).

The throwaway root is this machine's own Debian 12 under an overlay
(changes go to a tmpfs), in a mount namespace of its own, so nothing of
it outlives the test and the host's files and package database are not
touched."""
import glob
import os
import shutil
import subprocess

import pytest

from conftest import ROOT
from fixtures_common import sha256_of
from fixtures_daemon import drop_cache, make_cold_file

pytestmark = [
    pytest.mark.skipif(os.geteuid() != 0, reason="needs root (mounts, dpkg --root, chroot)"),
    pytest.mark.skipif(not (shutil.which("dpkg-buildpackage") and shutil.which("lintian")),
                       reason="debhelper or lintian not installed"),
]

# Runs in its own mount namespace (unshare): DEB ROOTDIR DATA.
INSTALL_RUN_PURGE = r"""
set -eu
deb=$1 t=$2 data=$3
mount -t tmpfs tmpfs "$t"
mkdir -p "$t/upper" "$t/work" "$t/root"
mount -t overlay overlay -o "lowerdir=/,upperdir=$t/upper,workdir=$t/work" "$t/root"
r=$t/root
mount -t proc proc "$r/proc"
mount --rbind /sys "$r/sys"
mount --rbind /dev "$r/dev"
mount -t tmpfs tmpfs "$r/run"
mount -t tmpfs tmpfs "$r/tmp"
mkdir -p "$r/mnt/lc-data" && mount --bind "$data" "$r/mnt/lc-data"
in_root() { chroot "$r" "$@"; }
trap 'in_root libception stop >/dev/null 2>&1 || true' EXIT

dpkg --root="$r" -i "$deb" >/dev/null
echo "group: $(in_root getent group libception)"
echo "socket-enabled: $(readlink "$r/etc/systemd/system/sockets.target.wants/receptiond.socket")"
echo "version: $(in_root libception --version)"
echo "check-config: $(in_root receptiond --check-config)"
echo "man: $(in_root man -w receptiond)"
in_root systemd-analyze verify /lib/systemd/system/receptiond.socket \
    /lib/systemd/system/receptiond.service && echo "verify: ok"
echo "cat: $(in_root libception run -- cat /mnt/lc-data/cold | sha256sum | cut -d' ' -f1)"
in_root libception stats --json > "$t/stats.json"
echo "daemon-bytes-read: $(python3 -c 'import json,sys; print(sum(d["bytes_read"] for d in json.load(open(sys.argv[1]))["devices"]))' "$t/stats.json")"
in_root libception stop && echo "stop: ok"
trap - EXIT
in_root libception enable demo.service --user www-data >/dev/null
echo "dropin: $(grep LD_PRELOAD "$r/etc/systemd/system/demo.service.d/libception.conf")"

dpkg --root="$r" --purge libception >/dev/null
# (man's cache of formatted pages, made when systemd-analyze checked the
# units' man: links, is man-db's to expire)
echo "left: $(cd "$t/upper" && find . -path ./var/cache/man -prune -o \( -name '*libception*' \
    -o -name '*receptiond*' \) -print | sort | tr '\n' ' ')"
echo "group-after-purge: $(in_root getent group libception)"
"""


@pytest.fixture(scope="module")
def deb():
    r = subprocess.run(["make", "-s", "-C", ROOT, "deb"], capture_output=True, text=True,
                       timeout=600)
    assert r.returncode == 0, r.stdout + r.stderr
    (path,) = glob.glob(os.path.join(ROOT, "build", "deb", "libception_*_amd64.deb"))
    return path


def test_lintian_clean(deb):
    r = subprocess.run(["lintian", "--fail-on", "error,warning", deb], capture_output=True,
                       text=True, timeout=300)
    said = [line for line in (r.stdout + r.stderr).splitlines()
            if not line.startswith("running with root privileges")]
    assert r.returncode == 0 and said == [], said


def test_contents(deb):
    listing = subprocess.run(["dpkg-deb", "-c", deb], capture_output=True, text=True).stdout
    files = {line.split()[-1].lstrip(".") for line in listing.splitlines()}
    for f in ("/usr/bin/libception", "/usr/bin/receptiond", "/usr/bin/hddsim", "/usr/bin/vidload",
              "/usr/lib/libception.so", "/lib/systemd/system/receptiond.socket",
              "/lib/systemd/system/receptiond.service", "/etc/libception/receptiond.conf",
              "/usr/share/man/man8/receptiond.8.gz", "/usr/share/man/man1/libception.1.gz",
              "/usr/share/man/man7/libception-watch.7.gz",
              "/usr/share/libception/harness/libception/cli.py"):
        assert f in files, f
    conffiles = subprocess.run(["dpkg-deb", "-I", deb, "conffiles"], capture_output=True,
                               text=True).stdout
    assert "/etc/libception/receptiond.conf" in conffiles
    unit = subprocess.run(f"dpkg-deb --fsys-tarfile {deb} | tar -xOf - "
                          "./lib/systemd/system/receptiond.service", shell=True,
                          capture_output=True, text=True).stdout
    assert "ExecStart=/usr/bin/receptiond --foreground\n" in unit


def test_install_run_purge_in_a_throwaway_root(deb, tmp_path):
    data = tmp_path / "data"
    data.mkdir()
    cold = make_cold_file(str(data / "cold"), 16 << 20)
    want = sha256_of(cold)
    drop_cache(cold)                                  # cold again for the daemon
    mnt = tmp_path / "root"
    mnt.mkdir()
    r = subprocess.run(["unshare", "--mount", "--propagation", "private", "bash", "-c",
                        INSTALL_RUN_PURGE, "install-run-purge", deb, str(mnt), str(data)],
                       capture_output=True, text=True, timeout=300)
    out = dict(line.split(": ", 1) for line in r.stdout.splitlines() if ": " in line)
    assert r.returncode == 0, r.stdout + r.stderr
    assert out["group"].startswith("libception:x:")
    assert out["socket-enabled"] == "/lib/systemd/system/receptiond.socket"
    assert out["version"] == "libception " + open(os.path.join(ROOT, "VERSION")).read().strip()
    assert out["check-config"] == "receptiond: configuration OK (file /etc/libception/receptiond.conf)"
    assert out["man"] == "/usr/share/man/man8/receptiond.8.gz"
    assert out["verify"] == "ok"
    assert out["cat"] == want                          # the program's bytes, unchanged
    assert int(out["daemon-bytes-read"]) > 0            # and the daemon read them ahead
    assert out["stop"] == "ok"
    assert out["dropin"] == 'Environment="LD_PRELOAD=/usr/lib/libception.so"'
    assert out["left"].strip() == "", out["left"]       # purge removed every file, drop-in too
    assert out["group-after-purge"].startswith("libception:x:")   # Debian keeps groups


@pytest.mark.skipif(not shutil.which("systemd-nspawn"),
                    reason="systemd-nspawn (Debian package systemd-container) not installed")
@pytest.mark.skipif(not (shutil.which("nginx") and shutil.which("prometheus")),
                    reason="nginx and prometheus not installed")
def test_readme_walkthrough_under_systemd(deb):
    """systemd as PID 1 (this machine's Debian booted in a container):
    socket activation, the unit's capabilities, nginx under `libception
    enable`, Prometheus scraping /metrics, man, journal, purge."""
    r = subprocess.run([os.path.join(ROOT, "scripts", "service_walkthrough.sh"), deb],
                       capture_output=True, text=True, timeout=600)
    steps = [line for line in r.stdout.splitlines() if line.startswith(("ok: ", "FAILED: "))]
    assert r.returncode == 0 and steps[-1] == "ok: walkthrough complete", r.stdout + r.stderr
    assert not any(line.startswith("FAILED") for line in steps), steps
    assert len(steps) == 11, steps
