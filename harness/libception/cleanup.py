"""A registry of things a benchmark sets up (mounts, cgroups, processes,
daemons), torn down in reverse order on normal exit, on an exception, on
SIGINT and on SIGTERM, so an interrupted `make demo` leaves nothing behind.

    with Cleanup() as c:
        c.push("unmount /mnt/x", lambda: hddsim.unmount(...))
        ...

Each action runs once; a failing action is reported and the rest still run.
"""
import signal
import sys


class Interrupted(Exception):
    """Raised in the main thread when SIGTERM arrives (SIGINT raises
    KeyboardInterrupt as usual); unwinds through the `with` blocks."""


class Cleanup:
    def __init__(self, prog="libception bench", log=None):
        self.prog = prog
        self.log = log or (lambda msg: print(msg, file=sys.stderr, flush=True))
        self._stack = []
        self._old = {}

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
        try:
            action()
        except Exception as e:  # keep tearing the rest down
            self.log(f"{self.prog}: cleanup: {what}: {e}")

    def close(self):
        while self._stack:
            self._run(self._stack.pop())

    # --- signals -----------------------------------------------------------
    def _on_term(self, signum, frame):
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
