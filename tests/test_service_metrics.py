"""Prometheus metrics: `libception stats --prometheus` and the daemon's
opt-in /metrics listener give the same text, promtool accepts it, the
numbers are the statistics' own, and the listener stays bounded against
clients that connect and say nothing or send too much."""
import http.client
import os
import socket
import subprocess

import pytest

from conftest import BIN
from fixtures_daemon import Daemon, make_cold_file

LIBCEPTION = os.path.join(BIN, "libception")
pytestmark = pytest.mark.skipif(not os.path.exists("/usr/bin/promtool"),
                                reason="promtool (Debian package prometheus) not installed")


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def scrape(port, path="/metrics", method="GET"):
    c = http.client.HTTPConnection("127.0.0.1", port, timeout=10)
    try:
        c.request(method, path)
        r = c.getresponse()
        return r.status, r.getheader("Content-Type"), r.read().decode()
    finally:
        c.close()


def promtool(text):
    r = subprocess.run(["promtool", "check", "metrics"], input=text, capture_output=True,
                       text=True, timeout=60)
    return r.returncode, r.stdout + r.stderr


def sample(text, name, **labels):
    """The value of one series in exposition text, or None."""
    want = ",".join(f'{k}="{v}"' for k, v in labels.items())
    key = f"{name}{{{want}}}" if want else name
    for line in text.splitlines():
        if line.startswith(key + " "):
            return float(line.split()[-1])
    return None


@pytest.fixture
def daemon_with_metrics(daemon_dir, tmp_path):
    port = free_port()
    d = Daemon(daemon_dir, ["--metrics-listen", f"127.0.0.1:{port}",
                            "--policy", "bitrate:scale=none,size=4M"]).start()
    # traffic: a cold file read through the library, 4 KiB at a time
    path = make_cold_file(str(tmp_path / "cold"), 16 << 20)
    r = subprocess.run(["cat", path], env=d.env(), stdout=subprocess.DEVNULL, timeout=60)
    assert r.returncode == 0
    yield d, port, path
    d.kill()


def test_text_passes_promtool_and_matches_the_stats(daemon_with_metrics):
    d, port, path = daemon_with_metrics
    r = subprocess.run([LIBCEPTION, "stats", "--socket", d.path, "--prometheus"],
                       capture_output=True, text=True, timeout=30)
    assert r.returncode == 0, r.stderr
    rc, problems = promtool(r.stdout)
    assert rc == 0 and not problems.strip(), problems
    dev = d.device(path=path)
    name = dev["name"]
    assert sample(r.stdout, "libception_device_requests_total", device=name) == dev["requests"]
    assert sample(r.stdout, "libception_device_read_bytes_total", device=name) == dev["bytes_read"]
    assert sample(r.stdout, "libception_device_windows_total", device=name) == dev["reads"] > 0
    for metric, key in [("user_turns", "user_turns"), ("deadline_misses", "deadline_misses"),
                        ("window_cuts", "cuts"), ("head_travel_bytes", "head_travel_bytes")]:
        assert sample(r.stdout, f"libception_device_{metric}_total",
                      device=name) == dev["order"][key], metric
    # histograms: +Inf and _count are the statistics' counts
    for metric, key in [("libception_device_queue_wait_seconds", "wait_us"),
                        ("libception_device_service_seconds", "service_us")]:
        assert sample(r.stdout, metric + "_count", device=name) == dev[key]["count"] > 0
        assert sample(r.stdout, metric + "_bucket", device=name, le="+Inf") == dev[key]["count"]
    # a sizing policy's accounting is there (not for fixed, which keeps none)
    acct = dev["policy"]["accounting"]["total"]
    assert sample(r.stdout, "libception_device_prefetch_useful_bytes_total",
                  device=name) == acct["useful_bytes"]
    assert sample(r.stdout, "libception_device_prefetch_evicted_bytes_total",
                  device=name) == acct["evicted_bytes"]
    # the HTTP listener serves the same families
    status, ctype, body = scrape(port)
    assert status == 200 and ctype.startswith("text/plain; version=0.0.4")
    assert promtool(body)[0] == 0
    families = {line.split()[2] for line in body.splitlines() if line.startswith("# TYPE")}
    assert families == {line.split()[2] for line in r.stdout.splitlines()
                        if line.startswith("# TYPE")}


def test_http_answers_and_refusals(daemon_with_metrics):
    d, port, _ = daemon_with_metrics
    assert scrape(port, "/")[0] == 404
    assert scrape(port, "/metrics", "POST")[0] == 405
    status, _, body = scrape(port, "/metrics", "HEAD")
    assert status == 200 and body == ""
    # a request head larger than the daemon reads is refused, not buffered
    with socket.create_connection(("127.0.0.1", port), timeout=10) as s:
        s.sendall(b"GET /metrics HTTP/1.1\r\nX: " + b"a" * 8192 + b"\r\n\r\n")
        assert s.recv(64).startswith(b"HTTP/1.1 431")


def test_silent_clients_do_not_block_scrapes_or_clients(daemon_with_metrics):
    """More silent connections than the listener serves at once: the
    Unix-socket clients never wait, and a scrape gets through once the
    silent ones time out (5 s deadline each)."""
    d, port, path = daemon_with_metrics
    silent = [socket.create_connection(("127.0.0.1", port), timeout=10) for _ in range(12)]
    try:
        assert d.stats()["pid"] == d.proc.pid                 # main thread answers
        r = subprocess.run(["cat", path], env=d.env(), stdout=subprocess.DEVNULL, timeout=60)
        assert r.returncode == 0
        status, _, body = scrape(port)                        # waits for a slot
        assert status == 200 and "libception_device_requests_total" in body
        # the first silent ones were closed by their deadline
        closed = 0
        for s in silent:
            s.settimeout(0.1)
            try:
                closed += s.recv(1) == b""
            except (TimeoutError, ConnectionResetError):
                pass
        assert closed >= 1
    finally:
        for s in silent:
            s.close()


def test_listen_errors_are_reported(daemon_dir):
    with socket.socket() as busy:
        busy.bind(("127.0.0.1", 0))
        busy.listen(1)
        port = busy.getsockname()[1]
        r = subprocess.run([os.path.join(BIN, "receptiond"), "--no-config", "--socket",
                            os.path.join(daemon_dir, "m.sock"), "--metrics-listen",
                            f"127.0.0.1:{port}"], capture_output=True, text=True, timeout=30)
    assert r.returncode == 1
    assert r.stderr.startswith(f'receptiond: metrics-listen "127.0.0.1:{port}": ')
    assert not os.path.exists(os.path.join(daemon_dir, "m.sock"))
