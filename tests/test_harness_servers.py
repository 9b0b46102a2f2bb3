"""Each server, started from its generated config, serves files
byte-exact (whole and by Range) with workers running as www-data, inside
a memory cgroup, and is gone after stop()."""
import http.client
import os
import pwd

import pytest

from libception import servers

CONFIGS = [
    ("nginx", {}),
    ("nginx", {"workers": 2, "aio": "threads", "sendfile_max_chunk": 512 * 1024}),
    ("nginx", {"sendfile": False}),
    ("apache", {"mpm": "event"}),
    ("apache", {"mpm": "worker", "threads_per_child": 16, "max_request_workers": 64}),
    ("apache", {"mpm": "prefork", "max_request_workers": 8}),
    ("lighttpd", {}),
    ("lighttpd", {"network_backend": "writev"}),
    # the tuning grid's far ends (bench/tuning.py)
    ("nginx", {"workers": 4, "aio": "threads", "thread_pool": 4}),
    ("apache", {"mpm": "event", "threads_per_child": 128, "max_request_workers": 4096}),
    ("lighttpd", {"network_backend": "write", "max_worker": 4}),
    ("caddy", {}),
    ("caddy", {"gomaxprocs": 16}),
]


def _get(port, path, headers=None):
    c = http.client.HTTPConnection("127.0.0.1", port, timeout=20)
    try:
        c.request("GET", path, headers=headers or {})
        r = c.getresponse()
        return r.status, r.read()
    finally:
        c.close()


def _uids(pids):
    uids = {}
    for pid in pids:
        try:
            with open(f"/proc/{pid}/status") as f:
                for line in f:
                    if line.startswith("Uid:"):
                        uids[pid] = int(line.split()[2])  # effective
        except OSError:
            pass
    return uids


@pytest.mark.parametrize("name,tunables", CONFIGS,
                         ids=[f"{n}-{'-'.join(f'{k}={v}' for k, v in t.items()) or 'default'}"
                              for n, t in CONFIGS])
def test_server_serves_bytes_exactly_as_www_data(name, tunables, scratch, harness_docroot,
                                                 harness_port, harness_cgroup):
    root, files = harness_docroot
    group = harness_cgroup(512 * 2**20)
    s = servers.make_server(name, scratch / "srv", root, harness_port, tunables)
    try:
        s.start(cgroup=group)
        for fname, data in files.items():
            status, body = _get(harness_port, "/" + fname)
            assert status == 200, fname
            assert body == data, fname
        big = files["video.mp4"]
        status, body = _get(harness_port, "/video.mp4", {"Range": "bytes=1048576-1572863"})
        assert status == 206
        assert body == big[1048576:1572864]
        status, _ = _get(harness_port, "/missing.bin")
        assert status == 404
        pids = s.pids()
        assert set(pids) <= set(group.pids()) and pids
        www = pwd.getpwnam("www-data").pw_uid
        uids = _uids(pids)
        # Root master (binds, opens logs), workers as www-data; lighttpd is
        # a single process that drops to www-data itself, Caddy one that
        # setpriv started as www-data.
        assert www in uids.values(), uids
    finally:
        s.stop()
    assert not group.pids()
    assert servers.port_free(harness_port)


def test_unknown_tunable_is_refused(scratch, harness_port):
    with pytest.raises(servers.ServerError, match="unknown tunable"):
        servers.make_server("nginx", scratch, scratch, harness_port, {"wokers": 2})


def test_bad_config_fails_with_log_tail(scratch, harness_docroot, harness_port):
    root, _ = harness_docroot
    s = servers.make_server("nginx", scratch / "srv", root, harness_port,
                            {"output_buffers": "nonsense"})
    with pytest.raises(servers.ServerError, match="did not start"):
        s.start()
    assert servers.port_free(harness_port)
