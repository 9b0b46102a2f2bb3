"""The benchmark's statistics and tuning procedure (issue 24, items 2 and
3), on synthetic experiments: the pass rule over seeds, the balanced
order of rounds, the bootstrap interval's coverage and the target rule;
tune() on synthetic score surfaces; and every candidate of the tuning
grid accepted by the real server's own configuration test."""
import io
import json
import math
import random

import pytest

from libception import servers
from libception.bench import search, stats, tuning


# --- a synthetic experiment -------------------------------------------------

def simulated_search(threshold, start, seeds, rel=0.1):
    """bench/search.py's bracketing with every seed run at every rate; a
    seed passes a rate at or below its threshold."""
    lo = hi = None
    probes = []
    while True:
        rate = search.next_rate(lo, hi, start, start / 16, start * 16, rel)
        if rate is None:
            return probes
        ok = True
        for s in seeds:
            passed = rate <= threshold[s]
            probes.append({"rate": rate, "seed": s, "pass": passed})
            ok = ok and passed
        lo, hi = (rate, hi) if ok else (lo, rate)


def experiment(rng, rounds, nseeds, ratio, drift=0.05, inter=0.03, noise=0.08,
               resamples=1000):
    """Configuration B is `ratio` times A.  Each round shifts both by a
    common drift, each configuration by its own round effect, and each
    seed's failure threshold by workload noise (log-normal)."""
    seeds = list(range(1, nseeds + 1))
    rounds_data = []
    for _ in range(rounds):
        d = rng.gauss(0, drift)
        rnd = {}
        for c, base in (("A", 10.0), ("B", 10.0 * ratio)):
            e = d + rng.gauss(0, inter)
            thr = {s: base * math.exp(e + rng.gauss(0, noise)) for s in seeds}
            rnd[c] = stats.verdicts_from_probes(simulated_search(thr, 6.0, seeds))
        rounds_data.append(rnd)
    return stats.ratio_interval(rounds_data, "B", "A", resamples=resamples,
                                seed=rng.randrange(1 << 30))


# --- the pass rule ----------------------------------------------------------

def test_a_rate_passes_only_on_enough_seeds_all_passing():
    assert stats.rate_verdict({1: True, 2: True, 3: True}) is True
    assert stats.rate_verdict({1: True, 2: True}) is None          # run another seed
    assert stats.rate_verdict({1: True, 2: False}) is False        # one failure decides
    assert stats.rate_verdict({1: True, 2: True}, min_seeds=2) is True
    assert stats.probe_passed({"failed_pct": 0.3, "errors": {}})
    assert not stats.probe_passed({"failed_pct": 0.31, "errors": {}})
    assert not stats.probe_passed({"failed_pct": 0.0, "errors": {"integrity": 1}})
    # the load it started with counts: a server that shed it fails
    shed = {"failed_pct": 0.0, "errors": {}, "past": {"running": 525, "failed": 328},
            "warmup_started": 388, "warmup_failed": 168}
    assert stats.unjudged_failed_pct(shed) == 100.0 * 496 / 913
    assert not stats.probe_passed(shed)
    assert stats.probe_passed({**shed, "past": {"running": 525, "failed": 1}, "warmup_failed": 1})
    assert not stats.probe_passed({**shed, "past": {"running": 525, "failed": 2}, "warmup_failed": 1})
    assert stats.probe_passed({**shed, "past": None, "warmup_started": 0, "warmup_failed": 0})


def test_the_answer_counts_only_rates_every_drawn_seed_ran_and_passed():
    v = stats.verdicts_from_probes([
        {"rate": 6, "seed": 1, "pass": True}, {"rate": 6, "seed": 2, "pass": True},
        {"rate": 12, "seed": 1, "pass": True}, {"rate": 12, "seed": 2, "pass": False},
        {"rate": 9, "seed": 1, "pass": True}, {"rate": 9, "seed": 2, "pass": True},
        {"rate": 10.5, "seed": 1, "pass": False},   # the search stopped: seed 2 not run
    ])
    assert stats.answer(v) == 9
    assert stats.answer(v, {2}) == 9        # 10.5 decides nothing for seed 2
    assert stats.answer(v, {1}) == 9        # failed 10.5: 12 above it does not count
    assert stats.answer({6.0: {1: False}}) is None
    # a disturbed probe run again counts by its last run
    v = stats.verdicts_from_probes([{"rate": 4, "seed": 1, "pass": False, "superseded": True},
                                    {"rate": 4, "seed": 1, "pass": True}])
    assert stats.answer(v) == 4


# --- the order of the rounds ------------------------------------------------

def test_two_configurations_run_abba():
    seq = "".join("AB"[i] for r in range(4) for i in stats.balanced_order(2, r))
    assert seq == "ABBABAAB"


def test_three_configurations_rotate_balanced():
    rows = [stats.balanced_order(3, r) for r in range(6)]
    assert all(sorted(r) == [0, 1, 2] for r in rows)
    for c in range(3):        # every configuration in every position twice
        assert sorted(r.index(c) for r in rows) == [0, 0, 1, 1, 2, 2]
    pairs = [(r[i], r[i + 1]) for r in rows for i in range(2)]
    assert all(pairs.count(p) == 2 for p in set(pairs)) and len(set(pairs)) == 6
    for k in range(0, 6, 2):  # each pair of rounds cancels a linear drift
        sums = {c: rows[k].index(c) + rows[k + 1].index(c) for c in range(3)}
        assert set(sums.values()) == {2}


# --- intervals and targets --------------------------------------------------

def test_bootstrap_interval_covers_the_true_ratio_at_four_rounds_by_four_seeds():
    rng = random.Random(7)
    runs = 200
    covered = sum(iv["low"] <= 2.0 <= iv["high"]
                  for iv in (experiment(rng, 4, 4, 2.0) for _ in range(runs)))
    # nominal 95%; 200 experiments resolve about +-3%
    assert 0.85 <= covered / runs <= 0.99, covered


