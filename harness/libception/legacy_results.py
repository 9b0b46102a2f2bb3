"""Summaries of the raw results files of before issue 24's format
(docs/results/json/*.json at 9999c70: every probe inside its run, with
the daemon's whole statistics), in the summary format of docs/benchmark.md
"Results files" (schema libception-bench-summary, version 1), so that
docs/results/ keeps a few KB per run and the raw files can leave the tree.
A run directory of the new format is summarized by `libception results
summarize DIR`; this module is only for the old files:

    python3 scripts/summarize_legacy_results.py FILE... --out-dir DIR [--raw-commit COMMIT]

Beyond that format, the metadata names the raw file (path, bytes, sha256
and, with --raw-commit, the commit whose tree holds it), the answers keep
every small field of their run (a device profile in brief, an adaptive
policy's size series cut to its change points) and the sizing policy's
state at the answer, and the probe table has the columns of the old
probe record (latency, disk utilisation, mean read, the policy's size);
columns no probe of a file has are left out.  Figures are rounded to 4
significant digits.
"""
import hashlib
import json
import os
import re

SCHEMA = "libception-bench-summary"
VERSION = 1
BIG = 2000          # a run field longer than this (as JSON) is shrunk
MAX_CHANGES = 40    # change points kept of a size series
REASON = 80         # characters kept of a decision's reason

# Probe columns: name -> how to read it from an old probe record.
PROBE_COLUMNS = {
    "rate": lambda p: p.get("rate"),
    "seed": lambda p: p.get("seed"),
    "pass": lambda p: p.get("pass"),
    "failed_pct": lambda p: p.get("failed_pct"),
    "started": lambda p: p.get("started"),
    "mb_per_s": lambda p: p.get("mb_per_s"),
    "max_active": lambda p: p.get("max_active"),
    "latency_p99_ms": lambda p: (p.get("latency_ms") or {}).get("p99"),
    "disk_mb_per_s": lambda p: p.get("disk_mb_per_s"),
    "disk_utilisation": lambda p: p.get("disk_utilisation"),
    "disk_avg_read_kib": lambda p: p.get("disk_avg_read_kib"),
    "policy_size": lambda p: (_device(p, "policy") or {}).get("size"),
}


def _device(p, key):
    """A field of the daemon's first device (the library's), if any."""
    devices = (p.get("daemon_stats") or {}).get("devices") or []
    return devices[0].get(key) if devices and isinstance(devices[0], dict) else None


def _round(v):
    if isinstance(v, float):
        return float(f"{v:.4g}")
    if isinstance(v, dict):
        return {k: _round(x) for k, x in v.items()}
    if isinstance(v, list):
        return [_round(x) for x in v]
    return v


def _size(v):
    return len(json.dumps(v))


def _scalars(d):
    """The scalar fields of a dict, and its small dicts."""
    return {k: v for k, v in d.items()
            if not isinstance(v, (dict, list)) or _size(v) <= 200}


# Fields of an answer's probe the summary leaves out (in the raw data).
AT_ANSWER_DROP = ("memory_lists", "cgroup_limit", "first_error", "vidload_cpu_pct", "settle_s",
                  "disk_continued", "disk_cache_hits", "disk_reads_under_128k")


def _changes(series):
    """A size series ({t, size, target, reason, ...} every few seconds)
    cut to the points where size or target changed."""
    out, last = [], None
    for pt in series:
        now = (pt.get("size"), pt.get("target"))
        if now != last:
            out.append({k: (v[:REASON] if isinstance(v, str) else v) for k, v in pt.items()
                        if not isinstance(v, (dict, list))})
            last = now
    kept = out[:MAX_CHANGES]
    return {"points": len(series), "changes": kept, "changes_cut": len(out) - len(kept)}


# What a device profile (receptiond-profile) says that the policies use.
PROFILE_KEYS = ("method", "files", "bytes", "rate", "switch_s", "competitive_size", "concurrency")


def _shrink(key, v):
    if key == "series" and isinstance(v, list):
        return _changes(v)
    if key == "profile" and isinstance(v, dict):
        return {k: v[k] for k in PROFILE_KEYS if k in v}
    if isinstance(v, dict):
        return {k: x for k, x in _scalars(v).items() if _size(x) <= BIG}
    return {"omitted": f"{_size(v)} bytes of JSON; see the raw data"}


def probe_row(index, probe):
    return [index] + [_round(get(probe)) for get in PROBE_COLUMNS.values()]


def _at_answer_extra(p):
    """What the answer's probe says in the daemon's statistics: its hits
    and misses, and the sizing policy's state (size, last decision, scores)."""
    out = {}
    for key in ("hits", "misses"):
        if _device(p, key) is not None:
            out["daemon_" + key] = _device(p, key)
    policy = _device(p, "policy")
    if isinstance(policy, dict):
        out["policy"] = {k: policy[k] for k in ("name", "size", "target", "changes", "decisions",
                                                "reason", "scores") if k in policy}
    return out


def _disk_meta(settings):
    library = settings.get("library")
    if isinstance(library, dict):
        library = "-".join(str(library.get(k)) for k in ("preset", "count") if k in library)
    disk = {"drive": settings.get("drive", settings.get("drives")), "library": library}
    for key in ("memory_limit", "memory_ratio"):
        if key in settings:
            disk[key] = settings[key]
    return disk


