"""Whether a probe measured the steady state: a pure function of the
series a probe records (docs/benchmark.md, "Steady-state probes").

Two conditions, each reported on its own so that a probe that missed one
is marked rather than hidden:
  sessions levelled  the mean number of active sessions over the last
                     third of the judged window is within `tolerance` of
                     the mean over its first third;
  memory full        the memory group's usage reached `full_share` of its
                     limit by the end of the judged window (with the
                     default memory ratio the page cache then has to evict
                     to admit more, the trade-off prefetching lives by).
"""

TOLERANCE = 0.10
FULL_SHARE = 0.95
MIN_SAMPLES = 6   # fewer samples in the judged window: too short to tell


def _mean(xs):
    return sum(xs) / len(xs) if xs else None


def verdict(t_s, active, judged_from_s, usage_bytes=None, limit_bytes=None,
            tolerance=TOLERANCE, full_share=FULL_SHARE):
    """The steady-state verdict of one probe.  `t_s` and `active` are the
    sampled times (seconds from the warm-up's start) and active sessions;
    `usage_bytes` the group's usage at those times (None: not measured).
    Returns {"steady", "sessions_levelled", "active_growth",
    "memory_full", "memory_peak_share", "reasons"}."""
    reasons = []
    window = [a for t, a in zip(t_s, active) if t >= judged_from_s]
    levelled = growth = None
    if len(window) < MIN_SAMPLES:
        reasons.append(f"judged window too short to tell ({len(window)} samples)")
    else:
        third = len(window) // 3
        first, last = _mean(window[:third]), _mean(window[-third:])
        growth = (last - first) / first if first else (0.0 if not last else float("inf"))
        levelled = abs(growth) <= tolerance
        if not levelled:
            reasons.append(f"active sessions still {'rising' if growth > 0 else 'falling'} "
                           f"({growth:+.0%} from the window's first third to its last)")
    full = peak_share = None
    if usage_bytes and limit_bytes:
        peak_share = max(usage_bytes) / limit_bytes
        full = peak_share >= full_share
        if not full:
            reasons.append(f"memory group never reached its limit (peak {peak_share:.0%})")
    elif limit_bytes:
        reasons.append("memory group not sampled")
    return {"steady": bool(levelled) and (bool(full) if limit_bytes else True),
            "sessions_levelled": levelled,
            "active_growth": None if growth is None else round(growth, 4),
            "memory_full": full,
            "memory_peak_share": None if peak_share is None else round(peak_share, 4),
            "reasons": reasons}
