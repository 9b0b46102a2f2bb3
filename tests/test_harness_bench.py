"""`libception bench`: the demo pipeline end to end on a tiny library
(hddsim, cgroup, receptiond, nginx, vidload), resume, and teardown when
interrupted.  Numbers from --quick runs are not meaningful; these tests
check the machinery, not the gain."""
import json
import os
import signal
import subprocess
import time

import pytest

from conftest import bin_path
from libception import cgroup

LIBCEPTION = bin_path("libception")


def _leftovers(out, pid):
    """Mounts under `out`, cgroups of run `pid`, processes using `out`."""
    mounts = []
    with open("/proc/self/mountinfo") as f:
        for line in f:
            if line.split()[4].startswith(str(out)):
                mounts.append(line.split()[4])
    base = "/sys/fs/cgroup/memory/libception"
    groups = [g for g in os.listdir(base) if g.startswith(f"bench-{pid}-")] \
        if os.path.isdir(base) else []
    procs = []
    for d in os.listdir("/proc"):
        if d.isdigit():
            try:
                cmd = open(f"/proc/{d}/cmdline", "rb").read().replace(b"\0", b" ").decode()
            except OSError:
                continue
            if str(out) in cmd:
                procs.append(cmd)
    return mounts, groups, procs


@pytest.fixture
def bench_out(scratch):
    out = scratch / "bench-out"
    yield out
    # Belt and braces: never leave a mount behind, even if the test failed.
    with open("/proc/self/mountinfo") as f:
        mps = [line.split()[4] for line in f if line.split()[4].startswith(str(out))]
    for mp in reversed(mps):   # the block disk's file system before hddsim under it
        subprocess.run(["umount", "-l", mp], check=False)


def test_demo_quick_end_to_end_then_resume(bench_out, harness_port):
    cmd = [LIBCEPTION, "bench", "demo", "--quick", "--duration", "4", "--warmup", "1",
           "--out", str(bench_out), "--port", str(harness_port)]
    p = subprocess.run(cmd, capture_output=True, text=True, timeout=600)
    assert p.returncode == 0, p.stderr[-2000:]
    assert "nginx vanilla" in p.stdout and "nginx libception" in p.stdout
    assert all(line.startswith("libception bench:") for line in p.stderr.splitlines())
    data = json.loads((bench_out / "demo.json").read_text())
    assert data["schema"] == "libception-bench" and data["version"] == 1
    assert data["settings"]["memory_ratio"] == 1 / 32
    runs = {r["point"]["config"]: r for r in data["runs"]}
    assert set(runs) == {"nginx vanilla", "nginx libception"}
    assert data["settings"]["disk"] == "block"   # the video scenarios' default
    for r in runs.values():
        assert r["config"]["disk"] == "block" and r["disk_queue"], r["config"]
        assert r["probes"], r
        for probe in r["probes"]:
            assert probe["errors"]["integrity"] == 0
            assert cgroup.held(probe["cgroup_max_usage"], probe["cgroup_limit"])
            assert probe["disk_mb_per_s"] is not None
            # it started from a past: sessions carried on, the group filled
            # while the emulated disk answered untimed
            past = probe["past"]
            assert past["running"] > 0 and 0 < past["filled_bytes"] <= probe["cgroup_limit"]
            assert past["fill_untimed"] is True
    # receptiond ran inside the cgroup and really prefetched for nginx.
    lc = runs["nginx libception"]["probes"][0]
    dev = lc["daemon_stats"]["devices"]
    assert dev and sum(d["bytes_read"] for d in dev) > 0
    for png in ("demo-rates.png", "demo-probes.png"):
        assert (bench_out / png).read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    assert _leftovers(bench_out, "") [0] == []
    # Resume: every point is already there, nothing is measured again.
    p2 = subprocess.run(cmd + ["--resume"], capture_output=True, text=True, timeout=120)
    assert p2.returncode == 0, p2.stderr[-2000:]
    assert p2.stderr.count("skip ") == 2
    assert "setting up" not in p2.stderr


