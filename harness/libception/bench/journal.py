"""Every probe of a run, persisted the moment it ends: DIR/probes.jsonl.gz,
one JSON line per probe, each appended as its own gzip member (a run
killed mid-write loses at most the line being written; the reader stops
at a truncated member).  `--resume` looks probes up here by (point, rate,
seed) and does not run them again (docs/benchmark.md, "Results files").

A run outlives the machine that measured it only through `carry`: the
journal without its probes' bulk, small enough to keep in the repository
and resumed from on the next machine (docs/benchmark.md, "Carrying a run
to another machine")."""
import datetime
import gzip
import json
import os
import zlib

from .. import results

NAME = "probes.jsonl.gz"

# What a carried journal leaves out of each probe: its timeline (already
# judged: `steady` holds the verdict), receptiond's full statistics and
# per-call histograms, and the memory lists.  No decision of a resumed run
# and no summary reads them; they are most of a probe's bytes.
BULKY = ("timeline", "daemon_stats", "calls", "memory_lists")


def _key(point, rate, seed):
    return json.dumps([point, round(float(rate), 6), int(seed)], sort_keys=True)


def _read(path):
    """(entries in order, whether the file ended cleanly)."""
    out = []
    if not os.path.exists(path):
        return out, True
    try:
        with gzip.open(path, "rt", encoding="utf-8") as f:
            for line in f:
                if not line.endswith("\n"):
                    return out, False
                out.append(json.loads(line))
    except (EOFError, gzip.BadGzipFile, zlib.error, ValueError):
        return out, False
    return out, True


def read(path):
    """The journal's entries, in order (a truncated last member ends it)."""
    return _read(path)[0]


def _rewrite(path, entries):
    """Replace a journal whose last member was cut off by its whole entries,
    so that what a resumed run appends stays readable."""
    tmp = path + ".tmp"
    with gzip.open(tmp, "wt", encoding="utf-8") as f:
        for e in entries:
            f.write(json.dumps(e, default=str) + "\n")
    os.replace(tmp, path)


def _index(entries):
    """(point, rate, seed) -> the kept probe: what a resumed run skips."""
    return {_key(e["point"], e["rate"], e["seed"]): e["probe"]
            for e in entries if not e.get("superseded")}


class Journal:
    def __init__(self, directory, commit):
        self.path = os.path.join(directory, NAME)
        self.commit = commit
        entries, clean = _read(self.path)
        if not clean:
            _rewrite(self.path, entries)
        self.done = _index(entries)

    def entries(self):
        """Every entry, superseded ones included, in order."""
        return read(self.path)

    def supersede(self, which, why, **marks):
        """Mark the kept entries that `which(entry)` picks superseded, with
        `why` and `marks` (the journal is rewritten whole; they stay in it,
        and a resumed run measures them again).  Returns how many."""
        entries, count = read(self.path), 0
        for e in entries:
            if not e.get("superseded") and which(e):
                e.update(superseded=True, superseded_why=why, **marks)
                count += 1
        if count:
            _rewrite(self.path, entries)
            self.done = _index(entries)
        return count

    def find(self, point, rate, seed):
        """The kept probe of (point, rate, seed) from an earlier run, or None."""
        return self.done.get(_key(point, rate, seed))

    def add(self, point, tag, probe, attempt=1, superseded=False):
        entry = {"point": point, "tag": tag, "rate": probe["rate"], "seed": probe["seed"],
                 "attempt": attempt, "superseded": superseded, "probe": probe,
                 "git_commit": self.commit,
                 "measured_at": datetime.datetime.now(datetime.timezone.utc)
                 .isoformat(timespec="seconds")}
        data = gzip.compress((json.dumps(entry, default=str) + "\n").encode())
        with open(self.path, "ab") as f:
            f.write(data)
            f.flush()
            os.fsync(f.fileno())
        if not superseded:
            self.done[_key(point, probe["rate"], probe["seed"])] = probe


def _slim(probe):
    slim = {k: v for k, v in probe.items() if k not in BULKY}
    if isinstance(slim.get("parts"), list):
        slim["parts"] = [{k: v for k, v in part.items() if k not in BULKY}
                         if isinstance(part, dict) else part for part in slim["parts"]]
    return slim


def commits(entries):
    """The commits that measured `entries`, in order of first appearance."""
    return list(dict.fromkeys(e.get("git_commit") for e in entries))


def carry(directory, dest):
    """Write DIR's journal to `dest` (one gzip stream, a journal that
    `Journal` reads) without the probes' BULKY parts; the entries kept are
    every entry, superseded ones included, so the carried run reports
    what the measured one would.  Run it on the machine that measured the
    run: a probe that does not name its boot (`boot_id`; a journal of an
    older commit) is given this one's.  Returns the entries written."""
    entries = read(os.path.join(directory, NAME))
    if not entries:
        raise ValueError(f"{directory}: no probes in {NAME}")
    here = results.boot_id()
    slim = [{**e, "probe": {**_slim(e["probe"]), "boot_id": e["probe"].get("boot_id") or here},
             "carried": True} for e in entries]
    tmp = dest + ".tmp"
    with gzip.open(tmp, "wt", encoding="utf-8") as f:
        for e in slim:
            f.write(json.dumps(e, default=str, sort_keys=True) + "\n")
    os.replace(tmp, dest)
    return slim
