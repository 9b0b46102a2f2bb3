"""results.py: versioned JSON written atomically, resumable by point;
cleanup.py: teardown in reverse order on exit, exception and SIGTERM;
progress.py: one line per step with an ETA."""
import io
import json
import os
import signal
import subprocess
import sys
import textwrap

import pytest

from libception import cleanup, progress, results


def test_results_roundtrip_and_resume(tmp_path):
    path = tmp_path / "out" / "demo.json"
    r = results.Results(str(path), "demo", settings={"a": 1}, seeds=[1, 2])
    r.add({"server": "nginx", "mode": "vanilla"}, rate=3.5)
    data = json.loads(path.read_text())
    assert data["schema"] == "libception-bench" and data["version"] == 1
    assert data["scenario"] == "demo" and data["seeds"] == [1, 2]
    assert "kernel" in data["machine"] and data["date"]
    (run,) = data["runs"]
    # each run says which commit measured it, and when (a resumed file mixes commits)
    assert run.pop("git_commit") == data["git_commit"] and run.pop("measured_at")
    assert run == {"point": {"server": "nginx", "mode": "vanilla"}, "rate": 3.5}
    again = results.Results(str(path), "demo", settings={"a": 1}, resume=True)
    assert again.has({"mode": "vanilla", "server": "nginx"})
    assert not again.has({"mode": "libception", "server": "nginx"})
    again.add({"server": "nginx", "mode": "vanilla"}, rate=4.0)  # replaces
    assert [r["rate"] for r in results.load(str(path))["runs"]] == [4.0]
    fresh = results.Results(str(path), "demo", settings={"a": 1}, resume=False)
    assert not fresh.has({"server": "nginx", "mode": "vanilla"})
    assert not [p for p in os.listdir(path.parent) if p.startswith(".tmp-")]


def test_resume_refuses_other_scenario_or_settings(tmp_path):
    path = str(tmp_path / "x.json")
    results.Results(path, "demo", settings={"a": 1}).save()
    with pytest.raises(results.ResultsError, match="scenario"):
        results.Results(path, "ablation", resume=True)
    with pytest.raises(results.ResultsError, match="settings differ"):
        results.Results(path, "demo", settings={"a": 2}, resume=True)
    (tmp_path / "bad.json").write_text("{not json")
    with pytest.raises(results.ResultsError, match="bad.json"):
        results.load(str(tmp_path / "bad.json"))


def test_cleanup_runs_in_reverse_even_after_failures():
    done = []
    log = []
    with pytest.raises(RuntimeError):
        with cleanup.Cleanup(log=log.append) as c:
            c.push("first", lambda: done.append(1))
            c.push("broken", lambda: 1 / 0)
            h = c.push("third", lambda: done.append(3))
            c.push("fourth", lambda: done.append(4))
            c.run_now(h)
            raise RuntimeError("boom")
    assert done == [3, 4, 1]
    assert len(log) == 1 and "broken" in log[0]


def test_cleanup_on_sigterm_in_a_real_process(tmp_path):
    marker = tmp_path / "cleaned"
    harness = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "harness")
    code = textwrap.dedent(f"""
        import sys, time
        sys.path.insert(0, {harness!r})
        from libception import cleanup
        with cleanup.Cleanup() as c:
            c.push("marker", lambda: open({str(marker)!r}, "w").write("ok"))
            print("ready", flush=True)
            time.sleep(60)
    """)
    p = subprocess.Popen([sys.executable, "-c", code], stdout=subprocess.PIPE, text=True)
    assert p.stdout.readline().strip() == "ready"
    p.send_signal(signal.SIGTERM)
    p.wait(timeout=20)
    assert p.returncode != 0
    assert marker.read_text() == "ok"


def test_a_sigterm_during_a_cleanup_step_ends_the_run_after_the_step(tmp_path):
    """A run tears each probe's disk down as the probe ends, which is when
    a stop script signals it: the step finishes, then the run stops (the
    signal was once taken for the step's failure and the run went on)."""
    harness = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "harness")
    code = textwrap.dedent(f"""
        import os, signal, sys, time
        sys.path.insert(0, {harness!r})
        from libception import cleanup
        done = []
        def unmount():
            os.kill(os.getpid(), signal.SIGTERM)
            time.sleep(0.2)
            done.append("unmounted")
        try:
            with cleanup.Cleanup() as c:
                c.push("last", lambda: print("torn down:", done, flush=True))
                c.run_now(c.push("unmount", unmount))
                print("went on", flush=True)
        except cleanup.Interrupted as e:
            print("interrupted:", e, flush=True)
    """)
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         timeout=20).stdout.splitlines()
    assert out == ["torn down: ['unmounted']", "interrupted: signal 15"]


def _progress(total):
    """A Progress on a clock the test sets (now[0]), printing into out."""
    now = [0.0]
    out = io.StringIO()
    return progress.Progress(total, out=out, clock=lambda: now[0]), out, now


def test_progress_prints_steps_with_eta():
    pr, out, now = _progress(3)
    pr.begin("one")
    now[0] = 60
    pr.end()
    pr.begin("two")
    lines = out.getvalue().splitlines()
    assert lines[0] == "libception bench: 0m00s [1/3] one"
    assert lines[1] == "libception bench: 1m00s eta 2m00s [2/3] two"


def test_progress_drops_steps_left_out():
    pr, out, now = _progress(10)
    pr.begin("one")
    now[0] = 60
    pr.end()
    pr.drop(7)          # parts --only leaves out
    pr.begin("two")
    pr.drop(100)        # never below the step running
    pr.end()
    pr.begin("three")
    lines = out.getvalue().splitlines()
    assert lines[1] == "libception bench: 1m00s eta 2m00s [2/3] two"
    assert lines[2] == "libception bench: 1m00s eta 0m30s [3/3] three"
