"""A registry of things a benchmark sets up (mounts, cgroups, processes,
daemons), torn down in reverse order on normal exit, on an exception, on
SIGINT and on SIGTERM, so an interrupted `make demo` leaves nothing behind.

    with Cleanup() as c:
        c.push("unmount /mnt/x", lambda: hddsim.unmount(...))
        ...

Each action runs once; a failing action is reported and the rest still run.
What SIGKILL leaves (no unwinding) is named in state files that
`libception cleanup` reads (StackRecord, remove_leftovers, below).
"""
import glob
import json
import os
import signal
import subprocess
import sys
import tempfile


class Interrupted(Exception):
    """Raised in the main thread when SIGTERM arrives (SIGINT raises
    KeyboardInterrupt as usual); unwinds through the `with` blocks."""


class Cleanup:
    def __init__(self, prog="libception bench", log=None):
        self.prog = prog
        self.log = log or (lambda msg: print(msg, file=sys.stderr, flush=True))
        self._stack = []
        self._old = {}
        self._stepping = 0       # cleanup steps running
        self._closing = False    # the final teardown (close)
        self._pending = None     # a signal that came during a step

    def push(self, what, action):
        """Register `action()` to run at teardown; returns a handle for
        release()/run_now()."""
        entry = [what, action]
        self._stack.append(entry)
        return entry

    def release(self, handle):
        """Forget an action (its resource was torn down some other way)."""
        if handle in self._stack:
            self._stack.remove(handle)

    def run_now(self, handle):
        """Tear one resource down now (e.g. between two runs)."""
        if handle in self._stack:
            self._stack.remove(handle)
            self._run(handle)

    def _run(self, entry):
        what, action = entry
        self._stepping += 1
        try:
            action()
        except Exception as e:  # keep tearing the rest down
            self.log(f"{self.prog}: cleanup: {what}: {e}")
        finally:
            self._stepping -= 1
        if self._pending and not self._stepping and not self._closing:
            signum, self._pending = self._pending, None
            raise Interrupted(f"signal {signum}")

    def close(self):
        self._closing = True
        try:
            while self._stack:
                self._run(self._stack.pop())
        finally:
            self._closing = False

    # --- signals -----------------------------------------------------------
    def _on_term(self, signum, frame):
        # In a cleanup step the signal waits for the step's end (_run):
        # raised inside it, the step's own error handling took it for the
        # step's failure and the run went on (a SIGTERM that came while a
        # probe's disk was unmounted, 2026-11-28).  During the final
        # teardown it is already being answered.
        if self._stepping or self._closing:
            self._pending = self._pending or signum
            return
        raise Interrupted(f"signal {signum}")

    def __enter__(self):
        try:
            self._old[signal.SIGTERM] = signal.signal(signal.SIGTERM, self._on_term)
            self._old[signal.SIGHUP] = signal.signal(signal.SIGHUP, self._on_term)
        except ValueError:  # not the main thread: the caller handles signals
            pass
        return self

    def __exit__(self, exc_type, exc, tb):
        # A second Ctrl-C during teardown must not leave half the stack.
        old_int = signal.signal(signal.SIGINT, signal.SIG_IGN) \
            if _main_thread() else None
        try:
            self.close()
        finally:
            if old_int is not None:
                signal.signal(signal.SIGINT, old_int)
            for sig, handler in self._old.items():
                signal.signal(sig, handler)
            self._old.clear()
        return False


def _main_thread():
    import threading
    return threading.current_thread() is threading.main_thread()


# --- what a killed run leaves ------------------------------------------------
# A run that SIGKILL stops cannot unwind; each stack it built (hddsim mount,
# loop device, file system mount) is named in a state file here, written
# before each piece is set up, so `libception cleanup` can take down exactly
# the pieces of dead owners and never those of a run still alive.
STATE_DIR = "/run/libception-stacks"


def start_time(pid):
    """The process's start time (clock ticks since boot), to tell it from a
    later process that reuses its pid; None if it is gone."""
    try:
        with open(f"/proc/{pid}/stat", encoding="ascii") as f:
            return int(f.read().rsplit(")", 1)[1].split()[19])
    except (OSError, IndexError, ValueError):
        return None


class StackRecord:
    """The state file of one stack: pieces in setup order, each a dict
    with "kind" (hddsim, loop, mount) and "path"."""

    def __init__(self, label, state_dir=None):
        self.dir = state_dir or STATE_DIR
        os.makedirs(self.dir, exist_ok=True)
        pid = os.getpid()
        self.data = {"label": label, "owner": pid, "owner_start": start_time(pid), "pieces": []}
        fd, self.path = tempfile.mkstemp(prefix=f"{pid}-", suffix=".json", dir=self.dir)
        os.close(fd)
        self._write()

    def add(self, kind, path, **extra):
        self.data["pieces"].append({"kind": kind, "path": path, **extra})
        self._write()

    def note(self, **extra):
        """Add what became known once the last piece was up (a pid)."""
        self.data["pieces"][-1].update(extra)
        self._write()

    def _write(self):
        tmp = self.path + ".tmp"
        with open(tmp, "w", encoding="utf-8") as f:
            json.dump(self.data, f)
        os.rename(tmp, self.path)

    def close(self):
        """The stack is down: forget it."""
        try:
            os.unlink(self.path)
        except FileNotFoundError:
            pass


def remove_piece(piece):
    """Take one piece of a dead stack down (nothing if it is gone already)."""
    from . import hddsim, loopdev
    path = piece["path"]
    if piece["kind"] == "mount":
        if hddsim.is_mounted(path):
            r = subprocess.run(["umount", path], capture_output=True, check=False)
            if r.returncode:
                subprocess.run(["umount", "-l", path], capture_output=True, check=False)
    elif piece["kind"] == "loop":
        # Every loop device on this stack's own disk file, whatever its number.
        for dev in glob.glob("/sys/block/loop*"):
            if loopdev.backing_file(dev) == path:
                loopdev.detach("/dev/" + os.path.basename(dev))
    elif piece["kind"] == "hddsim":
        for cmd in (["fusermount3", "-u", path], ["fusermount3", "-uz", path]):
            if hddsim.is_mounted(path):
                subprocess.run(cmd, capture_output=True, check=False)
        pid = piece.get("pid")
        if pid and start_time(pid) == piece.get("pid_start"):
            os.kill(pid, signal.SIGTERM)   # the same hddsim, not a reused pid


def remove_leftovers(state_dir=None, log=print):
    """Tear down the stacks of owners that are gone; returns how many."""
    state_dir = state_dir or STATE_DIR
    removed = 0
    for path in sorted(glob.glob(os.path.join(state_dir, "*.json"))):
        try:
            with open(path, encoding="utf-8") as f:
                data = json.load(f)
        except (OSError, ValueError):
            continue
        if start_time(data["owner"]) == data.get("owner_start"):
            continue   # its owner still runs and will tear it down
        for piece in reversed(data["pieces"]):
            try:
                remove_piece(piece)
                log(f"cleanup: {piece['kind']} {piece['path']} (of dead pid {data['owner']})")
            except Exception as e:  # keep going: the rest may still come down
                log(f"cleanup: {piece['kind']} {piece['path']}: {e}")
        os.unlink(path)
        removed += 1
    return removed
