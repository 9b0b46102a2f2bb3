"""The benchmark's method (issue 24): the steady-state verdict on recorded
series, disk time and queue wait from counter snapshots, the other-load
CPU meter, the probe journal and the run summary, and a real resumed run
(killed after its first persisted probe, resumed without redoing it;
refused at another commit)."""
import gzip
import json
import math
import os
import signal
import subprocess
import sys
import time

import pytest

from conftest import ROOT, bin_path
from libception import cmd_bench as bench_cli, results, summary
from libception.bench import common, cpumeter, demo, disktime, journal, probe, steady

LIBCEPTION = bin_path("libception")
T = [5.0 * i for i in range(81)]          # 200 s of warm-up + 200 s judged, every 5 s
LIMIT = 8 << 30


def ramp_then_flat(level):
    """Active sessions rising through the warm-up, level afterwards (with
    Poisson-like wobble)."""
    return [round(min(t, 160) / 160 * level) + (7 if i % 3 == 0 else -5)
            for i, t in enumerate(T)]


def test_steady_when_sessions_level_off_and_memory_fills():
    usage = [min(LIMIT, int(LIMIT * t / 150)) for t in T]
    v = steady.verdict(T, ramp_then_flat(3100), 200, usage, LIMIT)
    assert v["steady"] and v["sessions_levelled"] and v["memory_full"], v
    assert abs(v["active_growth"]) < 0.02 and v["memory_peak_share"] == 1.0
    assert v["reasons"] == []


def test_still_rising_is_marked_not_steady():
    # The transient probes: a cold 100 s probe at 38% of steady state.
    rising = [round(t * 7.7) for t in T]
    usage = [LIMIT] * len(T)
    v = steady.verdict(T, rising, 200, usage, LIMIT)
    assert not v["steady"] and v["sessions_levelled"] is False and v["memory_full"]
    assert v["active_growth"] > 0.3
    assert any("rising" in r for r in v["reasons"])


def test_memory_never_reaching_the_limit_is_marked():
    # 2.5 GiB of 8.1: the limit never binds (the nginx vanilla).
    usage = [min(int(2.5 * 2**30), int(t * 2**25)) for t in T]
    v = steady.verdict(T, ramp_then_flat(3100), 200, usage, LIMIT)
    assert not v["steady"] and v["sessions_levelled"] and v["memory_full"] is False
    assert 0.25 < v["memory_peak_share"] < 0.35
    assert any("never reached its limit" in r for r in v["reasons"])


def test_too_short_a_window_cannot_be_called_steady():
    v = steady.verdict([0, 5, 10], [0, 10, 11], 5, [LIMIT] * 3, LIMIT)
    assert not v["steady"] and v["sessions_levelled"] is None
    assert "too short" in v["reasons"][0]


def test_when_the_carried_on_sessions_failed():
    """A probe dates the failures of its carried-on sessions from vidload's
    timeline: by when half of them, and all, had failed."""
    tl = {"t_s": [0, 5, 10, 15, 20, 25], "past_failed": [0, 0, 3, 8, 9, 10]}
    assert [probe._counted_by(tl, "past_failed", q) for q in (0.5, 1.0)] == [15, 25]
    assert probe._counted_by({"t_s": [0, 5], "past_failed": [0, 0]}, "past_failed", 1) is None
    assert probe._counted_by({"t_s": [0, 5], "active": [1, 1]}, "past_failed", 1) is None


def test_full_probes_start_from_a_past_and_the_demo_stays_bounded():
    full = common.search_settings(False, start=6)
    # in the steady state from the start: every session a past could
    # leave running (the longest video), then a warm-up of the server's
    # and the daemon's own state
    assert full["past_s"] == "longest"
    assert full["warmup_s"] >= 100 and full["duration"] >= 200 and full["seeds"] >= 3
    # The paper's experiment: 14,400 judged sessions, however long they take.
    assert probe.judged_seconds({**full, "judged_sessions": 14400}, 20.0) == 720.0
    assert probe.judged_seconds(full, 20.0) == full["duration"]
    d = demo.settings(False)
    assert d["method"] == "indicative" and d["search"]["seeds"] == 1
    assert d["search"]["past_s"] == 0   # a cold start: a past's fill would not fit the bound
    rates = demo.steps(d)
    assert rates == 2 * d["search"]["max_probes"]
    assert rates * probe.probe_seconds(d["search"]) <= 30 * 60


