"""nginx with its usual `user www-data;` serving root-owned files under
libception.so gets prefetching from the root daemon: the workers may not
cachestat those files, the socket lets them in, and the daemon's stats
show ENSUREs from www-data processes and windows of the prefetch size."""
import os
import pwd

import pytest

from fixtures_common import drop_cache, http_get
from fixtures_daemon import make_cold_file
from libception import servers

MiB = 1 << 20


@pytest.mark.parametrize("sendfile", [True, False], ids=["sendfile-on", "sendfile-off"])
def test_nginx_www_data_workers_get_prefetching(need_library, receptiond, scratch, harness_port,
                                                sendfile):
    try:
        www = pwd.getpwnam("www-data").pw_uid
    except KeyError:
        pytest.skip("no www-data user")
    root = scratch / "docroot"
    root.mkdir()
    os.chmod(root, 0o755)
    want = {}
    for i in range(2):
        p = str(root / f"video{i}.mp4")
        with open(p, "wb"):
            pass
        os.chmod(p, 0o644)     # root's file: the workers cannot cachestat it
        make_cold_file(p, 6 * MiB + 4097 * i, seed=40 + i)
        with open(p, "rb") as f:
            want[f"video{i}.mp4"] = f.read()
        drop_cache(p)
    s = servers.make_server("nginx", str(scratch / "srv"), str(root), harness_port,
                            {"sendfile": sendfile})
    try:
        s.start(env=servers.libception_env(need_library, receptiond.path))
        for name, data in want.items():
            status, body = http_get(harness_port, "/" + name)
            assert status == 200 and body == data, name
    finally:
        s.stop()
    st = receptiond.stats()
    from_workers = [c for c in st["clients"] if c["uid"] == www and c["ensures"] > 0]
    assert from_workers, st["clients"]
    dev = receptiond.device()
    assert dev["requests"] >= 2 and dev["reads"] >= 2
    # Each miss was enlarged: at least one full prefetch window per file.
    assert dev["bytes_read"] >= 2 * 2 * MiB, dev
    assert dev["inflight_max"] == 1