@pytest.mark.parametrize("sig", [signal.SIGINT, signal.SIGTERM])
def test_interrupted_bench_leaves_nothing_behind(bench_out, harness_port, sig):
    p = subprocess.Popen([LIBCEPTION, "bench", "demo", "--quick", "--duration", "60",
                          "--out", str(bench_out), "--port", str(harness_port)],
                         stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        deadline = time.monotonic() + 120
        for line in p.stderr:  # the first probe has begun: everything is set up
            if " sessions/s, warm-up" in line or time.monotonic() > deadline:
                break
        # Mid-probe: mount, cgroup, nginx and vidload are all up.
        mounts, groups, procs = _leftovers(bench_out, p.pid)
        assert mounts and groups and procs
        p.send_signal(sig)
        rest = p.stderr.read()
        assert p.wait(timeout=60) == 130, rest
        assert "interrupted" in rest
    finally:
        if p.poll() is None:
            p.kill()
            p.wait()
    time.sleep(0.5)
    assert _leftovers(bench_out, p.pid) == ([], [], [])


def test_stop_after_stops_between_probes_and_leaves_nothing_behind(bench_out, harness_port):
    """--stop-after 0: everything is set up, no probe begins (it would end
    past the time), the run stops with 75 and leaves what --resume needs."""
    p = subprocess.run([LIBCEPTION, "bench", "demo", "--quick", "--stop-after", "0",
                        "--out", str(bench_out), "--port", str(harness_port)],
                       capture_output=True, text=True, timeout=300)
    assert p.returncode == 75, p.stderr[-2000:]
    assert "setting up" in p.stderr and "stopped between probes" in p.stderr
    assert f"--resume --out {bench_out}" in p.stderr
    assert (bench_out / "demo.json").exists()
    assert not (bench_out / "probes.jsonl.gz").exists()   # no probe ran
    assert _leftovers(bench_out, "") == ([], [], [])


def test_usage_and_bad_resume(bench_out, scratch):
    p = subprocess.run([LIBCEPTION, "bench", "nosuch"], capture_output=True, text=True)
    assert p.returncode == 2
    for bad in ("-1", "nan", "soon"):
        p = subprocess.run([LIBCEPTION, "bench", "demo", "--past", bad], capture_output=True,
                           text=True)
        assert p.returncode == 2 and p.stderr.count("\n") == 1 and "--past" in p.stderr
    for bad in ("-1", "nan", "inf", "5x", "m"):
        p = subprocess.run([LIBCEPTION, "bench", "demo", "--stop-after", bad],
                           capture_output=True, text=True)
        assert p.returncode == 2 and p.stderr.count("\n") == 1 and "--stop-after" in p.stderr
    bench_out.mkdir()
    (bench_out / "ablation.json").write_text(json.dumps(
        {"schema": "libception-bench", "version": 1, "scenario": "demo", "runs": []}))
    p = subprocess.run([LIBCEPTION, "bench", "ablation", "--quick", "--resume", "--out",
                        str(bench_out)], capture_output=True, text=True, timeout=60)
    assert p.returncode == 1
    assert p.stderr.startswith("libception bench: ") and "scenario" in p.stderr
    assert len(p.stderr.strip().splitlines()) == 1


def test_servers_scenario_screens_candidates_and_records_best(bench_out, harness_port):
    p = subprocess.run([LIBCEPTION, "bench", "servers", "--quick", "--duration", "4",
                        "--warmup", "1", "--only", "lighttpd", "--out", str(bench_out),
                        "--port", str(harness_port)], capture_output=True, text=True, timeout=900)
    assert p.returncode == 0, p.stderr[-2000:]
    data = json.loads((bench_out / "servers.json").read_text())
    screens = [r for r in data["runs"] if "screen" in r["point"]]
    assert len(screens) == len(data["settings"]["candidates"]["lighttpd"])
    best = json.loads((bench_out / "best.json").read_text())
    assert set(best) == {"lighttpd"}
    assert best["lighttpd"]["tunables"] in data["settings"]["candidates"]["lighttpd"]
    labels = [line for line in p.stdout.splitlines() if "lighttpd" in line]
    assert any("lighttpd libception" in line for line in labels)
    assert any("kernel tuning" in line for line in labels)
    assert (bench_out / "servers-throughput.png").exists()


def test_diff_scenario_runs_balanced_rounds_with_the_real_file_systems_output(bench_out):
    p = subprocess.run([LIBCEPTION, "bench", "diff", "--quick", "--out", str(bench_out)],
                       capture_output=True, text=True, timeout=900)
    assert p.returncode == 0, p.stderr[-2000:]
    data = json.loads((bench_out / "diff.json").read_text())
    runs = [r for r in data["runs"] if "mode" in r["point"]]
    assert len(runs) >= 8
    assert all(r["identical"] for r in runs), [r["point"] for r in runs if not r["identical"]]
    assert all("cores" in r["other_cpu"] for r in runs)
    # the counted rounds alternate (a round disturbed by other load runs
    # again in its own order first, so the printed numbering may differ)
    summary = next(r for r in data["runs"] if r["point"] == {"part": "summary"})
    counted = [r["order"] for r in summary["rounds"] if not r["disturbed"]]
    assert counted == [["vanilla", "libception"], ["libception", "vanilla"]]
    assert "round 1 (vanilla libception)" in p.stdout
    assert "2 concurrent: libception takes" in p.stdout
    assert (bench_out / "diff-times.png").exists()


def test_adaptive_starts_straddle_the_best_fixed_size():
    """issue 6: the adaptive policy starts once below and once above the
    best fixed size; past the sweep's ends it halves or doubles."""
    from libception.bench import sizing
    s = {"adaptive_starts": "around", "sizes": ["512K", "1M", "2M", "4M"]}
    assert sizing.adaptive_starts(s, "1M") == ["512K", "2M"]
    assert sizing.adaptive_starts(s, "512K") == ["256K", "1M"]
    assert sizing.adaptive_starts(s, "4M") == ["2M", "8M"]
    assert sizing.adaptive_starts(s, None) == ["512K", "4M"]
    assert sizing.adaptive_starts({**s, "adaptive_starts": ["3M"]}, "1M") == ["3M"]
    # a start below the paper's 512K step halves the step for every start
    assert sizing.adaptive_args({"adaptive": "interval=20s"}, ["256K", "1M"]) \
        == "interval=20s,step=256K"
    assert sizing.adaptive_args({"adaptive": "interval=20s"}, ["512K", "2M"]) == "interval=20s"


def test_rounds_compare_each_start_with_the_fixed_size_of_its_own_round():
    """issue 6, item 2: with rounds, a start's ratio is to the fixed
    answer of the same round (the machine drifts by a tenth over an hour),
    and a round missing either answer is left out, not counted as 0."""
    from libception.bench import sizing
    a = {("fixed", 1): 30, ("fixed", 2): 27, ("fixed", 3): 33,
         ("adaptive from 1M", 1): 27, ("adaptive from 1M", 2): 27,
         ("adaptive from 1M", 3): None, ("adaptive from 256K", 2): 30}
    assert sizing.round_ratios(a, "adaptive from 1M", 3) == [0.9, 1.0]
    assert sizing.round_ratios(a, "adaptive from 256K", 3) == [30 / 27]
    assert sizing.round_ratios(a, "adaptive from 2M", 3) == []
    lines = []
    sizing.print_rounds(a, ["adaptive from 1M", "adaptive from 2M"], 3, lines.append)
    assert lines == ["libception bench: rounds: fixed, against its round 1: 1.00 0.90 1.10",
                     "libception bench: rounds: adaptive from 1M / fixed of the same round: "
                     "0.90 1.00; mean 0.950 +- 0.050"]
    assert sizing.steps({"adaptive_starts": ["1M"], "fixed_again": False, "rounds": 3,
                         "sizes": ["512K"], "scales": []}) \
        == sizing.steps({"adaptive_starts": ["1M"], "fixed_again": False, "rounds": 1,
                         "sizes": ["512K"], "scales": []}) + 2 * 2 * sizing.PROBES


def test_a_trace_settles_when_its_size_stays_near_the_final_one():
    """issue 6, item 3: the convergence time of a size-over-time trace."""
    from libception.bench import sizing
    M = 1 << 20
    series = [{"t": t, "size": s} for t, s in
              [(2, 8 * M), (4, 6 * M), (6, 4 * M), (8, 5 * M), (10, 3 * M), (12, 4 * M)]]
    # 4M +- 512K: 3M at 10 s is the last size outside, so settled at 12 s
    assert sizing.settled_at(series, 4 * M, M // 2) == 12
    assert sizing.settled_at(series, 4 * M, M) == 6
    assert sizing.settled_at(series, 8 * M, 8 * M) == 2
    assert sizing.settled_at(series, None, M) is None
    assert sizing.settled_at(series[:0], 4 * M, M) is None


def test_chunking_read_runs_read_every_layout_whole(bench_out, harness_port):
    # The chunking paper's Table 1: one reader, whole videos; the same
    # videos in every layout, so every layout must deliver the same bytes
    # (each chunk file read to its end), from a mount torn down afterwards.
    p = subprocess.Popen([LIBCEPTION, "bench", "chunking", "--quick", "--only", "wc", "--out",
                          str(bench_out), "--port", str(harness_port)],
                         stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    out, err = p.communicate(timeout=300)
    assert p.returncode == 0, err
    runs = json.loads((bench_out / "chunking.json").read_text())["runs"]
    wc = {r["point"]["chunk"]: r for r in runs if r["point"].get("part") == "wc"}
    assert sorted(wc) == [0, 524288, 2097152]
    assert len({r["bytes"] for r in wc.values()}) == 1 and wc[0]["bytes"] > 0
    assert all(r["mb_per_s"] > 0 and r["videos"] == 5 for r in wc.values())
    assert "Table 1 (one reader" in out + err
    assert _leftovers(bench_out, p.pid) == ([], [], [])
