"""scripts/summarize_legacy_results.py: the summaries docs/results/summaries/
keeps of the raw results files of before issue 24's format (every probe
inside its run)."""
import hashlib
import json
import os
import subprocess
import sys

from conftest import ROOT
from libception import legacy_results

SCRIPT = os.path.join(ROOT, "scripts", "summarize_legacy_results.py")


def probe(rate, seed, ok, size=None, **extra):
    p = {"rate": rate, "seed": seed, "pass": ok, "failed_pct": 0.0 if ok else 12.345678,
         "started": 500, "mb_per_s": 41.23456, "max_active": 300,
         "latency_ms": {"p50": 900.0, "p99": 2104.0}, "disk_mb_per_s": 30.0,
         "disk_utilisation": 0.71234, "disk_avg_read_kib": 1024.0,
         "memory_lists": {"active_file": 1}, **extra}
    if size:
        p["daemon_stats"] = {"devices": [{"hits": 10, "misses": 5, "policy": {
            "size": size, "target": size, "changes": 2, "reason": "kept", "log": "x" * 5000}}]}
    return p


def legacy_file(tmp_path):
    series = [{"t": float(t), "size": 1 << 20 if t < 10 else 2 << 20,
               "target": 2 << 20, "reason": "why " * 40} for t in range(0, 40, 2)]
    probes = [probe(4.0, 1, True, 1 << 20), probe(8.0, 1, False, 2 << 20),
              probe(6.0, 1, True, 2 << 20)]
    for p in probes:
        del p["disk_utilisation"]   # a figure no probe of this file has
    data = {"schema": "libception-bench", "version": 1, "scenario": "sizing",
            "machine": {"cpus": 2}, "date": "2026-11-26T07:38:20+00:00", "git_commit": "abc",
            "settings": {"drive": "wd-red", "library": {"preset": "hd", "count": 1000},
                         "memory_ratio": 0.03125, "search": {"duration": 60}},
            "seeds": [1],
            "runs": [{"point": {"part": "profile"}, "profile": {"rate": 1.3e8, "switch_s": 0.011,
                                                                 "sequential": [1] * 400}},
                     {"point": {"config": "adaptive"}, "config": {"mode": "libception"},
                      "answer": 6.0, "failed_above": 8.0, "at_answer": probes[2],
                      "probes": probes, "series": series, "git_commit": "abc"}]}
    path = tmp_path / "sizing-x.json"
    path.write_text(json.dumps(data, indent=1))
    return path


def test_legacy_file_summary(tmp_path):
    path = legacy_file(tmp_path)
    s = legacy_results.summarize_path(str(path))
    meta = s["metadata"]
    assert meta["scenario"] == "sizing" and meta["probes"] == 3
    assert meta["disk"] == {"drive": "wd-red", "library": "hd-1000", "memory_ratio": 0.03125}
    assert meta["raw"]["sha256"] == hashlib.sha256(path.read_bytes()).hexdigest()
    assert meta["search"] == {"duration": 60}
    profile, adaptive = s["answers"]
    assert profile["profile"] == {"rate": 1.3e8, "switch_s": 0.011}
    at = adaptive["at_answer"]
    assert at["policy"]["size"] == 2 << 20 and "log" not in at["policy"]
    assert "memory_lists" not in at and at["latency_ms"] == {"p50": 900.0, "p99": 2104.0}
    assert "git_commit" not in adaptive          # the file's own commit, in metadata
    changes = adaptive["series"]["changes"]
    assert adaptive["series"]["points"] == 20 and [c["size"] for c in changes] == [1 << 20, 2 << 20]
    assert all(len(c["reason"]) <= legacy_results.REASON for c in changes)
    cols = s["probe_columns"]
    assert cols[0] == "answer" and "disk_avg_read_kib" in cols
    assert "disk_utilisation" not in cols   # no probe has it
    rows = [dict(zip(cols, r)) for r in s["probe_rows"]]
    assert [r["answer"] for r in rows] == [1, 1, 1]
    assert [r["rate"] for r in rows] == [4.0, 8.0, 6.0]
    assert rows[1]["failed_pct"] == 12.35 and rows[1]["policy_size"] == 2 << 20


def test_script_writes_summaries_with_the_raw_commit(tmp_path):
    path = legacy_file(tmp_path)
    out = tmp_path / "summaries"
    r = subprocess.run([sys.executable, SCRIPT, str(path), "--out-dir", str(out),
                        "--raw-commit", "9999c70"], capture_output=True, text=True, timeout=60)
    assert r.returncode == 0, r.stderr
    written = out / "sizing-x.json"
    s = json.loads(written.read_text())
    assert s["metadata"]["raw"]["git"] == "9999c70"
    assert written.stat().st_size < path.stat().st_size / 4
    # one answer and one probe per line: a rerun changes few lines
    assert len(written.read_text().splitlines()) >= 2 + 3 + 3


def test_unreadable_path_is_one_line(tmp_path):
    r = subprocess.run([sys.executable, SCRIPT, str(tmp_path / "missing.json"), "--out-dir",
                        str(tmp_path)], capture_output=True, text=True, timeout=60)
    assert r.returncode == 1 and r.stderr.count("\n") == 1 and "missing.json" in r.stderr


def test_described_in_finds_the_sections_that_name_a_run(tmp_path):
    doc = tmp_path / "notes.md"
    doc.write_text("# Day\n\n## Rounds\n    libception bench sizing --out results/sizing-hd-rounds\n"
                   "## Starts from below\nJSON `results/json/sizing-{hd-from2m,sd828-from256k}-20261126.json`\n"
                   "## Other\n`sizing-hd-rounds-2` is another run; results/sizing-hd-roundsx too\n")
    found = legacy_results.described_in("x/sizing-hd-rounds-20261126.json", [str(doc)])
    assert found == [f"{doc}: Rounds"]
    found = legacy_results.described_in("sizing-sd828-from256k-20261126.json", [str(doc)])
    assert found == [f"{doc}: Starts from below"]
    assert legacy_results.described_in("sizing-mixed-v2-20261125.json", [str(doc)]) == []