def test_stop_after_starts_no_probe_that_would_end_past_it(tmp_path):
    """Rig.check_time_left: the first probe is expected to take the
    scenario's estimate, later ones the longest measured; none is begun
    that would end past --stop-after, and without it nothing stops."""
    from libception.bench import rig as rigmod
    r = rigmod.Rig("demo", str(tmp_path), None, None, None)
    search = common.search_settings(False, start=6)
    r.check_time_left(search, "first")           # no --stop-after
    estimate = probe.probe_seconds(search)
    r.stop_at = time.monotonic() + estimate + 3600
    r.check_time_left(search, "first")           # an hour to spare
    r.stop_at = time.monotonic() + estimate - 60
    with pytest.raises(rigmod.TimeUp, match="first"):
        r.check_time_left(search, "first")
    r._longest = estimate / 2                    # probes ran shorter than the estimate
    r.check_time_left(search, "next")
    r._longest = estimate * 2
    r.stop_at = time.monotonic() + estimate + 300
    with pytest.raises(rigmod.TimeUp, match="next"):
        r.check_time_left(search, "next")
    assert bench_cli.parse_duration("150m") == 9000
    assert bench_cli.parse_duration("2.5h") == 9000 and bench_cli.parse_duration("90") == 90


def test_a_comparison_counts_each_probe_once():
    """The estimate and the progress count rates x seeds; a comparison's
    steps counted its seeds as well, and the estimate multiplied them
    again (nginx's five-kind compare: "360 rates x 3 seeds", 1,080
    probes, for 360)."""
    from libception import cmd_bench
    from libception.bench import compare
    s = compare.settings(False)
    assert compare.steps(s) == s["rounds"] * len(s["kinds"]) * compare.PROBES
    assert cmd_bench.seeds_of(compare.settings(True)) == [1, 2]   # its own, not its search's 1
    assert cmd_bench.seeds_of(demo.settings(False)) == [1]


def test_disk_time_splits_busy_time_and_sizes():
    before = {"bytes": 0, "reads": 10, "busy_s": 1.0, "position_s": 0.6, "transfer_s": 0.3,
              "overhead_s": 0.1, "media_s": 0.3, "commands": 9, "commands_4k": 2,
              "commands_under_128k": 4, "commands_under_1m": 6, "commands_over_1m": 1}
    after = {"bytes": 200e6, "reads": 130, "busy_s": 9.0, "position_s": 3.6, "transfer_s": 4.3,
             "overhead_s": 1.1, "media_s": 4.3, "commands": 109, "commands_4k": 12,
             "commands_under_128k": 24, "commands_under_1m": 56, "commands_over_1m": 11}
    d = disktime.disk_time(disktime.summed([before]), disktime.summed([after]), 10.0)
    assert d["busy_s"] == 8.0 and d["position_s"] == 3.0 and d["transfer_s"] == 4.0
    assert d["transfer_share"] == 0.5 and d["busy_share"] == 0.8 and d["mb_per_s"] == 20.0
    assert d["reads"] == 120
    assert d["commands"] == {"<=4K": 10, "4K-128K": 10, "128K-1M": 30, "1M": 40, ">1M": 10}
    assert sum(d["commands"].values()) == 100


def test_transfer_share_counts_what_the_drive_read_ahead():
    # Commands the drive's cache served move at the interface's speed
    # (transfer_s 0.5 s), but their bytes took 3.5 s of the platter's time
    # while it read ahead: that is transfer, not idle.
    after = {"busy_s": 3.0, "position_s": 2.0, "transfer_s": 0.5, "overhead_s": 0.5,
             "media_s": 3.5, "bytes": 400e6}
    d = disktime.disk_time(disktime.summed([{}]), disktime.summed([after]), 10.0)
    assert d["transfer_share"] == round(3.5 / 6.0, 4) and d["busy_share"] == 0.3


