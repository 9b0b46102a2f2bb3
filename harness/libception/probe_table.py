"""A run's probes, one Markdown row each in the journal's order:
`libception results probes DIR [--from N]`.

A long run is read probe by probe while it goes on (the campaign note,
docs/notes/2026-11-27-measurement-campaign.md, keeps every probe's row):
what failed where (judged sessions, the warm-up's, the past's carried
on), what the disk did (busy and transfer shares, its small commands)
and, for a daemon's kinds, what the daemon did in that probe.  The
daemon's statistics are cumulative over its life (one kind's probes of a
round share one daemon), so a probe's figures are the difference from
the previous probe of the same daemon; a carried journal has dropped
them (journal.BULKY) and shows "-".
"""
from .bench.compare import figure
from .results_table import markdown_table

HEAD = ["#", "configuration", "rate", "seed", "judged failed", "warm-up failed",
        "carried on failed", "busy", "transfer", "commands <=4K, 4K-128K", "queue p99 ms",
        "other cores", "misses", "let go", "dropped unread"]

# receptiond's counters a probe's row shows: (watch section or device, key)
COUNTERS = {"misses": ("device", "misses"), "let go": ("watch", "answered_at_deadline"),
            "dropped unread": ("device", "abandoned")}


def _share(x):
    return "-" if x is None else f"{x:.0%}"


def _of(part, total):
    return "-" if part is None or total is None else f"{part}/{total}"


def daemon_counters(stats):
    """((pid, uptime), counters) from one probe's daemon_stats, or
    ((None, None), {}) when the probe kept none.  A daemon's life is its
    boot and pid while its uptime only grows: a pid used again by a later
    daemon starts a new life (rows())."""
    if not stats:
        return (None, None), {}
    sections = {"device": (stats.get("devices") or [{}])[0], "watch": stats.get("watch") or {}}
    counts = {name: sections[part].get(key) for name, (part, key) in COUNTERS.items()}
    return (stats.get("pid"), stats.get("uptime_s")), counts


def rows(entries, first=1):
    """The table's rows for journal entries `first` (1-based) onwards;
    the daemon's differences are taken over every entry before them too."""
    last = {}          # (boot, pid) -> (uptime, counters) of its previous probe
    out = []
    for i, e in enumerate(entries, 1):
        p = e["probe"]
        (pid, uptime), counts = daemon_counters(p.get("daemon_stats"))
        life = (p.get("boot_id"), pid)
        before_uptime, before = last.get(life, (None, {}))
        if pid is None or before_uptime is None or uptime is None or uptime < before_uptime:
            before = {}
        if pid is not None:
            last[life] = (uptime, counts)
        if i < first:
            continue
        delta = {k: v - (before.get(k) or 0) if isinstance(v, int) else None
                 for k, v in counts.items()}
        disk = p.get("disk_time") or {}
        commands = disk.get("commands") or {}
        past = p.get("past") or {}
        steady = (p.get("steady") or {}).get("steady")
        wait = (p.get("queue_wait_ms") or {}).get("p99")
        out.append([f"{i} superseded" if e.get("superseded") else i,
                    e["point"].get("config", "-"), f"{e['rate']:g}", e["seed"],
                    _of(p.get("failed"), p.get("started")),
                    _of(p.get("warmup_failed"), p.get("warmup_started")),
                    _of(past.get("failed"), past.get("running")),
                    _share(disk.get("busy_share")),
                    _share(disk.get("transfer_share")) + (" (not steady)" if steady is False
                                                          else ""),
                    f"{commands.get('<=4K', '-')}, {commands.get('4K-128K', '-')}",
                    "-" if wait is None else f"{wait:.0f}",
                    figure((p.get("other_cpu") or {}).get("cores")),
                    *("-" if delta.get(k) is None else delta[k] for k in COUNTERS)])
    return out


def markdown(entries, first=1):
    return markdown_table(HEAD, rows(entries, first))
