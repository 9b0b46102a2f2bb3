"""receptiond's configuration file: every setting a flag has, flags
override it, a bad line is named FILE:LINE, --check-config checks without
starting."""
import os
import re
import subprocess
import time

from conftest import ROOT
from fixtures_daemon import RECEPTIOND
from libception import daemon as lcd


def run(args, **kw):
    return subprocess.run([RECEPTIOND] + args, capture_output=True, text=True, timeout=30, **kw)


def write(path, text):
    path.write_text(text)
    return str(path)


def settings_in_help():
    """The settings --help lists: every option but those about the file
    itself, --version and --help."""
    out = run(["--help"]).stdout
    names = re.findall(r"^  --([a-z-]+)", out, re.M)
    return [n for n in names if n not in ("config", "no-config", "check-config", "version",
                                          "help")]


def test_every_flag_is_a_key(tmp_path):
    values = {"socket": str(tmp_path / "x.sock"), "foreground": "yes", "prefetch": "4M",
              "policy": "fixed:1M", "queue-depth": "16", "idle-timeout": "30",
              "log": str(tmp_path / "log"), "pidfile": str(tmp_path / "pid"),
              "metrics-listen": "127.0.0.1:9", "watch": str(tmp_path), "watch-deadline": "100",
              "watch-due": "no", "watch-spin": "0", "watch-quiet": "1M", "watch-recheck": "500",
              "order": "fifo", "deadline": "100", "inflight": "2",
              "access": "all", "user-conns": "16", "user-misses": "8", "user-bytes": "64M",
              "user-closes": "32", "max-devices": "4", "device-idle": "5"}
    names = settings_in_help()
    assert set(names) == set(values), "a new option needs a value here and in the docs"
    conf = write(tmp_path / "all.conf",
                 "# every setting\n\n" + "".join(f"{k} = {values[k]}\n" for k in names))
    r = run(["--config", conf, "--check-config"])
    assert r.returncode == 0, r.stderr
    assert f"configuration OK (file {conf})" in r.stdout


def test_bad_lines_are_named(tmp_path):
    cases = [("prefetch = lots\n", 1, 'prefetch "lots": expected a size'),
             ("\n# c\nqueue-depth = 0\n", 3, 'queue-depth "0"'),
             ("prefetch 2M\n", 1, "expected NAME = VALUE"),
             ("colour = blue\n", 1, 'unknown setting "colour"'),
             ("config = /x\n", 1, 'unknown setting "config"'),
             ("prefetch =\n", 1, "prefetch: no value"),
             ("foreground = maybe\n", 1, "expected yes or no"),
             ("watch-due = soon\n", 1, 'watch-due "soon": expected yes or no'),
             ("policy = nosuch\n", 1, "unknown"),
             ("metrics-listen = localhost:9100\n", 1, "no host names"),
             ("metrics-listen = 127.0.0.1:0\n", 1, "expected 1 to 65535")]
    for text, line, words in cases:
        conf = write(tmp_path / "bad.conf", text)
        r = run(["--config", conf, "--check-config"])
        assert r.returncode == 2, (text, r)
        first = r.stderr.splitlines()[0]
        assert first.startswith(f"receptiond: {conf}:{line}: ") and words in first, (text, first)
    missing = str(tmp_path / "none.conf")
    r = run(["--config", missing, "--check-config"])
    assert r.returncode == 2 and missing in r.stderr


def test_flags_override_the_file(tmp_path, daemon_dir):
    sock_file = os.path.join(daemon_dir, "file.sock")
    sock_flag = os.path.join(daemon_dir, "flag.sock")
    conf = write(tmp_path / "rd.conf",
                 f"socket = {sock_file}\nprefetch = 4M\npolicy = fixed:1M\nqueue-depth = 7\n")
    proc = subprocess.Popen([RECEPTIOND, "--config", conf, "--foreground", "--socket", sock_flag,
                             "--policy", "fixed:512K"], stderr=subprocess.PIPE)
    try:
        deadline = time.monotonic() + 20
        while not lcd.is_listening(sock_flag):
            assert proc.poll() is None and time.monotonic() < deadline, proc.stderr.read()
            time.sleep(0.02)
        st = lcd.stats(sock_flag)
        assert st["socket"] == sock_flag and not os.path.exists(sock_file)
        assert st["prefetch"] == 4 << 20 and st["queue_depth"] == 7   # from the file
    finally:
        proc.terminate()
        proc.wait(timeout=20)


def test_flag_policies_replace_the_files(tmp_path):
    """16 policies is the most; the file's 16 plus a flag's would be 17."""
    conf = write(tmp_path / "full.conf", "".join(f"policy = sd{c}=fixed:1M\n"
                                                 for c in "abcdefghijklmnop"))
    assert run(["--config", conf, "--check-config"]).returncode == 0
    r = run(["--config", conf, "--check-config", "--policy", "fixed:512K",
             "--policy", "sdq=adaptive"])
    assert r.returncode == 0, r.stderr
    conf17 = write(tmp_path / "over.conf", open(conf).read() + "policy = fixed\n")
    r = run(["--config", conf17, "--check-config"])
    assert r.returncode == 2 and f"{conf17}:17: " in r.stderr and "too many" in r.stderr


def test_no_config_and_the_shipped_file(tmp_path):
    # the shipped example is valid as it is
    shipped = os.path.join(ROOT, "receptiond", "receptiond.conf")
    r = run(["--config", shipped, "--check-config"])
    assert r.returncode == 0, r.stderr
    # and names every setting (commented out, with its default)
    text = open(shipped, encoding="utf-8").read()
    for name in settings_in_help():
        assert re.search(rf"^#? ?{name} = ", text, re.M), name
    r = run(["--no-config", "--check-config"])
    assert r.returncode == 0 and "no file" in r.stdout
    r = run(["--no-config", "--config", shipped, "--check-config"])
    assert r.returncode == 2