def summarize(data, raw=None):
    """The summary of one old results file's data (dict); raw describes
    the file (_raw_info)."""
    settings = data.get("settings") or {}
    answers, rows, probes = [], [], 0
    for i, run in enumerate(data.get("runs") or []):
        entry = {}
        for key, v in run.items():
            if key in ("probes", "probe"):
                continue
            if key == "at_answer" and isinstance(v, dict):
                kept = {k: x for k, x in _scalars(v).items() if k not in AT_ANSWER_DROP}
                errors = kept.pop("errors", None)
                if isinstance(errors, dict):
                    kept["errors"] = {k: n for k, n in errors.items() if n}
                if isinstance(kept.get("latency_ms"), dict):
                    kept["latency_ms"] = {k: kept["latency_ms"].get(k) for k in ("p50", "p99")}
                entry[key] = _round({**kept, **_at_answer_extra(v)})
            elif _size(v) > BIG or key == "profile":
                entry[key] = _round(_shrink(key, v))
            else:
                entry[key] = _round(v)
        if "git_commit" in entry and entry["git_commit"] == data.get("git_commit"):
            del entry["git_commit"]   # the file's own, in metadata
        answers.append(entry)
        own = run.get("probes") or ([run["probe"]] if isinstance(run.get("probe"), dict) else [])
        for p in own:
            rows.append(probe_row(i, p))
            probes += 1
    search = settings.get("search")
    meta = {"scenario": data.get("scenario"), "command": data.get("command"),
            "git_commit": data.get("git_commit"), "date": data.get("date"),
            "machine": data.get("machine"), "disk": _disk_meta(settings),
            "method": data.get("method", "before steady-state probes (issue 24)"),
            "search": search,
            "settings": {k: v for k, v in settings.items() if k != "search" and _size(v) <= BIG},
            "seeds": data.get("seeds"), "probes": probes,
            "reruns": None, "not_steady": None,   # not judged before issue 24
            "raw": raw}
    columns = ["answer"] + list(PROBE_COLUMNS)
    used = [i for i in range(len(columns)) if any(r[i] is not None for r in rows)] or [0]
    return {"schema": SCHEMA, "version": VERSION, "metadata": _round(meta),
            "answers": answers, "probe_columns": [columns[i] for i in used],
            "probe_rows": [[r[i] for i in used] for r in rows]}


def _raw_info(path, rel_to=None):
    h = hashlib.sha256()
    with open(path, "rb") as f:
        for block in iter(lambda: f.read(1 << 20), b""):
            h.update(block)
    shown = os.path.relpath(path, rel_to) if rel_to else path
    return {"path": shown, "bytes": os.path.getsize(path), "sha256": h.hexdigest()}


def _expand_braces(text):
    """`sizing-{hd,sd414}-rounds` as the docs write several names at once:
    every combination (one level of braces)."""
    m = re.search(r"\{([^{}]*,[^{}]*)\}", text)
    if not m:
        return [text]
    return [x for alt in m.group(1).split(",")
            for x in _expand_braces(text[:m.start()] + alt + text[m.end():])]


def described_in(name, docs):
    """The sections of docs (paths of Markdown files) that name a results
    file: by its file name, by its run (the name without its date) as the
    `--out results/RUN` of its command or in backquotes, or by its run's
    plots.  The old files did not record their command; these sections
    give it."""
    stem = os.path.splitext(os.path.basename(name))[0]
    run = re.sub(r"-2026\d{4}\w*$", "", stem)
    # the file, its run's --out or `name`, or its run's plots
    pattern = re.compile(re.escape(stem) + "|`" + re.escape(run) + "`|results/" + re.escape(run) +
                         r"(?![\w-])|results/" + re.escape(run) +
                         r"-(rates|throughput|probes|adaptive-size|adaptive-disk)\.png")
    found = []
    for doc in docs:
        heading = None
        with open(doc, encoding="utf-8") as f:
            for line in f:
                if line.startswith("#"):
                    heading = line.strip("# \n")
                elif heading and any(pattern.search(x) for x in _expand_braces(line)):
                    where = f"{doc}: {heading}"
                    if where not in found:
                        found.append(where)
    return found


def summarize_path(path, rel_to=None, raw_commit=None, docs=()):
    """Summarize one old raw results file; docs: Markdown files to search
    for the sections that describe it (metadata "described_in")."""
    with open(path) as f:
        data = json.load(f)
    raw = _raw_info(path, rel_to)
    if raw_commit:
        raw["git"] = raw_commit
    s = summarize(data, raw)
    if docs:
        s["metadata"]["described_in"] = described_in(path, docs)
    return s


def write(summary, out):
    """Compact JSON, one answer and one probe row per line (diffs stay small)."""
    d = os.path.dirname(os.path.abspath(out))
    os.makedirs(d, exist_ok=True)
    tmp = out + ".tmp"
    with open(tmp, "w") as f:
        f.write('{"schema": %s, "version": %d,\n "metadata": %s,\n "answers": [\n' % (
            json.dumps(summary["schema"]), summary["version"],
            json.dumps(summary["metadata"], separators=(",", ":"))))
        f.write(",\n".join("  " + json.dumps(a, separators=(",", ":"))
                           for a in summary["answers"]))
        f.write('],\n "probe_columns": %s,\n "probe_rows": [\n' % json.dumps(
            summary["probe_columns"], separators=(",", ":")))
        f.write(",\n".join("  " + json.dumps(r, separators=(",", ":"))
                           for r in summary["probe_rows"]))
        f.write("]}\n")
    os.replace(tmp, out)
