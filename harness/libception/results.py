"""Versioned benchmark results (pyperf-like), written atomically after
every run so an interrupted scenario resumes where it stopped.

    {"schema": "libception-bench", "version": 1, "scenario": "demo",
     "machine": {...}, "date": "...", "git_commit": "...",
     "settings": {...}, "seeds": [...],
     "runs": [{"point": {"server": "nginx", "mode": "vanilla"}, ...}, ...]}

A run is identified by its `point` (a dict of the configuration it
measured); has(point) lets a scenario skip points already measured.
"""
import datetime
import json
import os
import platform
import subprocess
import tempfile

SCHEMA = "libception-bench"
VERSION = 1


class ResultsError(Exception):
    """A results file is unreadable or from another schema/version."""


def boot_id():
    """This boot's random id.  The machines a run is carried across can
    look the same by every other field here, and the same probe differs
    between them (docs/benchmark.md, "Carrying a run to another machine")."""
    try:
        with open("/proc/sys/kernel/random/boot_id", encoding="ascii") as f:
            return f.read().strip()
    except OSError:
        return None


def machine():
    """What the numbers depend on: CPU, cores, memory, kernel, and which
    boot of which machine."""
    info = {"hostname": platform.node(), "kernel": platform.release(),
            "cpus": os.cpu_count(), "python": platform.python_version(),
            "boot_id": boot_id()}
    try:
        with open("/proc/cpuinfo") as f:
            for line in f:
                if line.startswith("model name"):
                    info["cpu"] = line.split(":", 1)[1].strip()
                    break
        with open("/proc/meminfo") as f:
            info["mem_kib"] = int(f.readline().split()[1])
    except OSError:
        pass
    return info


def _repo():
    return os.path.dirname(os.path.dirname(os.path.dirname(os.path.realpath(__file__))))


def git_commit(repo=None):
    repo = repo or _repo()
    try:
        out = subprocess.run(["git", "-C", repo, "rev-parse", "HEAD"], capture_output=True,
                             text=True, timeout=10)
        dirty = subprocess.run(["git", "-C", repo, "status", "--porcelain", "--untracked-files=no"],
                               capture_output=True, text=True, timeout=10)
        if out.returncode == 0:
            return out.stdout.strip() + ("-dirty" if dirty.stdout.strip() else "")
    except (OSError, subprocess.SubprocessError):
        pass
    return None


def git_changed(was, now, repo=None):
    """The files that differ between commits `was` and `now`, or None when
    this repository does not know one of them."""
    try:
        out = subprocess.run(["git", "-C", repo or _repo(), "diff", "--name-only", was, now],
                             capture_output=True, text=True, timeout=30)
    except (OSError, subprocess.SubprocessError):
        return None
    return out.stdout.split() if out.returncode == 0 else None


def point_key(point):
    return json.dumps(point, sort_keys=True)


class Results:
    def __init__(self, path, scenario, settings=None, seeds=None, resume=False):
        self.path = path
        self.commit = git_commit()
        if resume and os.path.exists(path):
            self.data = load(path)
            if self.data.get("scenario") != scenario:
                raise ResultsError(f"{path}: holds scenario {self.data.get('scenario')!r}, "
                                   f"not {scenario!r}")
            if settings is not None and self.data.get("settings") != settings:
                raise ResultsError(f"{path}: settings differ from this run's; "
                                   "use another --out or drop --resume")
        else:
            self.data = {"schema": SCHEMA, "version": VERSION, "scenario": scenario,
                         "machine": machine(),
                         "date": datetime.datetime.now(datetime.timezone.utc)
                         .isoformat(timespec="seconds"),
                         "git_commit": self.commit, "settings": settings or {},
                         "seeds": list(seeds or []), "runs": []}

    @property
    def runs(self):
        return self.data["runs"]

    def has(self, point):
        key = point_key(point)
        return any(point_key(r["point"]) == key for r in self.runs)

    def get(self, point):
        key = point_key(point)
        for r in self.runs:
            if point_key(r["point"]) == key:
                return r
        return None

    def add(self, point, **values):
        """Record one run and write the file at once.  Each run carries
        the commit and time it was measured at: a resumed file holds runs
        of several commits, and the file's own git_commit is its first."""
        key = point_key(point)
        self.data["runs"] = [r for r in self.runs if point_key(r["point"]) != key]
        stamp = {"git_commit": self.commit,
                 "measured_at": datetime.datetime.now(datetime.timezone.utc)
                 .isoformat(timespec="seconds")}
        self.runs.append({"point": point, **values, **stamp})
        self.save()

    def discard(self, which):
        """Forget the runs `which(run)` picks (a part measured again)."""
        self.data["runs"] = [r for r in self.runs if not which(r)]
        self.save()

    def save(self):
        write_atomic(self.path, self.data)


def write_atomic(path, obj):
    """Write JSON to a temporary file beside `path`, fsync it, rename it."""
    d = os.path.dirname(os.path.abspath(path))
    os.makedirs(d, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=".tmp-", suffix=".json", dir=d)
    try:
        with os.fdopen(fd, "w") as f:
            json.dump(obj, f, indent=1, sort_keys=False)
            f.write("\n")
            f.flush()
            os.fsync(f.fileno())
        os.rename(tmp, path)
    except BaseException:
        try:
            os.unlink(tmp)
        except OSError:
            pass
        raise


def load(path):
    try:
        with open(path) as f:
            data = json.load(f)
    except (OSError, ValueError) as e:
        raise ResultsError(f"{path}: {e}")
    if data.get("schema") != SCHEMA or data.get("version") != VERSION:
        raise ResultsError(f"{path}: not a {SCHEMA} version {VERSION} file")
    return data
