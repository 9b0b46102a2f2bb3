"""scripts/trace_who.py on a traced configuration: the daemon's commands
told from the program's by the trace's pid column, and the short misses
followed by the rest of their window."""
import subprocess
import sys
from pathlib import Path

SCRIPT = Path(__file__).resolve().parent.parent / "scripts" / "trace_who.py"

# receptiond pid 1000 (its worker 1002); nginx worker 2000.  A one-page
# miss at 0 then the window's rest 256 KiB on; a program inode read; a
# 128 KiB miss with nothing after it.
TRACE = """\
# time_s pos len seek_dist wait_us position_us transfer_us lateness_us kind pid
1.0 0 4096 100 0 9000 30 10 miss 1002
1.1 266240 131072 262144 0 3000 990 10 miss 1002
1.2 900000000 4096 5 0 7000 30 10 meta 2000
1.3 50000000 131072 9 0 8000 990 10 miss 1002
"""


def run(*args):
    return subprocess.run([sys.executable, str(SCRIPT), *args], capture_output=True, text=True)


def test_daemon_and_program_reads_and_the_short_misses(tmp_path):
    cfg = tmp_path / "fixed-512K"
    cfg.mkdir()
    (cfg / "disk-trace-mnt.txt").write_text(TRACE)
    (cfg / "receptiond.log").write_text("receptiond: listening on /tmp/x.sock (pid 1000, prefetch 2097152)\n")
    r = run(str(tmp_path))
    assert r.returncode == 0, r.stderr
    lines = r.stdout.splitlines()
    assert lines[0] == "fixed-512K"
    assert lines[1].split() == ["receptiond", "3", "commands,", "1", "of", "one", "page"]
    assert lines[2].split() == ["program", "1", "commands,", "1", "of", "one", "page"]
    busy = 9030 + 3990 + 7030 + 8990
    assert f"short misses 1 took {100 * 9030 / busy:.1f}% of busy" in lines[3]
    assert "100% followed by a read 256 KiB on" in lines[3]


def test_a_dir_without_traces_is_named(tmp_path):
    r = run(str(tmp_path))
    assert r.returncode != 0 and str(tmp_path) in r.stderr and "disk-trace-mnt.txt" in r.stderr
