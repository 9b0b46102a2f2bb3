"""`libception results summarize`: the small summary docs/results/ keeps of
a run, from a raw results file of before issue 24's format and from a run
directory (SCENARIO.json beside probes.jsonl.gz)."""
import gzip
import hashlib
import json
import subprocess

from conftest import bin_path
from libception import summary


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
    s = summary.summarize_path(str(path))
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
    assert all(len(c["reason"]) <= summary.REASON for c in changes)
    cols = s["probe_columns"]
    assert cols[0] == "answer" and "transfer_share" not in cols   # no probe has it
    rows = [dict(zip(cols, r)) for r in s["probe_rows"]]
    assert [r["answer"] for r in rows] == [1, 1, 1]
    assert [r["rate"] for r in rows] == [4.0, 8.0, 6.0]
    assert rows[1]["failed_pct"] == 12.35 and rows[1]["policy_size"] == 2 << 20


def test_cli_writes_summaries_with_the_raw_commit(tmp_path):
    path = legacy_file(tmp_path)
    out = tmp_path / "summaries"
    r = subprocess.run([bin_path("libception"), "results", "summarize", str(path),
                        "--out-dir", str(out), "--raw-commit", "9999c70"],
                       capture_output=True, text=True, timeout=60)
    assert r.returncode == 0, r.stderr
    written = out / "sizing-x.json"
    s = json.loads(written.read_text())
    assert s["metadata"]["raw"]["git"] == "9999c70"
    assert written.stat().st_size < path.stat().st_size / 4
    # one answer and one probe per line: a rerun changes few lines
    assert len(written.read_text().splitlines()) >= 2 + 3 + 3


def test_run_directory_leaves_out_superseded_probes(tmp_path):
    run = tmp_path / "servers-1"
    run.mkdir()
    data = {"schema": "libception-bench", "version": 1, "scenario": "servers",
            "command": ["libception", "bench", "servers"], "method": "steady",
            "settings": {"drive": "wd-red"},
            "runs": [{"point": {"server": "nginx", "mode": "vanilla"}, "answer": 6.0}]}
    (run / "servers.json").write_text(json.dumps(data))
    point = data["runs"][0]["point"]
    lines = [{"point": point, "rate": 6.0, "seed": 1, "superseded": True,
              "probe": probe(6.0, 1, False, other_cpu={"cores": 1.5})},
             {"point": point, "rate": 6.0, "seed": 1,
              "probe": probe(6.0, 1, True, disk_time={"transfer_share": 0.61,
                                                       "busy_share": 0.9, "mb_per_s": 33.0},
                             rerun={"why": "other load"})}]
    with open(run / "probes.jsonl.gz", "wb") as f:
        for line in lines:   # each probe its own gzip member, as the harness appends them
            f.write(gzip.compress((json.dumps(line) + "\n").encode()))
    r = subprocess.run([bin_path("libception"), "results", "summarize", str(run)],
                       capture_output=True, text=True, timeout=60)
    assert r.returncode == 0, r.stderr
    s = json.loads((run / "summary.json").read_text())
    assert s["metadata"]["command"] == ["libception", "bench", "servers"]
    assert s["metadata"]["method"] == "steady" and s["metadata"]["reruns"] == 1
    rows = [dict(zip(s["probe_columns"], r)) for r in s["probe_rows"]]
    assert len(rows) == 1 and rows[0]["pass"] is True
    assert rows[0]["transfer_share"] == 0.61 and rows[0]["disk_mb_per_s"] == 33.0
    assert rows[0]["rerun"] == "other load"


def test_unreadable_path_is_one_line(tmp_path):
    r = subprocess.run([bin_path("libception"), "results", "summarize",
                        str(tmp_path / "missing.json")], capture_output=True, text=True,
                       timeout=60)
    assert r.returncode == 1 and r.stderr.count("\n") == 1 and "missing.json" in r.stderr