def test_queue_wait_quantiles_of_the_interval_only():
    def stats(buckets):
        return {"devices": [{"wait_us": {"count": sum(c for _, c in buckets),
                                         "buckets": buckets}}]}
    # Before the probe: 1,000 long waits; during it: 98 of 1 ms, 2 of 100 ms.
    before = stats([[1023.0, 5], [524287.0, 1000]])
    after = stats([[1023.0, 103], [102399.0, 2], [524287.0, 1000]])
    w = disktime.queue_wait(before, after)
    assert w == {"count": 100, "p50": 1.023, "p99": 102.399, "max": 102.399}
    assert disktime.queue_wait(None, after) is None
    assert disktime.queue_wait(after, after)["count"] == 0


def test_disk_time_per_window_the_daemon_served():
    rec = {"disk_time": {"position_s": 30.0, "transfer_s": 45.0, "mb_per_s": 30.0,
                         "elapsed_s": 200.0},
           "queue_wait_ms": {"count": 2000, "p99": 700.0}}
    w = disktime.per_window(rec)
    assert w["position_ms"] == pytest.approx(15.0) and w["transfer_ms"] == pytest.approx(22.5)
    assert w["disk_mb"] == pytest.approx(3.0)
    # no daemon, no windows, no hddsim: no figure
    assert disktime.per_window({**rec, "queue_wait_ms": None}) is None
    assert disktime.per_window({**rec, "queue_wait_ms": {"count": 0}}) is None
    assert disktime.per_window({**rec, "disk_time": None}) is None


def test_a_timeline_sample_says_how_busy_the_disk_and_the_queue_were_since_the_last():
    def stats(buckets):
        return {"devices": [{"wait_us": {"count": sum(c for _, c in buckets),
                                         "buckets": buckets}}]}
    a = (5.0, 10.0, stats([[1023.0, 5]]))
    b = (10.0, 14.5, stats([[1023.0, 55], [2097151.0, 50]]))
    assert probe.interval_figures(None, a) == (None, None, None)
    assert probe.interval_figures(a, b) == (0.9, 100, 2097.151)
    # no hddsim, no daemon: nothing to say
    assert probe.interval_figures((5.0, None, None), (10.0, None, None)) == (None, None, None)


def test_cpu_meter_counts_a_busy_loop_as_other_unless_it_is_ours():
    loop = subprocess.Popen([sys.executable, "-c", "while True: pass"])
    try:
        not_ours = lambda procs: {os.getpid()}                      # noqa: E731
        ours = lambda procs: cpumeter.descendants(os.getpid(), procs)  # noqa: E731
        with cpumeter.CpuMeter(not_ours, interval=0.2) as a, \
                cpumeter.CpuMeter(ours, interval=0.2) as b:
            cpu0 = cpumeter.process_cpu()[loop.pid][1]
            time.sleep(1.5)
            cpu1 = cpumeter.process_cpu()[loop.pid][1]
    finally:
        loop.kill()
        loop.wait()
    spent = cpu1 - cpu0
    assert spent > 0
    # The same machine, the same seconds: the difference is the loop's CPU.
    diff = a.result()["cpu_s"] - b.result()["cpu_s"]
    assert abs(diff - spent) <= 0.15 + 0.3 * spent, (diff, spent)
    # the one rule: disturbed above the threshold; None records, never judges
    cores = a.result()["cores"]
    assert a.verdict(cores / 2)["disturbed"] and not a.verdict(cores * 2)["disturbed"]
    assert a.verdict(None) == {**a.result(), "threshold": None, "disturbed": False}


def test_cpu_meter_records_what_the_hypervisor_stole():
    m = cpumeter.CpuMeter(lambda procs: set())
    m._t0, m._t1 = 0.0, 10.0
    m._last = ((100.0, 5.0), {})
    m._account(((108.0, 7.5), {}))      # 8 s busy, 2.5 s stolen, over 10 s
    r = m.result()
    assert (r["cores"], r["machine_cores"], r["steal_cores"]) == (0.8, 0.8, 0.25)


