"""scripts/aa_summary.py on lines a receptiond with compare=aa logged (HD
library, 4M): only the last decision of each pool counts."""
import subprocess
import sys
from pathlib import Path

SCRIPT = Path(__file__).resolve().parent.parent / "scripts" / "aa_summary.py"

LOG = """\
receptiond: adaptive fuse-0:40: size 4.00M kept: A/A side by side over 40 s, every group at this size: current 12.5+-5% of 283 streams (12 ms/MiB read, read/used 1.02); smaller's group 14.4+-9% of 63 streams (12.3 ms/MiB read, read/used 1.08), 1.15x current (+1.4 standard errors); larger's group 12.5+-9% of 56 streams (11.9 ms/MiB read, read/used 1.03), 1x current (+0.0 standard errors)
receptiond: adaptive fuse-0:40: size 4.00M kept: A/A side by side over 82 s, every group at this size: current 12+-3% of 627 streams (12 ms/MiB read, read/used 1.00); smaller's group 14+-7% of 135 streams (12.1 ms/MiB read, read/used 1.08), 1.16x current (+1.9 standard errors); larger's group 11.8+-7% of 121 streams (12.1 ms/MiB read, read/used 0.99), 0.978x current (-0.3 standard errors)
receptiond: adaptive fuse-0:40: size 4.00M kept: A/A side by side over 143 s, every group at this size: current 12+-3% of 1201 streams (12 ms/MiB read, read/used 1.00); smaller's group 12.8+-6% of 229 streams (11.9 ms/MiB read, read/used 1.04), 1.07x current (+1.0 standard errors); larger's group 11.7+-6% of 208 streams (11.9 ms/MiB read, read/used 0.99), 0.977x current (-0.4 standard errors)
receptiond: adaptive fuse-0:40: size 4.00M kept: A/A side by side over 203 s, every group at this size: current 11.6+-2% of 1790 streams (12 ms/MiB read, read/used 0.98); smaller's group 11.5+-6% of 349 streams (11.9 ms/MiB read, read/used 0.98), 0.989x current (-0.2 standard errors); larger's group 12+-5% of 296 streams (11.9 ms/MiB read, read/used 1.01), 1.04x current (+0.7 standard errors)
receptiond: adaptive fuse-0:40: load above 60% busy (82%): adjusting
"""


def run(*args):
    return subprocess.run([sys.executable, str(SCRIPT), *args], capture_output=True, text=True)


def test_summary_counts_one_decision_per_pool(tmp_path):
    log = tmp_path / "receptiond.log"
    log.write_text(LOG)
    r = run(str(log))
    assert r.returncode == 0, r.stderr
    # spans 40 s, then 82, 143, 203 s: one pool so far, its last decision
    # the one over 203 s (11.5 against 11.6: 0.991x; 12 against 11.6: 1.034x)
    assert "4 decisions, 1 pools" in r.stdout
    assert "smaller's group: 0.991x current" in r.stdout, r.stdout
    assert "larger's group: 1.034x current" in r.stdout, r.stdout
    assert "mean -0.20 standard errors" in r.stdout and "mean +0.70 standard errors" in r.stdout


def test_unreadable_log_is_one_line(tmp_path):
    r = run(str(tmp_path / "missing.log"))
    assert r.returncode != 0
    assert r.stderr.strip() == f"aa_summary.py: {tmp_path / 'missing.log'}: No such file or directory"
