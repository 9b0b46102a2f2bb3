"""Drive the vidload load generator from Python: one run, a search for the
maximum failure-free rate, generator samples, and materializing a library.

Every call runs the `vidload` binary of this install and returns its parsed
JSON result (format: docs/vidload.md, "JSON").  Setup errors raise
VidloadError with vidload's own one-line message.
"""
import json
import os
import subprocess
import tempfile


class VidloadError(RuntimeError):
    pass


def prefix():
    """The install prefix this harness belongs to (PREFIX/share/libception/harness),
    or the source tree's build/."""
    here = os.path.dirname(os.path.abspath(__file__))
    p = os.path.abspath(os.path.join(here, "..", "..", "..", ".."))
    if os.path.isdir(os.path.join(p, "bin")) and os.path.isdir(os.path.join(p, "share", "libception")):
        return p
    return os.path.abspath(os.path.join(here, "..", "..", "build"))


def binary():
    p = os.path.join(prefix(), "bin", "vidload")
    if not os.access(p, os.X_OK):
        raise VidloadError(f"vidload not found at {p} (run make)")
    return p


# Keyword arguments -> options; True = a flag, lists are joined by commas.
_OPTIONS = {
    "zipf": "--zipf", "views": "--views", "segment": "--segment", "burst": "--burst",
    "deadline": "--deadline", "links": "--links", "delay_ms": "--delay-ms",
    "tick_ms": "--tick-ms", "rcvbuf": "--rcvbuf", "late_ms": "--late-ms",
    "progress": "--progress", "no_shuffle": "--no-shuffle", "quiet": "--quiet",
    "resolution": "--resolution", "repeats": "--repeats", "max_fail": "--max-fail",
    "between": "--between", "warmup": "--warmup", "timeline": "--timeline", "past": "--past",
}


def _args(opts):
    out = []
    for key, val in opts.items():
        if val is None or val is False:
            continue
        if key not in _OPTIONS:
            raise TypeError(f"vidload: unknown option {key!r}")
        if val is True:
            out.append(_OPTIONS[key])
        else:
            if isinstance(val, (list, tuple)):
                val = ",".join(str(v) for v in val)
            out += [_OPTIONS[key], str(val)]
    return out


def _run_json(cmd, timeout, log):
    with tempfile.TemporaryDirectory(prefix="vidload-") as tmp:
        path = os.path.join(tmp, "result.json")
        proc = subprocess.run(cmd + ["--json", path], stdout=subprocess.PIPE,
                              stderr=subprocess.PIPE, text=True, timeout=timeout)
        if log is not None:
            log.write(proc.stdout + proc.stderr)
        if proc.returncode != 0:
            msg = (proc.stderr.strip().splitlines() or [f"exit status {proc.returncode}"])[-1]
            raise VidloadError(msg)
        with open(path, encoding="utf-8") as f:
            result = json.load(f)
        result["stdout"] = proc.stdout
        return result


def run(url, library, rate, duration, seed=1, timeout=None, log=None, **opts):
    """One run at `rate` sessions/s for `duration` s (after `warmup=S`
    seconds whose sessions are not judged); the parsed JSON result
    ({"vidload": 1, "mode": "run", "settings": {...}, "result": {...}})."""
    cmd = [binary(), "--url", url, "--library", str(library), "--rate", str(rate),
           "--duration", str(duration), "--seed", str(seed)] + _args(opts)
    return _run_json(cmd, timeout or (duration + (opts.get("warmup") or 0)) * 2 + 60, log)


def past_reads(library, rate, past, seed=1, **opts):
    """What `vidload --past S` assumes the S seconds before its start read:
    [(t, offset, bytes, path)] per segment, t its last read in seconds from
    the start (negative), least recently read first (vidload/past.h)."""
    cmd = [binary(), "--past-reads", "--past", str(past), "--library", str(library),
           "--rate", str(rate), "--seed", str(seed)] + _args(opts)
    proc = subprocess.run(cmd, capture_output=True, text=True)
    if proc.returncode != 0:
        raise VidloadError(proc.stderr.strip())
    out = []
    for line in proc.stdout.splitlines():
        t, off, n, path = line.split(" ", 3)
        out.append((float(t), int(off), int(n), path))
    return out


def longest_video_s(library):
    """The longest video's duration in seconds: a past this long leaves
    every session running at the start in the steady state's number."""
    longest = 0.0
    with open(library, encoding="ascii") as f:
        for line in f:
            parts = line.split()
            if parts[:1] == ["video"] and int(parts[3]) > 0:
                longest = max(longest, int(parts[2]) * 8 / int(parts[3]))
    return longest


def search(url, library, lo, hi, duration, seed=1, timeout=None, log=None, **opts):
    """Bisection for the maximum failure-free rate within [lo, hi]; the parsed
    JSON with every probe and "answer" (None if even `lo` failed)."""
    cmd = [binary(), "--url", url, "--library", str(library), "--search", f"{lo}:{hi}",
           "--duration", str(duration), "--seed", str(seed)] + _args(opts)
    return _run_json(cmd, timeout, log)


def sample(kind, count, library=None, videos=None, rate=None, seed=1, **opts):
    """`count` draws of a generator as vidload makes them: zipf -> ranks,
    arrivals -> seconds between starts, views -> (view_s, video_s) pairs."""
    cmd = [binary(), "--sample", kind, "--count", str(count), "--seed", str(seed)]
    if library is not None:
        cmd += ["--library", str(library)]
    if videos is not None:
        cmd += ["--videos", str(videos)]
    if rate is not None:
        cmd += ["--rate", str(rate)]
    proc = subprocess.run(cmd + _args(opts), capture_output=True, text=True)
    if proc.returncode != 0:
        raise VidloadError(proc.stderr.strip())
    lines = proc.stdout.split("\n")[:-1]
    if kind == "zipf":
        return [int(x) for x in lines]
    if kind == "arrivals":
        return [float(x) for x in lines]
    return [tuple(float(v) for v in x.split()) for x in lines]


def materialize(library, directory):
    """Write the library's files with their synthetic content under `directory`."""
    proc = subprocess.run([binary(), "--materialize", str(directory), "--library", str(library)],
                          capture_output=True, text=True)
    if proc.returncode != 0:
        raise VidloadError(proc.stderr.strip())