def _probe(rate, seed, ok=True):
    return {"rate": rate, "seed": seed, "pass": ok, "failed_pct": 0.0 if ok else 2.5,
            "started": 100, "mb_per_s": 40.0, "max_active": 300, "settle_s": 0.0,
            "disk_time": {"mb_per_s": 55.5, "transfer_share": 0.4, "busy_share": 0.9,
                          "position_s": 0.135, "transfer_s": 0.2, "elapsed_s": 0.36},
            "queue_wait_ms": {"count": 9, "p50": 1.0, "p99": 7.5, "max": 8.0},
            "steady": {"steady": ok}, "other_cpu": {"cores": 0.1}, "cgroup_limit": LIMIT,
            "boot_id": "b1"}


def test_journal_survives_a_cut_last_line_and_finds_probes(tmp_path):
    j = journal.Journal(str(tmp_path), "abc")
    point = {"config": "nginx vanilla"}
    j.add(point, "vanilla", _probe(4.0, 1), attempt=1, superseded=True)
    j.add(point, "vanilla", _probe(4.0, 1))
    j.add(point, "vanilla", _probe(8.0, 1, ok=False))
    path = tmp_path / journal.NAME
    whole = path.read_bytes()
    path.write_bytes(whole[:-25])         # killed mid-write
    again = journal.Journal(str(tmp_path), "abc")
    assert again.find(point, 4, 1)["pass"] and again.find(point, 8, 1) is None
    again.add(point, "vanilla", _probe(6.0, 1))
    entries = journal.read(str(path))     # what was appended after the cut is readable
    assert [(e["rate"], e["superseded"]) for e in entries] == \
        [(4.0, True), (4.0, False), (6.0, False)]
    assert entries[0]["git_commit"] == "abc" and entries[0]["measured_at"]


def test_a_carried_journal_keeps_every_decision_and_drops_the_bulk(tmp_path):
    measured, carried = tmp_path / "measured", tmp_path / "carried"
    measured.mkdir()
    carried.mkdir()
    j = journal.Journal(str(measured), "abc")
    point = {"config": "nginx vanilla"}
    bulky = {"timeline": {"t_s": list(range(80))}, "daemon_stats": {"devices": [{}]},
             "calls": {"sendfile": {}}, "memory_lists": {"active": 1}}
    j.add(point, "vanilla", {**_probe(4.0, 1, ok=False), **bulky}, attempt=1, superseded=True)
    j.add(point, "vanilla", {**_probe(4.0, 1), **bulky, "parts": [dict(bulky, mb_per_s=3)]},
          attempt=2)
    with gzip.open(measured / journal.NAME, "at") as f:   # a journal of an older commit
        f.write(json.dumps({"point": point, "tag": "vanilla", "rate": 2.0, "seed": 1,
                            "attempt": 1, "superseded": False,
                            "probe": {k: v for k, v in _probe(2.0, 1).items() if k != "boot_id"},
                            "git_commit": "abc", "measured_at": "2026-11-27T00:00:00+00:00"})
                + "\n")
    dest = carried / journal.NAME
    entries = journal.carry(str(measured), str(dest))
    assert len(entries) == 3 and journal.commits(entries) == ["abc"]
    here = results.boot_id()
    assert here and [e["probe"]["boot_id"] for e in entries] == ["b1", "b1", here]
    back = journal.read(str(dest))
    assert [(e["superseded"], e["attempt"]) for e in back] == [(True, 1), (False, 2), (False, 1)]
    kept = journal.Journal(str(carried), "abc").find(point, 4, 1)
    assert kept["pass"] and kept["steady"] == {"steady": True} and kept["failed_pct"] == 0.0
    assert not set(journal.BULKY) & (set(kept) | set(kept["parts"][0]))
    assert kept["parts"][0]["mb_per_s"] == 3
    assert dest.stat().st_size < (measured / journal.NAME).stat().st_size
    with pytest.raises(ValueError, match="no probes"):
        journal.carry(str(tmp_path), str(tmp_path / "nothing.gz"))


