"""Show receptiond's statistics: per device and per intercepted call.

Per device: requests, hits (the daemon's, then the hits the libraries
found themselves and reported), bytes the programs asked for and the
daemon read, queue length now/max, queue wait and read time percentiles,
the fraction of time a read was running; the queue order's picks by rule,
queue waits split by demand and look-ahead, deadline misses and the head's
travel (docs/receptiond.md QUEUE ORDER).  Per call (from the libraries'
reports): counts, hits and latency percentiles.  --json prints the
daemon's own JSON, --prometheus its metrics in the Prometheus text format
(the same as its --metrics-listen serves at /metrics).
"""
import json
import sys

from . import daemon


def add_arguments(p):
    p.add_argument("--socket", metavar="PATH", help="receptiond's socket")
    fmt = p.add_mutually_exclusive_group()
    fmt.add_argument("--json", action="store_true", help="print the daemon's JSON")
    fmt.add_argument("--prometheus", action="store_true",
                     help="print the daemon's metrics in the Prometheus text format")


def human_bytes(n):
    for unit in ("B", "KiB", "MiB", "GiB", "TiB"):
        if abs(n) < 1024 or unit == "TiB":
            return f"{n:.0f} {unit}" if unit == "B" else f"{n:.1f} {unit}"
        n /= 1024.0
    return str(n)


def hist_quantile_us(hist, q):
    """Upper bound (us) of the bucket holding quantile q of a protocol.h
    histogram (bucket i: calls under 2^i us, the last: the rest)."""
    total = sum(hist)
    if not total:
        return None
    rank = min(int(q * total), total - 1)
    seen = 0
    for i, c in enumerate(hist):
        seen += c
        if seen > rank:
            return float(2 ** i)
    return float(2 ** (len(hist) - 1))


def fmt_us(v):
    if v is None:
        return "-"
    if v >= 1e6:
        return f"{v / 1e6:.2f}s"
    if v >= 1e3:
        return f"{v / 1e3:.1f}ms"
    return f"{v:.0f}us"


def render_accounting(devices):
    """The sizing policies' accounting (docs/prefetch-sizing.md), for the
    devices whose policy keeps it."""
    rows = [(d, d["policy"]["accounting"]["total"]) for d in devices
            if "accounting" in d.get("policy", {})]
    if not rows:
        return []
    out = ["", f"{'device':<14} {'consumed':>10} {'prefetched':>10} {'useful':>10} {'wasted':>10} "
               f"{'evicted':>10} {'needed':>10} {'evict age':>9} {'miss ratio':>10} "
               f"{'disk ms/MiB':>11}  size now"]
    for d, a in rows:
        pol = d["policy"]
        reason = f" ({pol['reason']})" if pol.get("reason") else ""
        out.append(f"{d['name']:<14} {human_bytes(a['demanded_bytes']):>10} "
                   f"{human_bytes(a['prefetched_bytes']):>10} {human_bytes(a['useful_bytes']):>10} "
                   f"{human_bytes(a['wasted_bytes']):>10} {human_bytes(a['evicted_bytes']):>10} "
                   f"{human_bytes(a.get('evicted_needed_bytes', 0)):>10} "
                   f"{a['evict_age_s']:>8.1f}s {a['miss_ratio']:>10.2f} {a['disk_ms_per_mib']:>11.2f}  "
                   f"{human_bytes(pol['size'])}{reason}")
    return out


def render_order(devices):
    """What the queue order did per device (receptiond/order.h)."""
    rows = [d for d in devices if "order" in d]
    if not rows:
        return []
    out = ["", f"{'device':<14} {'order':<8} {'picks deadline/sweep/fifo':>25} {'turns':>6} "
               f"{'cuts':>5} {'misses':>6} {'gone':>6} {'demand wait p50/p90/p99/max':>29} "
               f"{'look-ahead p50/p99/max':>22} {'travel/read':>11}"]
    for d in rows:
        o = d["order"]
        p, wd, wl = o["picks"], o["wait_demand_us"], o["wait_lookahead_us"]
        placed = o["placed_reads"]
        travel = human_bytes(o["head_travel_bytes"] / placed) if placed else "-"
        out.append(f"{d['name']:<14} {o['mode']:<8} "
                   f"{'/'.join(str(p[k]) for k in ('deadline', 'sweep', 'fifo')):>25} "
                   f"{o['user_turns']:>6} {o['cuts']:>5} {o['deadline_misses']:>6} "
                   f"{d.get('abandoned', 0):>6} "
                   f"{'/'.join(fmt_us(wd[k]) for k in ('p50', 'p90', 'p99', 'max')):>29} "
                   f"{'/'.join(fmt_us(wl[k]) for k in ('p50', 'p99', 'max')):>22} {travel:>11}")
    return out


