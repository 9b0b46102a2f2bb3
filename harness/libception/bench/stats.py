"""Statistics decided before the run: the pass rule over seeds, the
balanced order of the rounds, and the ratio of two configurations'
maximum failure-free rates with a 95% bootstrap interval.

Pure functions over plain data (no rig, no I/O), so that they can be
tested on synthetic experiments and recomputed from any results file.

The data a comparison is made of:
  verdicts  {rate: {seed: passed (bool)}}: one configuration's search in
            one round, every probed rate with the seeds run at it
            (`verdicts_from_probes` builds it from the probe records)
  rounds    [{config label: verdicts}, ...] in the order they ran

Why this bootstrap (docs/benchmark.md, "Comparisons and intervals"):
rounds are the independent units (the machine drifts between them; one
configuration's answer moved 7% within an hour), and within a round the
seeds are the workload's randomness, shared by the configurations of the
round (seed k is the same session sequence for each).  So the bootstrap
resamples rounds, then seeds within each drawn round, recomputes each
configuration's answer from its per-(rate, seed) verdicts with the same
pass rule, and takes the geometric mean of the per-round ratios (paired:
both configurations of a ratio ran in the same round).
"""
import math
import random

LEVEL = 0.95
RESAMPLES = 4000


# --- the pass rule -----------------------------------------------------------

def wrong_bytes(rec):
    """Whether a probe's sessions got any byte other than the file's
    (vidload's integrity errors): such a probe fails whatever its rate."""
    return bool((rec.get("errors") or {}).get("integrity"))


def unjudged_failed_pct(rec):
    """Percent of the sessions the probe loaded the server with before its
    judged window (the past's carried on, the warm-up's) that failed."""
    past = rec.get("past") or {}
    n = past.get("running", 0) + rec.get("warmup_started", 0)
    failed = past.get("failed", 0) + rec.get("warmup_failed", 0)
    return 100.0 * failed / n if n else 0.0


def failed_share(rec):
    """What a probe failed by, in percent: the larger of its judged
    sessions' failed share and that of the sessions before them.  A
    probe that shed its starting load (0% judged) is not ranked as one
    that failed nothing."""
    return max(rec["failed_pct"], unjudged_failed_pct(rec))


def failed_share_text(rec):
    """failed_share as the logs print it, saying so when the sessions
    before the judged window decide it."""
    share = failed_share(rec)
    return f"{share:.2f}%" + (" (before the judged window)" if share > rec["failed_pct"] else "")


def probe_passed(rec, max_fail=0.3):
    """One seed's run at one rate: at most `max_fail` percent of its
    judged sessions failed, and of the sessions before them, and no byte
    was wrong.  Why the sessions before: a server that drops the load it
    starts with serves the judged sessions on an emptied disk (nginx with
    32 workers failed 328 of 525 carried-on sessions at 3.6/s, then none
    of 731 judged)."""
    if "pass" in rec:
        return bool(rec["pass"])
    return failed_share(rec) <= max_fail and not wrong_bytes(rec)


def rate_verdict(seed_passed, min_seeds=3):
    """A rate over its seeds ({seed: passed}): False as soon as one seed
    failed, True once at least `min_seeds` seeds ran and all passed, None
    (not decided: run more seeds) otherwise."""
    if not all(seed_passed.values()):
        return False
    return True if len(seed_passed) >= min_seeds else None


def verdicts_from_probes(probes, max_fail=0.3):
    """{rate: {seed: passed}} from probe records (each with "rate" and
    "seed").  A seed run twice at one rate (a disturbed probe run again)
    counts by its last run."""
    out = {}
    for rec in probes:
        if rec.get("superseded"):
            continue
        out.setdefault(float(rec["rate"]), {})[rec["seed"]] = probe_passed(rec, max_fail)
    return out


def answer(verdicts, seeds=None):
    """The maximum failure-free rate over `seeds` (default: every seed
    seen): the largest probed rate at which every one of them ran and
    passed, with no lower probed rate failed by any of them.  A rate at
    which one of them did not run (the search stopped at the first
    failing seed) decides nothing for them.  None: no rate passed."""
    if seeds is None:
        seeds = {s for by_seed in verdicts.values() for s in by_seed}
    best = None
    for rate in sorted(verdicts):
        by_seed = verdicts[rate]
        if any(by_seed.get(s) is False for s in seeds):
            break
        if all(s in by_seed for s in seeds):
            best = rate
    return best


# --- the order of the configurations -------------------------------------------