def test_summary_round_trip(tmp_path):
    res = results.Results(str(tmp_path / "demo.json"), "demo",
                          settings={"drive": "wd-red", "library": {"count": 60},
                                    "search": {"seeds": 3}, "method": "steady"})
    res.data["command"] = ["libception", "bench", "demo"]
    j = journal.Journal(str(tmp_path), res.commit)
    van, lc = {"config": "nginx vanilla"}, {"config": "nginx libception"}
    at4 = [_probe(4.0, s) for s in (1, 2, 3)]
    for r in at4 + [_probe(8.0, 1, ok=False)]:
        j.add(van, "vanilla", r)
    rerun = {**_probe(6.0, 1), "rerun": {"why": "other load"}}
    j.add(lc, "libception", {**rerun, "rerun": None}, superseded=True)
    j.add(lc, "libception", rerun)
    res.add(van, config={"server": "nginx", "mode": "vanilla"}, answer=4.0, failed_above=8.0,
            at_answer=at4[-1], probes=[])
    # a tuning challenge: one probe at a fixed rate, failed: no answer
    challenge = {"config": "nginx vanilla, 32 workers"}
    res.add(challenge, config={"server": "nginx"}, rate=8.0, probe=_probe(8.0, 1, ok=False))
    s = summary.summarize(results.load(res.path), journal.read(j.path))
    text = json.dumps(s)
    assert len(text) < 4096
    back = json.loads(text)
    assert back["schema"] == "libception-bench-summary" and back["version"] == 1
    m = back["metadata"]
    assert m["command"] == ["libception", "bench", "demo"] and m["method"] == "steady"
    assert m["probes"] == 5 and m["reruns"] == 1 and m["not_steady"] == 1
    assert m["boots"] == 1      # each probe names the boot that measured it
    assert m["disk"] == {"drive": "wd-red", "library": {"count": 60}, "memory_limit": LIMIT,
                         "kind": None, "fs": None}
    assert m["commits"] == [res.commit] and m["measured"][0] <= m["measured"][1]
    a_van, a_ch, a_lc = back["answers"]   # runs first, then points only the journal holds
    assert a_van["answer"] == 4.0 and a_van["failed_above"] == 8.0
    assert a_van["at_answer"]["transfer_share"] == 0.4 and a_van["at_answer"]["busy_share"] == 0.9
    assert a_lc["point"] == lc and a_lc["unfinished"] and a_lc["answer"] is None
    assert a_ch["point"] == challenge and (a_ch["answer"], a_ch["failed_above"]) == (None, 8.0)
    rows = summary.probes_of(back)
    assert [(r["answer"], r["rate"], r["seed"], r["pass"], r["rerun"]) for r in rows] == \
        [(0, 4.0, 1, True, False), (0, 4.0, 2, True, False), (0, 4.0, 3, True, False),
         (0, 8.0, 1, False, False), (2, 6.0, 1, True, True)]
    assert rows[0]["queue_wait_p99_ms"] == 7.5 and rows[0]["disk_mb_per_s"] == 55.5
    p = subprocess.run([LIBCEPTION, "results", "summarize", str(tmp_path), "-o",
                        str(tmp_path / "s.json")], capture_output=True, text=True)
    assert p.returncode == 0, p.stderr
    assert json.loads((tmp_path / "s.json").read_text()) == back