def test_interval_narrows_with_more_seeds():
    def median_width(nseeds):
        rng = random.Random(3)
        w = sorted(math.log(iv["high"] / iv["low"]) for iv in
                   (experiment(rng, 4, nseeds, 2.0, drift=0, inter=0, noise=0.15, resamples=500)
                    for _ in range(60)))
        return w[len(w) // 2]
    assert median_width(8) < 0.85 * median_width(2)


def test_a_target_is_met_only_when_the_lower_end_clears_it():
    assert stats.target_met({"ratio": 2.3, "low": 2.0, "high": 2.6}, 2.0)
    assert not stats.target_met({"ratio": 2.3, "low": 1.95, "high": 2.6}, 2.0)
    assert not stats.target_met({"ratio": 2.3, "low": math.nan, "high": 2.6}, 2.0)


def test_every_round_is_in_the_table_and_the_ratio_is_paired_by_round():
    def v(rate):   # passes up to `rate` on seeds 1-3, fails 25% above
        return {rate: {1: True, 2: True, 3: True}, rate * 1.25: {1: False}}
    rounds = [{"A": v(8), "B": v(16)}, {"A": v(10), "B": v(20)}, {"A": v(4), "B": None}]
    table = stats.round_table(rounds, ["A", "B"])
    assert [r["answers"]["A"] for r in table] == [8, 10, 4]
    iv = stats.ratio_interval(rounds[:2], "B", "A", resamples=200)
    assert iv["ratio"] == pytest.approx(2.0) and [r["ratio"] for r in iv["rounds"]] == [2, 2]
    assert iv["low"] == pytest.approx(2.0) and iv["high"] == pytest.approx(2.0)


# --- tune() -----------------------------------------------------------------

def counting(fn):
    calls = []

    def evaluate(point):
        calls.append(point)
        return fn(point)
    return evaluate, calls


def test_tune_finds_the_optimum_of_a_separable_surface_within_the_budget():
    dims = tuning.grid("nginx", "vanilla")
    best = {"workers": 8, "aio_threads": 4, "sendfile_max_chunk": 524288}

    def surface(p):   # peaked at `best`, each dimension unimodal on its ladder
        return 100 - sum(abs(dict(dims)[k].index(p[k]) - dict(dims)[k].index(best[k])) ** 2
                         for k in best)
    evaluate, calls = counting(surface)
    out = tuning.tune(evaluate, dims, tuning.start_point("nginx", "vanilla"), budget=12)
    assert out["best"] == best and out["score"] == 100
    assert len(calls) <= 12 and len({str(sorted(c.items())) for c in calls}) == len(calls)


def test_tune_stops_a_direction_two_steps_past_its_best_and_walks_plateaus():
    ladder = list(range(8))
    scores = [1, 2, 3, 5, 4, 3, 9, 9]       # a better value beyond two worse is not seen
    evaluate, calls = counting(lambda p: scores[p["x"]])
    out = tuning.tune(evaluate, [("x", ladder)], {"x": 0}, budget=20)
    assert out["best"] == {"x": 3} and [c["x"] for c in calls] == [0, 1, 2, 3, 4, 5]
    scores = [1, 1, 1, 0, 4, 0, 0, 0]        # a tie is not worse: the plateau is crossed
    evaluate, calls = counting(lambda p: scores[p["x"]])
    out = tuning.tune(evaluate, [("x", ladder)], {"x": 0}, budget=20)
    assert out["best"] == {"x": 4} and [c["x"] for c in calls] == [0, 1, 2, 3, 4, 5, 6]
    # from the middle it walks down when up finds nothing better
    scores = [9, 5, 4, 3, 2, 1, 0, 0]
    evaluate, calls = counting(lambda p: scores[p["x"]])
    out = tuning.tune(evaluate, [("x", ladder)], {"x": 4}, budget=20)
    assert out["best"] == {"x": 0} and [c["x"] for c in calls] == [4, 5, 6, 3, 2, 1, 0]


def test_tune_tries_every_value_of_a_dimension_of_names():
    """The two-worse rule reads an order; schedulers have none.  Where the
    best is the last name, behind two worse ones, the search still finds it
    (a ladder of the same scores is given up two steps in)."""
    names = ["mq-deadline", "none", "bfq", "kyber"]
    scores = {"mq-deadline": 5, "none": 3, "bfq": 4, "kyber": 6}
    evaluate, calls = counting(lambda p: scores[p["scheduler"]])
    out = tuning.tune(evaluate, [("scheduler", names)], {"scheduler": "mq-deadline"})
    assert out["best"] == {"scheduler": "kyber"}
    assert [c["scheduler"] for c in calls] == names
    evaluate, calls = counting(lambda p: scores[p["scheduler"]])
    out = tuning.tune(evaluate, [("scheduler", names)], {"scheduler": "mq-deadline"},
                      unordered=())
    assert out["best"] == {"scheduler": "mq-deadline"} and len(calls) == 3
    assert "scheduler" in tuning.UNORDERED and "read_ahead_kb" not in tuning.UNORDERED


def test_tune_stops_at_its_budget_and_says_so():
    evaluate, calls = counting(lambda p: p["x"])
    out = tuning.tune(evaluate, [("x", list(range(30)))], {"x": 0}, budget=5)
    assert len(calls) == 5 and out["spent"] and out["best"] == {"x": 4}
    with pytest.raises(ValueError, match="not on its ladder"):
        tuning.tune(evaluate, [("x", [1, 2])], {"x": 3})


@pytest.mark.parametrize("disk", ["fuse", "block"])
def test_kernel_tuning_reaches_every_kernel_knob_within_the_budget(disk):
    """Even when the server's knobs would keep improving, kernel tuning's
    budget goes to its own knobs first; it starts from vanilla's winner."""
    vanilla_best = {"workers": 8, "aio_threads": 0, "sendfile_max_chunk": 0}
    dims = tuning.grid("nginx", "kernel", disk)
    ladder = dict(dims)

    def surface(p):   # read_ahead_kb best at 2048; more workers always better
        return (10 - abs(ladder["read_ahead_kb"].index(p["read_ahead_kb"]) - 4)
                + ladder["workers"].index(p["workers"]))
    evaluate, calls = counting(surface)
    start = tuning.start_point("nginx", "kernel", vanilla_best, disk)
    assert start["workers"] == 8 and start["read_ahead_kb"] == 128
    out = tuning.tune(evaluate, dims, start, budget=tuning.BUDGET)
    assert len(calls) <= tuning.BUDGET
    assert out["best"]["read_ahead_kb"] == 2048
    for knob, _ in tuning.KERNEL_GRID[disk]:
        assert len({c[knob] for c in calls}) > 1, knob   # every own knob was moved


def test_configure_maps_points_onto_the_rig_configuration():
    cfg = tuning.configure({"library": "L"}, "nginx", "libception",
                           {"window": "4M", "parallel": 2, "workers": 8, "aio_threads": 16,
                            "sendfile_max_chunk": 0})
    assert cfg["mode"] == "libception" and cfg["prefetch"] == "4M"
    assert cfg["policy"] == "fixed:4M,parallel=2" and cfg["library"] == "L"
    assert cfg["tunables"] == {"workers": 8, "aio": "threads", "thread_pool": 16,
                               "sendfile_max_chunk": 0}
    cfg = tuning.configure({}, "apache", "kernel", {**tuning.SERVER_START["apache"],
                                                    "read_ahead_kb": 512, "scheduler": "bfq"})
    assert cfg["mode"] == "vanilla" and cfg["read_ahead_kb"] == 512 and cfg["scheduler"] == "bfq"
    assert "read_ahead_kb" not in cfg["tunables"]
    # Apache starts as Debian ships it: maps files, no sendfile
    assert cfg["tunables"]["sendfile"] is False and cfg["tunables"]["mmap"] is True


# --- the grid against the real servers ---------------------------------------

def grid_candidates():
    for server, dims in tuning.SERVER_GRID.items():
        for name, values in dims:
            for v in values:
                yield server, {**tuning.SERVER_START[server], name: v}


def test_every_grid_value_is_accepted_by_the_real_server(scratch):
    """nginx -t, apache2 -t, lighttpd -tt on the generated configuration
    of every value of every dimension (the others at their start)."""
    root = scratch / "docroot"
    root.mkdir()
    refused = []
    for i, (server, point) in enumerate(grid_candidates()):
        cfg = tuning.configure({}, server, "vanilla", point)
        s = servers.make_server(server, scratch / f"w{i}", root, 18999, cfg["tunables"])
        try:
            s.check()
        except servers.ServerError as e:
            refused.append((point, str(e)))
    assert not refused
    bad = servers.make_server("nginx", scratch / "bad", root, 18999,
                              {"output_buffers": "nonsense"})
    with pytest.raises(servers.ServerError, match="configuration refused"):
        bad.check()


# --- bench compare's rounds, on a rig that answers from thresholds ----------

class ThresholdRig:
    """Just what compare.run uses of a rig; each configuration passes a
    rate at or below its threshold (x the seed's factor), and the round
    listed in `disturbed` records a disturbance in its first probe; in a
    round listed in `carried`, the last configuration was measured on
    another machine."""

    def __init__(self, out, thresholds, disturbed=(), carried=()):
        self.out, self.work = str(out), str(out)
        self.thresholds, self.disturbed, self.carried = thresholds, set(disturbed), set(carried)
        self.calls, self.lines, self.recorded = [], [], {}
        self.starts = {}   # (round, label): (start, growth) of its search
        self.results = self
        self.journal = None

    def get(self, point):
        return self.recorded.get(str(sorted(point.items())))

    def add(self, point, **values):
        self.recorded[str(sorted(point.items()))] = values

    def log(self, msg):
        self.lines.append(msg)

    log_plain = log

    def max_rate(self, cfg, tag, settings, point):
        label = point["config"]
        self.calls.append((point["round"], label))
        self.starts[(point["round"], label)] = (settings["start"], settings.get("growth"))
        probes = []
        for rate in (2.0, 4.0, 8.0, 16.0, 32.0):
            for seed in range(1, settings["seeds"] + 1):
                limit = self.thresholds[label] * (1 + 0.1 * seed)
                probes.append({"rate": rate, "seed": seed, "pass": rate <= limit})
        if point["round"] in self.disturbed:
            probes[0]["disturbance"] = "other processes used 0.9 cores"
        last = len([r for r, _ in self.calls if r == point["round"]]) == len(self.thresholds)
        for p in probes:
            p["boot_id"] = "b2" if point["round"] in self.carried and last else "b1"
        passed = [p["rate"] for p in probes if p["pass"]]
        return {"answer": max(passed), "failed_above": 32.0, "probes": probes,
                "git_commit": "c0ffee"}


def test_compare_runs_balanced_rounds_reports_every_one_and_reruns_a_disturbed_one(tmp_path):
    from libception.bench import compare
    s = compare.settings(True)
    s.update(disk="fuse", rounds=3, seeds=3, resamples=300)
    rig = ThresholdRig(tmp_path, {"vanilla": 4, "kernel": 7, "libception": 15}, disturbed={2})
    assert compare.run(rig, s) == 0
    rounds = [[lab for r, lab in rig.calls if r == n] for n in range(1, 5)]
    assert rounds[0] == ["vanilla", "kernel", "libception"]
    assert rounds[1] == rounds[2] == ["libception", "kernel", "vanilla"]  # the re-run keeps its order
    assert rounds[3] == ["kernel", "libception", "vanilla"]
    text = "\n".join(rig.lines)
    assert "UNTUNED" in text and "at commit c0ffee" in text
    assert "round 2:" in text and "DISTURBED (other processes used 0.9 cores)" in text
    assert "round 3:" in text and "re-run of round 2" in text
    summary = rig.get({"part": "summary"})
    assert [r["round"] for r in summary["rounds"]] == [1, 2, 3, 4] and summary["rounds_used"] == 3
    lib_van = summary["ratios"][0]
    assert (lib_van["num"], lib_van["den"]) == ("libception", "vanilla")
    assert lib_van["ratio"] == pytest.approx(4.0) and lib_van["met"]   # 16 / 4 every round
    assert "libception / vanilla: 4.00" in text and "target >= 2 met" in text


def test_untuned_kinds_start_later_rounds_at_their_first_answer(tmp_path):
    from libception.bench import compare
    s = compare.settings(True)
    s.update(disk="fuse", rounds=3, seeds=3, resamples=300, kinds=["vanilla", "libception"])
    rig = ThresholdRig(tmp_path, {"vanilla": 4, "libception": 15})
    assert compare.run(rig, s) == 0
    guess, step = s["search"]["start"], 1 + s["search"]["rel_resolution"]
    # round 1 searches from the guess, doubling; later rounds from round
    # 1's answer (4 and 16 on ThresholdRig's grid), by the resolution
    assert rig.starts[(1, "vanilla")] == rig.starts[(1, "libception")] == (guess, None)
    for n in (2, 3):
        assert rig.starts[(n, "vanilla")] == (4.0, step)
        assert rig.starts[(n, "libception")] == (16.0, step)


def test_a_round_that_two_machines_measured_is_run_again(tmp_path):
    from libception.bench import compare
    s = compare.settings(True)
    s.update(disk="fuse", rounds=2, seeds=3, resamples=300, kinds=["vanilla", "libception"])
    rig = ThresholdRig(tmp_path, {"vanilla": 4, "libception": 15}, carried={1})
    assert compare.run(rig, s) == 0
    assert [r for r, _ in rig.calls] == [1, 1, 2, 2, 3, 3]
    text = "\n".join(rig.lines)
    assert "DISTURBED (measured on 2 machines (carried midway))" in text
    assert "re-run of round 1" in text
    assert rig.get({"part": "summary"})["rounds_used"] == 2


class _Stop(Exception):
    """The session ends (the run is stopped between two probes)."""


def _carried_compare(tmp_path, monkeypatch, reruns):
    """A two-kind compare on a real Rig, Journal and Results (the setup and
    the probe replaced: each configuration passes at most its threshold),
    stopped on machine "old" one probe into round 2, its journal carried
    (`results carry`) to machine "new" and resumed there in a fresh
    directory, as a run carried midway is: the new machine has the
    journal and nothing else.  Returns (the second run's probes as (tag,
    rate, seed), its log, the journal's entries, the summary)."""
    from libception import progress, results
    from libception.bench import compare, journal, probe, rig as rigmod
    s = compare.settings(True)
    s.update(disk="fuse", rounds=2, seeds=2, resamples=300, reruns=reruns,
             kinds=["vanilla", "libception"])
    threshold = {"vanilla": 4, "libception": 15}
    measured, state = [], {"stop_at": None}

    class Handle:
        def __init__(self, tag):
            self.tag = tag

        def disk_record(self):
            return {}

    def fake_probe(rig, h, cfg, settings, rate, seed):
        if state["stop_at"] and state["stop_at"](h.tag):
            raise _Stop()
        measured.append((h.tag, rate, seed))
        label = h.tag.split("-", 1)[1]
        return {"rate": rate, "seed": seed, "pass": rate <= threshold[label] * (1 + 0.1 * seed),
                "failed_pct": 0.0, "mb_per_s": 1.0, "settle_s": 0,
                "other_cpu": {"disturbed": False}, "boot_id": results.boot_id()}

    monkeypatch.setattr(probe, "probe", fake_probe)
    monkeypatch.setattr(rigmod.Rig, "setup", lambda self, cfg, tag: Handle(tag))
    monkeypatch.setattr(rigmod.Rig, "teardown", lambda self, h: None)
    lines = []

    def run(boot, directory):
        monkeypatch.setattr(results, "boot_id", lambda: boot)
        res = results.Results(str(directory / "compare.json"), "compare", settings=s,
                              resume=True)
        rig = rigmod.Rig("compare", str(directory), None, progress.Progress(1, out=io.StringIO()),
                         res, log=lines.append)
        rig.journal = journal.Journal(str(directory), res.commit)
        rig.log_plain = lines.append
        return compare.run(rig, s), res

    # machine "old": round 1 whole, then one probe of round 2
    state["stop_at"] = lambda tag: tag.startswith("r2-") and any(
        t.startswith("r2-") for t, _, _ in measured)
    old, new = tmp_path / "old", tmp_path / "new"
    old.mkdir(), new.mkdir()
    with pytest.raises(_Stop):
        run("old", old)
    assert sum(t.startswith("r2-") for t, _, _ in measured) == 1
    journal.carry(str(old), str(new / journal.NAME))
    del measured[:], lines[:]
    state["stop_at"] = None
    assert run("new", new)[0] == 0
    entries = journal.read(str(new / journal.NAME))
    summary = results.load(str(new / "compare.json"))
    summary = next(r for r in summary["runs"] if r["point"] == {"part": "summary"})
    return measured, "\n".join(lines), entries, summary


def test_a_round_left_unfinished_on_another_machine_starts_again_here(tmp_path, monkeypatch):
    """Session 35 stopped nginx's compare one probe into round 2, and
    session 36 resumed it on a new machine: round 1, whole on the old
    machine, stands; round 2's one probe from there is superseded (kept in
    the journal, marked) and measured again here, and no round is re-run
    whole (before, round 2 was finished across two machines and re-run)."""
    measured, text, entries, summary = _carried_compare(tmp_path, monkeypatch, reruns=2)
    assert measured and all(tag.startswith("r2-") for tag, _, _ in measured)
    gone = [e for e in entries if e.get("superseded")]
    assert len(gone) == 1 and gone[0]["restart"]["round"] == 2
    assert gone[0]["restart"]["on"] == "new" and gone[0]["probe"]["boot_id"] == "old"
    assert (gone[0]["tag"], gone[0]["rate"], gone[0]["seed"]) == measured[0]
    assert "DISTURBED" not in text and "measuring again here what that machine measured of it (1 of its probes" in text
    assert [r["restarted"] for r in summary["rounds"]] == [0, 1]
    assert "round 2:" in text and "begun again after a move to another machine (1x" in text
    assert summary["rounds_used"] == 2 and len(summary["rounds"]) == 2
    # round 1, whole in the carried journal, is replayed along the path it
    # was measured on: its later-round start (round 1's answer) must not
    # leak into it (at 48403be it did, and Caddy's resume searched round 1
    # again from its answer)
    assert _round_probes(tmp_path / "new", 1) == _round_probes(tmp_path / "old", 1)


def _round_probes(directory, n):
    """Each configuration's probes (rate, seed) in round n of the compare
    in `directory`, in the order its search measured them."""
    from libception import results
    runs = results.load(str(directory / "compare.json"))["runs"]
    return {r["point"]["config"]: [(p["rate"], p["seed"]) for p in r["probes"]]
            for r in runs if r["point"].get("part") == "round" and r["point"]["round"] == n}


def test_a_restart_takes_one_of_the_reruns(tmp_path, monkeypatch):
    """With no re-run left, the unfinished round is finished here and
    counted as it ran, across two machines, and says so."""
    measured, text, entries, summary = _carried_compare(tmp_path, monkeypatch, reruns=0)
    assert not any(e.get("superseded") for e in entries)
    assert "no re-run left: counted" in text and "measured on 2 machines" in text
    assert [r["restarted"] for r in summary["rounds"]] == [0, 0]


class FiguresRig(ThresholdRig):
    """ThresholdRig whose probes carry the disk's time and, for libception,
    the daemon's queue wait: one value at the answer (16/s for
    libception, 4/s for vanilla), another at every other rate."""

    def max_rate(self, cfg, tag, settings, point):
        out = super().max_rate(cfg, tag, settings, point)
        label = point["config"]
        answer = {"libception": 16.0, "vanilla": 4.0}[label]
        for p in out["probes"]:
            at = p["rate"] == answer
            share = (0.8 if label == "libception" else 0.2) + 0.01 * p["seed"]
            p["disk_time"] = {"transfer_share": share if at else 0.5, "busy_share": 0.9,
                              "position_s": 30.0, "transfer_s": 60.0, "mb_per_s": 40.0,
                              "elapsed_s": 100.0}
            # 2,000 windows at the answer: 15 ms positioning and 2 MB each
            p["queue_wait_ms"] = ({"p99": 1500.0 if at else 9000.0, "count": 2000 if at else 1000}
                                  if label == "libception" else None)
        return out


def test_compare_reports_the_disk_and_the_queue_at_each_answer(tmp_path):
    from libception.bench import compare
    s = compare.settings(True)
    s.update(disk="fuse", rounds=2, seeds=3, resamples=300, kinds=["vanilla", "libception"],
             answer_targets=[
                 {"config": "libception", "metric": "transfer_share", "at_least": 0.75},
                 {"config": "libception", "metric": "queue_wait_p99_ms", "below": 2000},
                 {"config": "libception", "metric": "transfer_share", "at_least": 0.815},
                 {"config": "vanilla", "metric": "queue_wait_p99_ms", "below": 2000}])
    rig = FiguresRig(tmp_path, {"vanilla": 4, "libception": 15})
    assert compare.run(rig, s) == 0
    summary = rig.get({"part": "summary"})
    lib = summary["at_answer"]["libception"]
    # the probes at the answer only: seeds 1-3 give 0.81, 0.82, 0.83
    assert lib["transfer_share"]["mean"] == pytest.approx(0.82)
    assert 0.81 <= lib["transfer_share"]["low"] < 0.82 < lib["transfer_share"]["high"] <= 0.83
    assert lib["queue_wait_p99_ms"]["mean"] == pytest.approx(1500.0)
    assert lib["position_ms_per_window"]["mean"] == pytest.approx(15.0)
    assert lib["disk_mb_per_window"]["mean"] == pytest.approx(2.0)
    assert "queue_wait_p99_ms" not in summary["at_answer"]["vanilla"]   # no daemon, no figure
    assert "position_ms_per_window" not in summary["at_answer"]["vanilla"]
    assert [t["met"] for t in summary["answer_targets"]] == [True, True, False, False]
    text = "\n".join(rig.lines)
    assert "at the answer, libception: transfer_share 0.82" in text
    assert "libception queue_wait_p99_ms: 1500 (95% interval 1500-1500)" in text and "target < 2000 met" in text
    assert "target >= 0.815 NOT met" in text


def test_mean_interval_draws_rounds_then_seeds():
    from libception.bench import stats
    iv = stats.mean_interval([[1.0, 1.0], [3.0, 3.0], []], resamples=2000)
    assert iv["mean"] == 2.0 and iv["rounds"] == 2
    assert iv["low"] == 1.0 and iv["high"] == 3.0   # two rounds: all of one, all of the other
    flat = stats.mean_interval([[2.0, 2.0, 2.0]] * 4)
    assert flat["low"] == flat["high"] == 2.0
    assert math.isnan(stats.mean_interval([[], []])["mean"])


def test_diff_rounds_give_a_time_ratio_with_an_interval_and_leave_out_a_disturbed_round():
    from libception.bench import diff
    def rnd(n, v2, l2, disturbed=False):
        return {"round": n, "order": ["vanilla", "libception"], "disturbed": disturbed,
                "seconds": {("vanilla", 1): 2.0, ("libception", 1): 1.0,
                            ("vanilla", 2): v2, ("libception", 2): l2}}
    rounds = [rnd(1, 40.0, 4.0), rnd(2, 40.0, 40.0, disturbed=True), rnd(3, 50.0, 10.0),
              rnd(4, 40.0, 8.0)]
    s = dict(diff.settings(True), resamples=500)
    summary = diff.summarize(rounds, s)
    assert summary["rounds_used"] == 3
    one, two = summary["cuts"]
    assert one["ratio"] == pytest.approx(0.5) and "met" not in one
    assert two["per_round"] == pytest.approx([0.1, 0.2, 0.2])    # round 2 left out
    assert two["ratio"] == pytest.approx((0.1 * 0.2 * 0.2) ** (1 / 3))
    assert two["high"] == pytest.approx(0.2) and two["met"]      # at worst 80% shorter
    assert not diff.summarize(rounds, dict(s, target_cut=0.85))["cuts"][1]["met"]
    text = "\n".join(diff.report(summary))
    assert "round 2 (vanilla libception)" in text and "DISTURBED" in text
    assert "target >= 50% shorter met (at worst 80%)" in text


def vidload_errors(**counts):
    """A probe's "errors" as vidload gives them: every kind, most of them 0
    (an empty dict here once hid a test of `if errors:`, always true)."""
    return {k: counts.get(k, 0) for k in ("connect", "closed", "http", "deadline",
                                            "integrity", "client")}


class ScoreRig(ThresholdRig):
    """A rig whose max-rate answer is a function of the configuration."""

    def __init__(self, out, score):
        super().__init__(out, {})
        self.score, self.port, self.configs = score, 18999, []
        self.progress = self
        self.dropped = 0

    def wants(self, label):
        return label == "nginx"

    def drop(self, steps):
        self.dropped += steps

    def max_rate(self, cfg, tag, settings, point):
        if not point.get("confirmed"):
            self.configs.append((point["kind"], cfg))
        return {"answer": self.score(cfg), "probes": []}

    def probe_at(self, cfg, tag, point, settings, rate, what=None):
        self.configs.append((point["kind"], cfg))
        score = self.score(cfg)
        failed = 0.0 if rate <= score else 100.0 * (rate - score) / rate
        return {"probe": {"pass": rate <= score, "failed_pct": failed,
                          "errors": vidload_errors(deadline=int(failed))}}


def test_bench_tune_gives_every_kind_the_same_budget_from_vanillas_winner(tmp_path):
    import json
    from libception.bench import tune
    workers = {2: 4, 4: 6, 8: 8, 16: 8, 32: 7, 64: 6}
    # steps larger than the quick search's resolution (25 %): a smaller
    # gain is within what a search can tell apart, and a challenge misses it
    readahead = {128: 0, 256: 2, 512: 4, 1024: 6, 2048: 4, 4096: 2, 8192: 0}

    def score(cfg):
        rate = workers[cfg["tunables"]["workers"]] + readahead.get(cfg.get("read_ahead_kb"), 0)
        return rate * (2 if cfg["mode"] == "libception" else 1)
    s = tune.settings(True)
    s.update(disk="fuse", budget=6)   # the grid of read_ahead_kb alone
    rig = ScoreRig(tmp_path, score)
    assert tune.run(rig, s) == 0
    best = json.loads((tmp_path / tune.TUNED_FILE).read_text())["nginx"]
    assert best["vanilla"]["point"]["workers"] == 8 and best["vanilla"]["answer"] == 8
    assert best["kernel"]["point"]["read_ahead_kb"] == 1024 and best["kernel"]["answer"] == 14
    assert best["libception"]["answer"] == 16
    for kind in tuning.KINDS:
        tried = [cfg for k, cfg in rig.configs if k == kind]
        # a challenged candidate that won is searched too: counted once
        distinct = {json.dumps(c, sort_keys=True) for c in tried}
        assert len(distinct) == best[kind]["candidates"] <= 6
        if kind != "vanilla":   # from vanilla's winner, own knobs first
            assert tried[0]["tunables"]["workers"] == 8
            assert len({str(c.get("read_ahead_kb")) + str(c.get("prefetch")) for c in tried}) > 1
    assert any(line.startswith("libception bench: tune nginx kernel") for line in rig.lines)


# --- the search's step and the tuning's challenges ---------------------------

def test_a_search_from_a_measured_answer_steps_by_its_growth_not_by_doubling():
    assert search.next_rate(None, None, 10, 1, 160, 0.1) == 10
    assert search.next_rate(10, None, 10, 1, 160, 0.1) == 20             # a guess: doubling
    assert search.next_rate(10, None, 10, 1, 160, 0.1, growth=1.1) == 11
    assert search.next_rate(None, 10, 10, 1, 160, 0.1, growth=1.25) == 8
    assert search.next_rate(10, 11, 10, 1, 160, 0.1, growth=1.1) is None  # within resolution
    # a step of 1.1 rounded to 3 decimals is within it too, whichever way
    # it rounds (nginx's compare bisected 6.117-6.729, 10.005%, once more)
    for start in (6.117, 3.192, 9.75, 1.013, 27.777):
        up = search.next_rate(start, None, start, 1, 160, 0.1, growth=1.1)
        assert search.next_rate(start, up, start, 1, 160, 0.1, growth=1.1) is None, (start, up)
        down = search.next_rate(None, start, start, 0.1, 160, 0.1, growth=1.1)
        assert search.next_rate(down, start, start, 0.1, 160, 0.1, growth=1.1) is None, down
    assert search.next_rate(10, 11.05, 10, 1, 160, 0.1) == 10.525   # 10.5%: bisected


class SearchRig:
    """Runs bench/search.py's bracketing against per-candidate, per-seed
    thresholds and counts every probe, as the real rig would run them."""

    def __init__(self, tmp_path, threshold):
        self.work, self.port, self.threshold = str(tmp_path), 18998, threshold
        self.recorded, self.probes, self.lines = {}, [], []
        self.results = self

    def get(self, point):
        return self.recorded.get(json.dumps(point, sort_keys=True))

    def add(self, point, **values):
        self.recorded[json.dumps(point, sort_keys=True)] = values

    def log(self, msg):
        self.lines.append(msg)

    def _passes(self, cfg, rate, seed):
        self.probes.append((json.dumps(cfg["p"], sort_keys=True), rate, seed))
        return rate <= self.threshold(cfg["p"]) * (1 + 0.02 * (seed - 1))

    def probe_at(self, cfg, tag, point, settings, rate, what=None):
        ok = self._passes(cfg, rate, settings["seed"])
        rec = {"probe": {"pass": ok, "failed_pct": 0.0 if ok else 5.0,
                         "errors": vidload_errors(deadline=0 if ok else 5)}}
        self.add(point, **rec)
        return rec

    def max_rate(self, cfg, tag, settings, point):
        lo, hi = settings.get("passed"), None
        while True:
            rate = search.next_rate(lo, hi, settings["start"], settings["floor"], settings["cap"],
                                    settings["rel_resolution"], settings.get("growth", 2.0))
            if rate is None:
                break
            seeds = range(settings["seed"], settings["seed"] + settings["seeds"])
            ok = all([self._passes(cfg, rate, s) for s in seeds])
            lo, hi = (rate, hi) if ok else (lo, rate)
        self.add(point, answer=lo, failed_above=hi)
        return {"answer": lo, "failed_above": hi}


def test_tuning_challenges_each_candidate_once_on_the_first_seed(tmp_path):
    from libception.bench import common, tune
    ladder = [1, 2, 3, 4, 5, 6]
    rates = {1: 5.0, 2: 6.0, 3: 9.0, 4: 8.5, 5: 7.0, 6: 6.0}   # x=3 is best
    rig = SearchRig(tmp_path, lambda p: rates[p["x"]])
    search_settings = dict(common.search_settings(False, start=6), seeds=3)
    out = tune.tune_config(rig, lambda p: {"server": "nginx", "tunables": {}, "p": p},
                           [("x", ladder)], {"x": 1}, 12, search_settings,
                           {"part": "tune", "server": "nginx", "kind": "t"}, "t")
    assert out["best"] == {"x": 3}
    # the winner's first-seed answer, within the search's resolution
    assert 9.0 / 1.1 <= out["score"] <= 9.0
    assert rig.get({"part": "tune", "server": "nginx", "kind": "t",
                    "candidate": out["best"]})["answer"] == out["score"]
    assert out["failed_above"] > out["score"]
    per_candidate = {}
    for cand, rate, seed in rig.probes:
        per_candidate.setdefault(cand, []).append((rate, seed))
    # a challenger that beats the best says so before its search goes on
    assert any("{'x': 3}: passed at 6.3/s" in line for line in rig.lines)
    # a candidate that cannot beat the best so far costs exactly one probe
    for x in (4, 5):
        assert len(per_candidate[json.dumps({"x": x})]) == 1
    # a screen: the first seed only (bench compare measures every seed)
    assert {s for _, _, s in rig.probes} == {search_settings["seed"]}
    # far fewer probes than an every-seed search per candidate (about 18 each)
    assert len(rig.probes) < 6 * 18 / 3


def test_a_start_point_already_searched_is_not_searched_again(tmp_path):
    """The kernel kind on the block disk starts from vanilla's winner on
    the same queue: its answer is taken, not measured, and the first
    challenger is probed where vanilla failed."""
    from libception.bench import common, tune
    rates = {1: 5.0, 2: 6.0, 3: 4.0}
    rig = SearchRig(tmp_path, lambda p: rates[p["x"]])
    known = {"point": {"x": 1}, "answer": 4.9, "failed_above": 5.4, "why": "test"}
    out = tune.tune_config(rig, lambda p: {"server": "nginx", "tunables": {}, "p": p},
                           [("x", [1, 2, 3])], {"x": 1}, 12,
                           dict(common.search_settings(False, start=6), seeds=1),
                           {"part": "tune", "server": "nginx", "kind": "t"}, "t", known)
    assert out["best"] == {"x": 2} and 6.0 / 1.1 <= out["score"] <= 6.0
    assert not [p for p in rig.probes if p[0] == json.dumps({"x": 1})]
    assert rig.probes[0] == (json.dumps({"x": 2}), 5.4, 1)
    assert [t["score"] for t in out["tried"]][0] == 4.9


def test_only_the_kernel_kind_on_the_runs_own_queue_reuses_vanillas_answer():
    from libception.bench import tune
    start = tuning.start_point("nginx", "kernel", {"workers": 8}, "block")
    s = {"disk": "block"}
    assert tune.same_as_vanilla(s, "kernel", start)
    assert not tune.same_as_vanilla(s, "libception", start)
    assert not tune.same_as_vanilla({"disk": "fuse"}, "kernel", start)
    # a run whose vanilla ran bfq: the kernel start (mq-deadline) differs
    assert not tune.same_as_vanilla({"disk": "block", "scheduler": "bfq"}, "kernel", start)
    assert tune.same_as_vanilla({"disk": "block", "scheduler": "mq-deadline"}, "kernel", start)


def test_a_challenger_that_sheds_its_starting_load_scores_below_the_best(tmp_path):
    """Its judged sessions failed none, but the sessions before them did
    (nginx's aio threads, 2026-11-27): it is worse than the best, not a
    tie that the walk crosses, so two of them end the walk."""
    from libception.bench import common, tune

    class Sheds(SearchRig):
        def probe_at(self, cfg, tag, point, settings, rate, what=None):
            rec = super().probe_at(cfg, tag, point, settings, rate, what)
            if cfg["p"]["x"] in (2, 3):
                rec["probe"].update({"pass": False, "failed_pct": 0.0,
                                     "past": {"running": 500, "failed": 200},
                                     "warmup_started": 300, "warmup_failed": 100})
            return rec
    rates = {1: 5.0, 2: 9.0, 3: 9.0, 4: 20.0}
    rig = Sheds(tmp_path, lambda p: rates[p["x"]])
    out = tune.tune_config(rig, lambda p: {"server": "nginx", "tunables": {}, "p": p},
                           [("x", [1, 2, 3, 4])], {"x": 1}, 12,
                           dict(common.search_settings(False, start=6), seeds=1),
                           {"part": "tune", "server": "nginx", "kind": "t"}, "t")
    assert out["best"] == {"x": 1}
    scores = {t["point"]["x"]: t["score"] for t in out["tried"]}
    assert scores[2] < scores[1] and scores[3] < scores[1] and 4 not in scores
    assert any("failed 37.50% (before the judged window) at" in line for line in rig.lines)


def test_a_challenger_that_sends_a_wrong_byte_is_out(tmp_path):
    from libception.bench import common, tune

    class WrongBytes(SearchRig):
        def probe_at(self, cfg, tag, point, settings, rate, what=None):
            rec = super().probe_at(cfg, tag, point, settings, rate, what)
            if cfg["p"]["x"] == 3:   # the fastest, but it corrupts
                rec["probe"].update(errors=vidload_errors(integrity=1), **{"pass": False})
            return rec
    rates = {1: 5.0, 2: 6.0, 3: 9.0}
    rig = WrongBytes(tmp_path, lambda p: rates[p["x"]])
    out = tune.tune_config(rig, lambda p: {"server": "nginx", "tunables": {}, "p": p},
                           [("x", [1, 2, 3])], {"x": 1}, 12,
                           dict(common.search_settings(False, start=6), seeds=1),
                           {"part": "tune", "server": "nginx", "kind": "t"}, "t")
    assert out["best"] == {"x": 2}
    assert any("{'x': 3}: integrity errors" in line for line in rig.lines)


def test_compare_takes_a_kind_with_knobs_changed_under_its_own_label():
    """Issue 26's comparison: libception in today's order against the
    position order, side by side in the same rounds."""
    from libception.bench import compare
    s = compare.settings(True)
    s.update(disk="block", kinds=["vanilla", {"label": "fifo", "kind": "libception",
                                              "set": {"order": "fifo"}}, "libception"])
    configs, note = compare.configurations(s)
    assert [c[0] for c in configs] == ["vanilla", "fifo", "libception"] and "UNTUNED" in note
    fifo, lib = configs[1][2], configs[2][2]
    assert fifo == {**lib, "order": "fifo"}
    cfg = tuning.configure({"library": "x"}, "nginx", "libception", fifo)
    assert cfg["mode"] == "libception" and cfg["order"] == "fifo"
    assert "order" not in tuning.configure({"library": "x"}, "nginx", "libception", lib)


def test_compare_takes_a_kind_at_another_kinds_winner(tmp_path):
    """Issue 27's comparison: watch mode at the preload library's tuned
    point, searched from its answer; a kind without those knobs is
    refused."""
    from libception.bench import compare
    point = {"window": "1M", "parallel": 2, "workers": 16, "aio_threads": 0,
             "sendfile_max_chunk": 0}
    tuned = tmp_path / "tuned.json"
    tuned.write_text(json.dumps({"nginx": {
        "vanilla": {"point": {"workers": 16, "aio_threads": 0, "sendfile_max_chunk": 0},
                    "answer": 3.5},
        "libception": {"point": point, "answer": 7.5}}}))
    s = compare.settings(True)
    s.update(disk="block", tuned=str(tuned),
             kinds=["libception", {"label": "watch", "kind": "watch", "from": "libception"}])
    configs, _ = compare.configurations(s)
    assert configs[1] == ("watch", "watch", point, 7.5)
    # the watch deadline is a comparison's knob too
    s["kinds"] = [{"label": "watch-5s", "kind": "watch", "from": "libception",
                   "set": {"watch_deadline_ms": 5000}}]
    (_, kind, p5, _), = compare.configurations(s)[0]
    cfg = tuning.configure({"library": "x"}, "nginx", kind, p5)
    assert cfg["mode"] == "watch" and cfg["watch_deadline_ms"] == 5000
    assert "watch_deadline_ms" not in tuning.configure({"library": "x"}, "nginx", "watch", point)
    # and the library's look-ahead (LIBCEPTION_LOOKAHEAD=1)
    s["kinds"] = [{"label": "lookahead", "kind": "libception", "set": {"lookahead": True}}]
    (_, kind, pl, _), = compare.configurations(s)[0]
    assert tuning.configure({"library": "x"}, "nginx", kind, pl)["lookahead"] is True
    assert "lookahead" not in tuning.configure({"library": "x"}, "nginx", "libception", point)
    # and a sizing policy in place of the fixed window
    s["kinds"] = [{"label": "adaptive", "kind": "libception", "from": "libception",
                   "set": {"policy": "adaptive"}}]
    (_, kind, pa, _), = compare.configurations(s)[0]
    cfg = tuning.configure({"library": "x"}, "nginx", kind, pa)
    assert cfg["policy"] == "adaptive" and cfg["prefetch"] == "1M"
    assert tuning.configure({"library": "x"}, "nginx", "libception", point)["policy"] == \
        "fixed:1M,parallel=2"
    s["kinds"] = [{"label": "watch", "kind": "watch"}]
    assert compare.configurations(s)[0][0][3] is None, "no tuned watch: its own start"
    s["kinds"] = [{"label": "odd", "kind": "vanilla", "from": "libception"}]
    with pytest.raises(ValueError, match="does not take libception's knobs"):
        compare.configurations(s)