def balanced_order(n, round_index):
    """The order of n configurations in round `round_index` (from 0): a
    Williams design (every configuration in every position, every ordered
    pair adjacent, equally often), each row followed by its mirror, so that
    every two rounds cancel a linear drift.  n = 2 gives A B, B A, B A,
    A B (A B B A B A A B); n = 3 gives A B C, C B A, B C A, A C B, ..."""
    first, lo, hi = [0], 1, n - 1
    while len(first) < n:
        first.append(lo)
        lo += 1
        if len(first) < n:
            first.append(hi)
            hi -= 1
    rows = [[(x + i) % n for x in first] for i in range(n)]
    row = rows[(round_index // 2) % n]
    return row if round_index % 2 == 0 else row[::-1]


# --- ratios with intervals -----------------------------------------------------

def _round_seeds(rnd, configs):
    seeds = set()
    for c in configs:
        for by_seed in rnd[c].values():
            seeds.update(by_seed)
    return sorted(seeds, key=str)


def _log_ratio(num, den):
    if num is None and den is None:
        return 0.0
    if num is None:
        return -math.inf
    if den is None:
        return math.inf
    return math.log(num / den)


def _gmean(logs):
    total = sum(logs)
    return math.nan if math.isnan(total) else math.exp(total / len(logs))


def _percentile(sorted_xs, q):
    """Linear interpolation between order statistics."""
    pos = q * (len(sorted_xs) - 1)
    i = int(math.floor(pos))
    j = min(i + 1, len(sorted_xs) - 1)
    a, b = sorted_xs[i], sorted_xs[j]
    if a == b or pos == i:
        return a
    return a + (b - a) * (pos - i)


def ratio_interval(rounds, num, den, resamples=RESAMPLES, level=LEVEL, seed=1):
    """The ratio of configuration `num`'s maximum failure-free rate to
    `den`'s: the geometric mean of the per-round ratios, with a `level`
    percentile interval from a two-stage bootstrap (rounds, then seeds
    within each drawn round).  Deterministic for a given `seed`.

    Returns {"ratio", "low", "high", "rounds": [{"num", "den", "ratio"}],
    "resamples"}; a configuration with no passing rate in a round counts
    as 0 there (ratio 0 or infinite)."""
    if not rounds:
        raise ValueError("no rounds to compare")
    per_round = []
    tables = []
    for rnd in rounds:
        seeds = _round_seeds(rnd, (num, den))
        a, b = answer(rnd[num], seeds), answer(rnd[den], seeds)
        per_round.append({"num": a, "den": b, "ratio": math.exp(_log_ratio(a, b))
                          if a is not None or b is not None else None})
        tables.append((rnd, seeds, {}))
    point = _gmean([_log_ratio(r["num"], r["den"]) for r in per_round])

    def log_ratio_of(table, drawn):
        rnd, seeds, memo = table
        key = frozenset(drawn)
        if key not in memo:
            memo[key] = _log_ratio(answer(rnd[num], key), answer(rnd[den], key))
        return memo[key]

    rng = random.Random(seed)
    stats = []
    n = len(tables)
    for _ in range(resamples):
        logs = []
        for _ in range(n):
            table = tables[rng.randrange(n)]
            seeds = table[1]
            drawn = [seeds[rng.randrange(len(seeds))] for _ in seeds]
            logs.append(log_ratio_of(table, drawn))
        stats.append(_gmean(logs))
    stats = sorted(x for x in stats if not math.isnan(x))
    tail = (1 - level) / 2
    low = _percentile(stats, tail) if stats else math.nan
    high = _percentile(stats, 1 - tail) if stats else math.nan
    return {"ratio": point, "low": low, "high": high, "level": level,
            "resamples": resamples, "rounds": per_round}


def mean_interval(groups, resamples=RESAMPLES, level=LEVEL, seed=1):
    """The mean of values measured per round (`groups`: one list per round,
    that round's seeds' values), with a `level` percentile interval from
    the same two-stage bootstrap as ratio_interval: draw rounds, then
    values within each drawn round.  Rounds without a value are left out.
    Returns {"mean", "low", "high", "level", "rounds"}; all NaN when no
    round has a value."""
    groups = [list(g) for g in groups if g]
    if not groups:
        return {"mean": math.nan, "low": math.nan, "high": math.nan, "level": level, "rounds": 0}

    def mean_of(gs):
        return sum(sum(g) / len(g) for g in gs) / len(gs)

    rng = random.Random(seed)
    n = len(groups)
    means = []
    for _ in range(resamples):
        drawn = []
        for _ in range(n):
            g = groups[rng.randrange(n)]
            drawn.append([g[rng.randrange(len(g))] for _ in g])
        means.append(mean_of(drawn))
    means.sort()
    tail = (1 - level) / 2
    return {"mean": mean_of(groups), "low": _percentile(means, tail),
            "high": _percentile(means, 1 - tail), "level": level, "rounds": n}


def target_met(interval, target):
    """A target ratio is met only when the interval's lower end clears it:
    the point estimate above the target is not enough."""
    low = interval.get("low")
    return low is not None and not math.isnan(low) and low >= target


def round_table(rounds, configs):
    """Every round's answer per configuration (over that round's seeds),
    in the order the rounds ran: nothing is dropped here."""
    out = []
    for i, rnd in enumerate(rounds):
        present = [c for c in configs if rnd.get(c) is not None]
        seeds = _round_seeds(rnd, present)
        out.append({"round": i + 1, "seeds": seeds,
                    "answers": {c: answer(rnd[c], seeds) for c in present}})
    return out