def test_a_comparisons_summary_keeps_every_round_and_interval_and_prints_as_results_md(tmp_path):
    """`libception results table` prints a compare run as docs/results.md
    shows it, from the summary, which keeps the compare's rounds, ratios
    and figures at the answers."""
    from libception import results_table
    from libception.bench import compare
    s = compare.settings(True)
    s.update(rounds=2, seeds=3, resamples=200, kinds=["vanilla", "libception"],
             answer_targets=[{"config": "libception", "metric": "transfer_share",
                              "at_least": 0.75}])
    res = results.Results(str(tmp_path / "compare.json"), "compare",
                          settings={"drive": "wd-red", "library": {"preset": "sd", "count": 60},
                                    "disk": "block", "fs": "ext4", "method": "steady"})
    res.data["command"] = ["libception", "bench", "compare", "--set",
                           'kinds=["vanilla","libception"]']
    j = journal.Journal(str(tmp_path), res.commit)
    rounds = []
    for n, order in ((1, ["vanilla", "libception"]), (2, ["libception", "vanilla"])):
        outcomes = {}
        for label in order:
            top = {"vanilla": 4.0, "libception": 8.0 if n == 1 else 10.0}[label]
            point = {"part": "round", "round": n, "config": label}
            probes = [_probe(r, seed, ok=r <= top) for r in (4.0, 8.0, 10.0, 12.0)
                      for seed in (1, 2, 3)]
            for p in probes:
                j.add(point, label, p)
            outcomes[label] = {"answer": top, "failed_above": top * 2, "probes": probes,
                               "git_commit": res.commit}
            res.add(point, config={"server": "nginx", "mode": label}, **outcomes[label],
                    at_answer=probes[-1])
        rounds.append({"n": n, "order": order, "outcomes": outcomes, "disturbance": None,
                       "rerun_of": None})
    res.add(summary.COMPARISON, note="tuned", **compare.summarize(rounds, ["vanilla", "libception"], s))
    back = json.loads(json.dumps(summary.summarize(results.load(res.path),
                                                   journal.read(j.path))))
    cmp = back["comparison"]
    assert "point" not in cmp and cmp["note"] == "tuned"
    assert [r["answers"] for r in cmp["rounds"]] == [{"vanilla": 4.0, "libception": 8.0},
                                                     {"vanilla": 4.0, "libception": 10.0}]
    assert cmp["ratios"][0]["ratio"] == pytest.approx(math.sqrt(5))   # 2 and 2.5, geometric
    assert back["metadata"]["disk"]["kind"] == "block"
    text = "\n".join(results_table.markdown(back))
    assert "on the block disk (ext4), 60 SD videos" in text
    assert "    libception bench compare --set 'kinds=[\"vanilla\",\"libception\"]'" in text
    assert "| 1 | vanilla libception | 4 | 8 | - |" in text      # every round, in its order
    assert "| 2 | libception vanilla | 4 | 10 | - |" in text
    assert "| libception / vanilla | 2.24 |" in text and "| 2.00 2.50 | >= 2 |" in text
    # per window (9 queue waits): 15 ms positioning, 2.22 MB from the disk
    assert ("| libception | 0.4 (0.4-0.4) | 0.9 (0.9-0.9) | 7.5 (7.5-7.5) | 15 (15-15) | "
            "2.22 (2.22-2.22) | nginx, libception") in text
    assert "| positioning per window (ms) | disk MB per window |" in text
    assert "| libception | disk transferring | >= 0.75 | 0.4 (0.4-0.4) | **not met** |" in text
    p = subprocess.run([LIBCEPTION, "results", "table", str(tmp_path)],
                       capture_output=True, text=True)
    assert p.returncode == 0, p.stderr
    assert p.stdout == text + "\n"


def _daemon(pid, uptime, misses, let_go, dropped):
    return {"pid": pid, "uptime_s": uptime,
            "devices": [{"misses": misses, "abandoned": dropped}],
            "watch": {"answered_at_deadline": let_go}}