def render(st):
    out = []
    out.append(f"receptiond pid {st['pid']}, up {st['uptime_s']:.0f} s, socket {st['socket']}, "
               f"prefetch {human_bytes(st['prefetch'])}; connections {st['connections']['now']} "
               f"(max {st['connections']['max']}); malformed {st['malformed']}, "
               f"bad requests {st['bad_requests']}")
    out.append("")
    hdr = (f"{'device':<14} {'policy':<12} {'requests':>9} {'hits':>8} {'lib hits':>9} "
           f"{'lib hit bytes':>13} {'merged':>7} {'busy':>5} "
           f"{'asked':>10} {'read':>10} {'queue':>7} {'wait p50/p99':>15} "
           f"{'read p50/p99':>15} {'busy%':>6}")
    out.append(hdr)
    for d in st["devices"]:
        pol = d["policy"]
        size = pol.get("size")
        pname = pol["name"] + (" direct" if pol.get("direct") else
                               f" {human_bytes(size)}" if isinstance(size, int) else "")
        out.append(
            f"{d['name']:<14} {pname:<12} {d['requests']:>9} {d['hits']:>8} "
            f"{d.get('library_hits', 0):>9} {human_bytes(d.get('library_hit_bytes', 0)):>13} "
            f"{d['merged']:>7} "
            f"{d['busy_rejected']:>5} {human_bytes(d['bytes_asked']):>10} "
            f"{human_bytes(d['bytes_read']):>10} {str(d['queue_now']) + '/' + str(d['queue_max']):>7} "
            f"{fmt_us(d['wait_us']['p50']) + '/' + fmt_us(d['wait_us']['p99']):>15} "
            f"{fmt_us(d['service_us']['p50']) + '/' + fmt_us(d['service_us']['p99']):>15} "
            f"{100 * d['busy_fraction']:>5.1f}%")
    for d in st.get("library_devices", []):
        # disks only the libraries have seen: nothing asked, no queue
        out.append(f"{d['name']:<14} {'-':<12} {0:>9} {0:>8} {d['library_hits']:>9} "
                   f"{human_bytes(d['library_hit_bytes']):>13} {'-':>7} {'-':>5} {'-':>10} "
                   f"{'-':>10} {'-':>7} {'-':>15} {'-':>15} {'-':>6}")
    if not st["devices"] and not st.get("library_devices"):
        out.append("(no requests yet)")
    un = st.get("library_unattributed", {})
    if un.get("calls") or un.get("hits"):
        out.append(f"(library hits on no device known here: {un['hits']} hits, "
                   f"{human_bytes(un['hit_bytes'])}, of {un['calls']} calls)")
    out.extend(render_order(st["devices"]))
    out.extend(render_accounting(st["devices"]))
    out.append("")
    out.append(f"{'call':<16} {'calls':>10} {'hits':>10} {'bytes':>10} "
               f"{'p50':>8} {'p90':>8} {'p99':>8}   (latency: upper bound of the 2^i us bucket)")
    for name, c in st["calls"].items():
        if not c["calls"]:
            continue
        h = c["hist"]
        out.append(f"{name:<16} {c['calls']:>10} {c['hits']:>10} {human_bytes(c['bytes']):>10} "
                   f"{fmt_us(hist_quantile_us(h, 0.5)):>8} {fmt_us(hist_quantile_us(h, 0.9)):>8} "
                   f"{fmt_us(hist_quantile_us(h, 0.99)):>8}")
    if not any(c["calls"] for c in st["calls"].values()):
        out.append("(no reports from libraries yet)")
    return "\n".join(out)


def main(args):
    path = daemon.socket_path(args.socket)
    try:
        if args.prometheus:
            sys.stdout.write(daemon.metrics(path))
            return 0
        st = daemon.stats(path)
    except TimeoutError:
        print(f"libception: stats: receptiond on {path} did not answer"
              f"{' (older than --prometheus?)' if args.prometheus else ''}", file=sys.stderr)
        return 1
    except OSError as e:
        print(f"libception: stats: no receptiond on {path} ({e.strerror or e})", file=sys.stderr)
        return 1
    except daemon.DaemonError as e:
        print(f"libception: stats: {e}", file=sys.stderr)
        return 1
    if args.json:
        print(json.dumps(st, indent=1))
    else:
        print(render(st))
    return 0
