"""Fixtures for the vidload tests: a small library materialized into a real
directory (no hddsim needed) and nginx on loopback serving it, on ports
18400-18449 (vidload's own range)."""
import os
import pathlib
import shutil
import socket
import subprocess
import tempfile
import time
import types

import pytest

from conftest import bin_path
from fixtures_common import write_library  # noqa: F401 - tests import it from here

VIDLOAD_PORT_BASE = 18400
SEGMENT = 524288           # 10 s at 419430 b/s
SD = 419430


def served_dir(prefix):
    """A fresh directory nginx's unprivileged workers can read.  Not under
    pytest's basetemp: every pytest run resets /tmp/pytest-of-root to 0700."""
    d = tempfile.mkdtemp(prefix=f"vidload-{prefix}-", dir="/tmp")
    os.chmod(d, 0o755)
    return d


def materialize(library, root):
    subprocess.run([bin_path("vidload"), "--materialize", str(root), "--library", str(library)],
                   check=True)
    subprocess.run(["chmod", "-R", "a+rX", str(root)], check=True)


@pytest.fixture(scope="session")
def vidload_lib(tmp_path_factory):
    """Twelve whole-file SD videos of 60..170 s (whole segments), two
    chunked ones in 0.5 MiB chunk files (a segment each) and two in 1 MiB
    chunk files (two segments each), materialized under .root."""
    d = pathlib.Path(served_dir("lib"))
    videos = [(f"sd/v{i:05d}.mp4", (6 + i) * SEGMENT, SD, 0) for i in range(12)]
    chunked = [(f"ch/c{i:05d}.mp4", 9 * SEGMENT + 4096, SD, SEGMENT) for i in range(2)]
    lib = d / "lib.lcvl"
    write_library(lib, videos + chunked)
    only_chunked = d / "chunked.lcvl"
    write_library(only_chunked, chunked)
    chunked2 = [(f"ch2/c{i:05d}.mp4", 9 * SEGMENT + 4096, SD, 2 * SEGMENT) for i in range(2)]
    only_chunked2 = d / "chunked2.lcvl"
    write_library(only_chunked2, chunked2)
    root = d / "www"
    materialize(lib, root)
    materialize(only_chunked2, root)
    yield types.SimpleNamespace(library=lib, chunked=only_chunked, chunked2=only_chunked2,
                                root=root, dir=d)
    shutil.rmtree(d, ignore_errors=True)


@pytest.fixture
def vidload_www():
    """A per-test directory to materialize libraries into, readable by nginx."""
    d = pathlib.Path(served_dir("www"))
    yield d
    shutil.rmtree(d, ignore_errors=True)


def _free_port(start):
    """The first port of vidload's range, from `start` on, that nobody listens on."""
    for i in range(50):
        port = VIDLOAD_PORT_BASE + (start + i) % 50
        with socket.socket() as s:
            try:
                s.bind(("127.0.0.1", port))
                return port
            except OSError:
                continue
    raise RuntimeError("no free port in 18400-18449")


def _wait_port(port, proc, timeout=10.0):
    end = time.monotonic() + timeout
    while time.monotonic() < end:
        if proc.poll() is not None:
            raise RuntimeError(f"nginx exited with status {proc.returncode}")
        try:
            with socket.create_connection(("127.0.0.1", port), timeout=0.5):
                return
        except OSError:
            time.sleep(0.05)
    raise RuntimeError(f"nginx did not listen on {port}")


@pytest.fixture
def vidload_nginx(tmp_path):
    """Factory: start(root, server_extra="", listen_extra="", http_extra="") -> URL of an
    nginx serving `root`; its access log (connection, request number, end
    time, request time, status, bytes, path, Range or -) is at .log.  Stopped at teardown."""
    procs = []
    counter = [0]

    def start(root, server_extra="", listen_extra="", http_extra=""):
        port = _free_port(os.getpid() + counter[0])
        counter[0] += 1
        d = tmp_path / f"nginx{counter[0]}"
        d.mkdir()
        log = d / "access.log"
        conf = d / "nginx.conf"
        conf.write_text(f"""
worker_processes 1;
daemon off;
pid {d}/nginx.pid;
error_log {d}/error.log;
worker_rlimit_nofile 20000;
events {{ worker_connections 10000; }}
http {{
  log_format vl '$connection $connection_requests $msec $request_time $status $body_bytes_sent $uri $http_range';
  access_log {log} vl;
  sendfile on;
  keepalive_timeout 75s;
  {http_extra}
  server {{
    listen 127.0.0.1:{port} {listen_extra};
    root {root};
    {server_extra}
  }}
}}
""")
        proc = subprocess.Popen(["nginx", "-c", str(conf)], stdout=subprocess.DEVNULL,
                                stderr=subprocess.DEVNULL)
        procs.append(proc)
        _wait_port(port, proc)
        return types.SimpleNamespace(url=f"http://127.0.0.1:{port}/", log=log, port=port)

    yield start
    for p in procs:
        p.terminate()
    for p in procs:
        try:
            p.wait(timeout=10)
        except subprocess.TimeoutExpired:
            p.kill()
            p.wait()