def test_probe_rows_show_each_probes_own_share_of_the_daemons_counters(tmp_path):
    """`libception results probes` prints every probe in the journal's
    order; the daemon's counters are cumulative over its life, so a row
    shows the difference from the same daemon's previous probe, and a
    daemon that starts again (a new round, or the same pid with a smaller
    uptime) starts from zero."""
    from libception import probe_table
    j = journal.Journal(str(tmp_path), "abc")
    van = {"part": "round", "round": 1, "config": "vanilla"}
    watch = {"part": "round", "round": 1, "config": "watch"}
    j.add(van, "vanilla", {**_probe(4.0, 1), "failed": 0, "past": {"failed": 3, "running": 40},
                           "warmup_failed": 1, "warmup_started": 50,
                           "disk_time": {"busy_share": 0.999, "transfer_share": 0.13,
                                         "commands": {"<=4K": 12, "4K-128K": 3400}}})
    j.add(watch, "watch", {**_probe(6.0, 1), "daemon_stats": _daemon(7, 300.0, 100, 10, 4)})
    j.add(watch, "watch", {**_probe(6.0, 2), "daemon_stats": _daemon(7, 610.0, 250, 10, 9)},
          attempt=1, superseded=True)
    j.add(watch, "watch", {**_probe(6.0, 2), "daemon_stats": _daemon(7, 900.0, 400, 35, 9)})
    j.add(watch, "watch", {**_probe(7.0, 1), "daemon_stats": _daemon(7, 280.0, 90, 0, 1)})
    j.add(watch, "watch", {**_probe(7.0, 2), "daemon_stats": None})
    rows = probe_table.rows(journal.read(j.path))
    assert [r[0] for r in rows] == [1, 2, "3 superseded", 4, 5, 6]
    assert rows[0][1:12] == ["vanilla", "4", 1, "0/100", "1/50", "3/40", "100%", "13%",
                             "12, 3400", "8", "0.1"]
    assert rows[0][12:] == ["-", "-", "-"]                    # no daemon
    assert [r[12:] for r in rows[1:]] == [[100, 10, 4], [150, 0, 5], [150, 25, 0],
                                          [90, 0, 1], ["-", "-", "-"]]
    assert rows[1][8] == "40%" and rows[1][10] == "8"
    assert probe_table.rows(journal.read(j.path), first=4) == rows[3:]
    assert "(not steady)" in probe_table.rows([{**journal.read(j.path)[0], "probe": {
        **_probe(8.0, 1, ok=False)}}])[0][8]
    p = subprocess.run([LIBCEPTION, "results", "probes", str(tmp_path), "--from", "5"],
                       capture_output=True, text=True)
    assert p.returncode == 0, p.stderr
    lines = p.stdout.splitlines()
    assert lines[0].startswith("| # | configuration | rate | seed |") and len(lines) == 4
    assert lines[2].startswith("| 5 | watch | 7 | 1 |") and lines[2].endswith("| 90 | 0 | 1 |")
    p = subprocess.run([LIBCEPTION, "results", "probes", str(tmp_path / "none")],
                       capture_output=True, text=True)
    assert p.returncode == 1 and "no such journal" in p.stderr


def _kept(path):
    return [(e["point"]["config"], e["rate"], e["seed"])
            for e in journal.read(str(path)) if not e["superseded"]]


def _wait_for(cond, proc, timeout):
    deadline = time.monotonic() + timeout
    while not cond():
        assert proc.poll() is None, proc.stderr.read()
        assert time.monotonic() < deadline
        time.sleep(0.2)


def _resume_for_one_more_probe(cmd, path, kept_before):
    """Run `cmd` until its journal keeps one more probe, stop it with
    SIGTERM; its stderr."""
    run = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        _wait_for(lambda: len(_kept(path)) > kept_before, run, 120)
        run.send_signal(signal.SIGTERM)
        return run.communicate(timeout=60)[1]
    finally:
        if run.poll() is None:
            run.kill()
            run.wait()


def test_resumed_run_does_not_redo_a_persisted_probe(scratch, harness_port):
    out = scratch / "run"
    cmd = [LIBCEPTION, "bench", "demo", "--quick", "--duration", "3", "--warmup", "1",
           "--out", str(out), "--port", str(harness_port)]
    path = out / journal.NAME
    first = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        _wait_for(lambda: path.exists() and _kept(path), first, 120)
        first.send_signal(signal.SIGTERM)
        assert first.wait(timeout=60) == 130
    finally:
        if first.poll() is None:
            first.kill()
            first.wait()
    done = _kept(path)
    assert done and done[0] == ("nginx vanilla", 2.0, 1)
    probe = journal.read(str(path))[0]["probe"]
    assert probe["warmup_s"] == 1 and probe["timeline"]["active"] and probe["disk_time"]
    tl = probe["timeline"]
    assert len(tl["disk_busy"]) == len(tl["windows"]) == len(tl["t_s"]), tl
    assert "steady" in probe and "cores" in probe["other_cpu"]
    err = _resume_for_one_more_probe(cmd + ["--resume"], path, len(done))
    kept = _kept(path)
    assert kept[:len(done)] == done and len(set(kept)) == len(kept), kept
    assert "skip vanilla: 2 sessions/s" in err
    # On another machine the run is its carried journal alone.
    moved = scratch / "moved"
    moved.mkdir()
    p = subprocess.run([LIBCEPTION, "results", "carry", str(out), str(moved / journal.NAME)],
                       capture_output=True, text=True, timeout=60)
    measured = len(journal.read(str(path)))
    assert p.returncode == 0 and f": {measured} probe" in p.stdout, p.stderr
    err = _resume_for_one_more_probe(cmd[:-4] + ["--out", str(moved), "--port",
                                                 str(harness_port), "--resume"],
                                     moved / journal.NAME, len(kept))
    assert _kept(moved / journal.NAME)[:len(kept)] == kept
    assert "skip vanilla: 2 sessions/s" in err


