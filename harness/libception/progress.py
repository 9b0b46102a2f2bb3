"""Progress of a benchmark: one line per step, with the elapsed time and
an estimate of the time left (from the mean duration of finished steps,
or from the caller's own estimate of each step)."""
import sys
import time


def _fmt(seconds):
    seconds = int(max(0, seconds))
    if seconds >= 3600:
        return f"{seconds // 3600}h{seconds % 3600 // 60:02d}m"
    return f"{seconds // 60}m{seconds % 60:02d}s"


class Progress:
    def __init__(self, total_steps, prog="libception bench", out=None, clock=time.monotonic):
        self.total = max(1, total_steps)
        self.prog = prog
        self.out = out or sys.stderr
        self.clock = clock
        self.start = clock()
        self.done = 0
        self.step_start = None

    def begin(self, what):
        """A step starts: print it with elapsed time and ETA."""
        self.step_start = self.clock()
        self.total = max(self.total, self.done + 1)   # more steps than estimated
        self.line(f"[{self.done + 1}/{self.total}] {what}")

    def end(self):
        self.done += 1

    def skip(self, what):
        """A step already done (resume): counted, not timed."""
        self.total = max(1, self.total - 1)
        self.line(f"skip {what} (already in results)")

    def drop(self, steps):
        """Steps estimated that will not run (a part left out by --only)."""
        self.total = max(self.done + 1, self.total - steps)

    def eta(self):
        elapsed = self.clock() - self.start
        if self.done == 0:
            return None
        return elapsed / self.done * (self.total - self.done)

    def line(self, msg):
        elapsed = self.clock() - self.start
        eta = self.eta()
        tail = f" eta {_fmt(eta)}" if eta is not None else ""
        print(f"{self.prog}: {_fmt(elapsed)}{tail} {msg}", file=self.out, flush=True)
