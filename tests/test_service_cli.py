"""The small things an operator meets first: --version on every program
(one VERSION), `libception stop` with nothing running fails, `bench --help`
names every scenario, `libception run --log FILE` keeps the daemon's log,
and no binary carries the path of the tree it was built in."""
import os
import subprocess

from conftest import BIN, LIB, ROOT
from fixtures_daemon import make_cold_file
from libception import daemon as lcd
from libception.bench import SCENARIOS

LIBCEPTION = os.path.join(BIN, "libception")
PROGRAMS = ["libception", "receptiond", "receptiond-profile", "hddsim", "vidload"]


def run(cmd, **kw):
    return subprocess.run(cmd, capture_output=True, text=True, timeout=60, **kw)


def test_version_everywhere_from_one_file():
    with open(os.path.join(ROOT, "VERSION"), encoding="ascii") as f:
        version = f.read().strip()
    for prog in PROGRAMS:
        r = run([os.path.join(BIN, prog), "--version"])
        assert r.returncode == 0, (prog, r.stderr)
        assert r.stdout.split()[:2] == [prog, version], (prog, r.stdout)


def test_stop_with_nothing_running_fails(daemon_dir):
    sock = os.path.join(daemon_dir, "nobody.sock")
    r = run([LIBCEPTION, "stop", "--socket", sock])
    assert r.returncode == 1
    assert f"no receptiond listening on {sock}" in r.stderr


def test_bench_help_lists_every_scenario():
    out = run([LIBCEPTION, "bench", "--help"]).stdout
    listed = " ".join(out.split())   # argparse wraps the list anywhere
    for name in SCENARIOS:
        assert name in listed, name
    top = run([LIBCEPTION, "--help"]).stdout
    # the one-line summary must not carry a list that can fall behind
    assert "demo, servers" not in top


def test_run_log_keeps_the_daemon_log(daemon_dir, tmp_path):
    sock = os.path.join(daemon_dir, "log.sock")
    data = make_cold_file(str(tmp_path / "cold"), 1 << 20)
    log = "daemon.log"                      # relative: the caller's directory
    try:
        r = run([LIBCEPTION, "run", "--socket", sock, "--log", log, "--", "cat", data],
                cwd=str(tmp_path))
        assert r.returncode == 0
        with open(tmp_path / log, encoding="utf-8") as f:
            text = f.read()
        assert f"listening on {sock}" in text
    finally:
        if lcd.is_listening(sock):
            lcd.stop(sock)


def test_no_build_path_in_binaries():
    """-ffile-prefix-map: debug info names sources relative to the tree."""
    tree = os.path.realpath(ROOT).encode()
    files = [os.path.join(BIN, p) for p in PROGRAMS if p != "libception"]
    files.append(os.path.join(LIB, "libception.so"))
    for path in files:
        with open(path, "rb") as f:
            assert tree not in f.read(), path
        # and the debug info is there, so the test is not vacuous
        sections = run(["readelf", "-S", path]).stdout
        assert ".debug_info" in sections, path