def _git(*args):
    return subprocess.run(["git", "-C", ROOT, *args], capture_output=True, text=True,
                          timeout=30, check=True).stdout


def test_resume_across_commits_names_what_changed(scratch, harness_port):
    """A run of another commit is refused without --across-commits and
    continued with it; the results name the files changed in between, and
    the next resume at this commit needs no flag and skips what is done."""
    parent = subprocess.run(["git", "-C", ROOT, "rev-parse", "-q", "--verify", "HEAD~1"],
                            capture_output=True, text=True, timeout=30)
    if parent.returncode:
        pytest.skip("a shallow clone knows no commit before its own")
    now, was = results.git_commit(), parent.stdout.strip()
    out = scratch / "crossed"
    out.mkdir()
    path = out / journal.NAME
    journal.Journal(str(out), was).add({"config": "nginx vanilla"}, "vanilla", _probe(2.0, 1))
    cmd = [LIBCEPTION, "bench", "demo", "--quick", "--duration", "3", "--warmup", "1",
           "--resume", "--out", str(out), "--port", str(harness_port)]
    p = subprocess.run(cmd, capture_output=True, text=True, timeout=60)
    assert p.returncode == 1 and len(p.stderr.strip().splitlines()) == 1
    assert was in p.stderr and "--across-commits" in p.stderr
    if now.endswith("-dirty"):   # a tree with changes names no commit to record
        p = subprocess.run(cmd + ["--across-commits"], capture_output=True, text=True,
                           timeout=60)
        assert p.returncode == 1 and "commit first" in p.stderr
        return
    results_json = out / "demo.json"
    run = subprocess.Popen(cmd + ["--across-commits"], stdout=subprocess.PIPE,
                           stderr=subprocess.PIPE, text=True)
    try:
        _wait_for(lambda: results_json.exists(), run, 60)
        run.send_signal(signal.SIGTERM)
        err = run.communicate(timeout=60)[1]
    finally:
        if run.poll() is None:
            run.kill()
            run.wait()
    changed = _git("diff", "--name-only", was, now).split()
    assert changed
    assert json.loads(results_json.read_text())["resumed_across"] == \
        [{"from": was, "to": now, "changed": changed}]
    assert f"changed in between: {', '.join(changed)}" in err
    err = _resume_for_one_more_probe(cmd, path, 1)
    assert "skip vanilla: 2 sessions/s" in err
    assert {e["git_commit"] for e in journal.read(str(path))} == {was, now}


def test_resume_is_refused_at_another_commit(scratch):
    out = scratch / "old"
    out.mkdir()
    old = {"schema": "libception-bench", "version": 1, "scenario": "demo",
           "git_commit": "0" * 40, "settings": {}, "runs": []}
    (out / "demo.json").write_text(json.dumps(old))
    p = subprocess.run([LIBCEPTION, "bench", "demo", "--quick", "--resume", "--out", str(out)],
                       capture_output=True, text=True, timeout=60)
    assert p.returncode == 1
    assert len(p.stderr.strip().splitlines()) == 1
    assert "0" * 40 in p.stderr and "same commit" in p.stderr
    # a directory holding only a carried journal answers by its probes' commit
    (out / "demo.json").unlink()
    journal.Journal(str(out), "1" * 40).add({"config": "nginx vanilla"}, "vanilla",
                                             _probe(2.0, 1))
    p = subprocess.run([LIBCEPTION, "bench", "demo", "--quick", "--resume", "--out", str(out)],
                       capture_output=True, text=True, timeout=60)
    assert p.returncode == 1 and len(p.stderr.strip().splitlines()) == 1
    assert "1" * 40 in p.stderr and "same commit" in p.stderr
