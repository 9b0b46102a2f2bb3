"""hddsim as programs see it: exact bytes, page cache, mmap, sendfile,
nginx, clean unmount, errors."""
import filecmp
import mmap
import os
import signal
import subprocess
import time
import urllib.request

import pytest

from conftest import bin_path
from fixtures_common import cachestat
from fixtures_hddsim import SMALL_LIBRARY, content_bytes, expected_files
from libception import hddsim


def test_every_byte_matches_content(small_library, hddsim_mount):
    m = hddsim_mount(small_library)
    want = expected_files(SMALL_LIBRARY)
    for rel, (video, off, size) in want.items():
        got = subprocess.run(["cat", os.path.join(m.path, rel)], capture_output=True, check=True).stdout
        assert got == content_bytes(video, off, size), rel
    # The chunk directories list exactly their chunks, in order.
    assert sorted(os.listdir(os.path.join(m.path, "sd/v00001.mp4"))) == ["000000", "000001", "000002"]
    assert sorted(os.listdir(m.path)) == ["hd", "sd"]  # the stats directory is hidden


def test_directory_tree_library_is_byte_exact(scratch, hddsim_mount):
    src = scratch / "tree"
    (src / "a" / "b").mkdir(parents=True)
    (src / "top.txt").write_bytes(b"hello\n")
    (src / "a" / "empty").write_bytes(b"")
    (src / "a" / "b" / "big.bin").write_bytes(os.urandom(3 * 1048576 + 5))
    m = hddsim_mount(str(src))
    r = subprocess.run(["diff", "-r", str(src), m.path], capture_output=True, text=True)
    assert r.returncode == 0, r.stdout + r.stderr


def test_mmap_and_sendfile(small_library, hddsim_mount):
    m = hddsim_mount(small_library)
    path = os.path.join(m.path, "sd/v00000.mp4")
    size = os.path.getsize(path)
    with open(path, "rb") as f, mmap.mmap(f.fileno(), 0, prot=mmap.PROT_READ) as mm:
        assert mm[size - 4096:] == content_bytes("sd/v00000.mp4", size - 4096, 4096)
    r, w = os.pipe()
    out = b""
    with open(path, "rb") as f:
        pid = os.fork()
        if pid == 0:
            os.close(r)
            sent = 0
            while sent < 200000:
                sent += os.sendfile(w, f.fileno(), 1000 + sent, 200000 - sent)
            os._exit(0)
        os.close(w)
        while chunk := os.read(r, 65536):
            out += chunk
        os.waitpid(pid, 0)
        os.close(r)
    assert out == content_bytes("sd/v00000.mp4", 1000, 200000)


def assert_every_page_went_into_the_cache(path):
    """Reclaim may take pages the moment they land when other work has
    filled memory (CI once lost 3 of 772); a page reclaim takes leaves a
    shadow entry, counted as evicted, where a page never cached, or
    dropped by an invalidation, leaves none.  Returns the pages cached."""
    cs = cachestat(path)
    pages = (os.path.getsize(path) + 4095) // 4096
    assert cs.nr_cache + cs.nr_evicted == pages, \
        f"{cs.nr_cache} cached + {cs.nr_evicted} reclaimed of {pages} pages"
    return cs.nr_cache


def test_second_read_comes_from_page_cache(small_library, hddsim_mount):
    m = hddsim_mount(small_library)
    path = os.path.join(m.path, "sd/v00000.mp4")
    pages = (os.path.getsize(path) + 4095) // 4096
    assert cachestat(path).nr_cache == 0
    with open(path, "rb") as f:
        first = f.read()
    cached = assert_every_page_went_into_the_cache(path)
    before = m.stats()
    with open(path, "rb") as f:  # a new open keeps the cache (keep_cache)
        assert f.read() == first
    # Only the pages reclaim took may go to the drive again.
    assert m.stats()["bytes"] - before["bytes"] <= (pages - cached) * 4096, \
        "second read went to the drive"
    m.drop_cache([path])
    assert cachestat(path).nr_cache == 0
    with open(path, "rb") as f:
        f.read()
    assert m.stats()["reads"] > before["reads"]


NGINX_CONF = """
daemon off;
master_process on;
worker_processes 1;
user www-data;
error_log {d}/error.log;
pid {d}/nginx.pid;
events {{ worker_connections 64; }}
http {{
    access_log off;
    sendfile on;
    client_body_temp_path {d}/tmp; proxy_temp_path {d}/tmp; fastcgi_temp_path {d}/tmp;
    uwsgi_temp_path {d}/tmp; scgi_temp_path {d}/tmp;
    server {{ listen 127.0.0.1:{port}; root {root}; }}
}}
"""


def test_nginx_serves_exact_bytes(small_library, hddsim_mount, scratch):
    if not os.path.exists("/usr/sbin/nginx"):
        pytest.skip("nginx not installed")
    m = hddsim_mount(small_library)
    port = 18431
    (scratch / "tmp").mkdir()
    conf = scratch / "nginx.conf"
    conf.write_text(NGINX_CONF.format(d=scratch, port=port, root=m.path))
    nginx = subprocess.Popen(["/usr/sbin/nginx", "-c", str(conf)], start_new_session=True)
    try:
        for _ in range(100):
            try:
                urllib.request.urlopen(f"http://127.0.0.1:{port}/sd/v00000.mp4", timeout=5).close()
                break
            except OSError:
                time.sleep(0.05)
        for rel, (video, off, size) in expected_files(SMALL_LIBRARY).items():
            body = urllib.request.urlopen(f"http://127.0.0.1:{port}/{rel}", timeout=30).read()
            assert body == content_bytes(video, off, size), rel
        req = urllib.request.Request(f"http://127.0.0.1:{port}/sd/v00000.mp4",
                                     headers={"Range": "bytes=1048576-1572863"})
        body = urllib.request.urlopen(req, timeout=30).read()
        assert body == content_bytes("sd/v00000.mp4", 1048576, 524288)
    finally:
        os.killpg(nginx.pid, signal.SIGTERM)
        nginx.wait(timeout=10)


def test_sigterm_unmounts(small_library, hddsim_mount):
    m = hddsim_mount(small_library)
    with open(os.path.join(m.path, "sd/v00000.mp4"), "rb") as f:
        f.read(4096)
    m.proc.send_signal(signal.SIGTERM)
    assert m.proc.wait(timeout=10) == 0
    assert not hddsim.is_mounted(m.path)


def test_sigint_unmounts(small_library, hddsim_mount):
    m = hddsim_mount(small_library)
    m.proc.send_signal(signal.SIGINT)
    assert m.proc.wait(timeout=10) == 0
    assert not hddsim.is_mounted(m.path)


def test_read_ahead_kb_is_settable(small_library, hddsim_mount):
    m = hddsim_mount(small_library, read_ahead_kb=2048)
    assert m.read_ahead_kb == 2048
    m.read_ahead_kb = 64
    assert m.read_ahead_kb == 64


def test_a_mount_that_fails_once_mounted_leaves_nothing_behind(small_library, scratch):
    # An error, or the benchmark's SIGTERM, between hddsim's start and the
    # Mount's return once left hddsim running and mounted, held by no one.
    where = scratch / "mnt"
    with pytest.raises(OSError):
        hddsim.Mount(where, library=small_library, read_ahead_kb=-1)
    assert not hddsim.is_mounted(os.path.realpath(where))
    left = subprocess.run(["pgrep", "-f", f"hddsim {os.path.realpath(where)} "],
                          capture_output=True, text=True)
    assert left.stdout == "", left.stdout


def run_hddsim(*args):
    return subprocess.run([bin_path("hddsim"), *map(str, args)], capture_output=True, text=True, timeout=30)


def test_bad_library_line_is_named(scratch):
    lib = scratch / "bad.lcvl"
    lib.write_text("lcvl 1\nvideo a.mp4 100 419430 0\nvideo b.mp4 x 419430 0\n")
    (scratch / "m").mkdir()
    r = run_hddsim(scratch / "m", "--library", lib)
    assert r.returncode == 1
    assert r.stderr.startswith("hddsim: library") and "line 3" in r.stderr


def test_unknown_drive_and_usage(small_library, scratch):
    (scratch / "m").mkdir()
    r = run_hddsim(scratch / "m", "--library", small_library, "--drive", "floppy")
    assert r.returncode == 1 and 'drive "floppy"' in r.stderr
    r = run_hddsim("--library", small_library)
    assert r.returncode == 2
    r = run_hddsim(scratch / "m", "--library", small_library, "--start", "1.5")
    assert r.returncode == 2 and "--start" in r.stderr
    r = run_hddsim("--list-drives")
    assert r.returncode == 0 and r.stdout.split() == ["wd-red", "hp-10k-sas", "seagate-7200"]


def test_library_too_big_for_drive(scratch):
    lib = scratch / "big.lcvl"
    lib.write_text("lcvl 1\nvideo a.mp4 200000000000 419430 0\n")
    (scratch / "m").mkdir()
    r = run_hddsim(scratch / "m", "--library", lib, "--drive", "hp-10k-sas")
    assert r.returncode == 1 and "holds" in r.stderr


def test_sigterm_during_reads_unmounts(scratch, hddsim_mount):
    from fixtures_hddsim import write_library
    lib = write_library(scratch / "big.lcvl", [("big.mp4", 1 << 30, 419430, 0)])
    m = hddsim_mount(lib, readahead=0)
    reader = subprocess.Popen(["dd", f"if={m.path}/big.mp4", "of=/dev/null", "bs=64k", "iflag=direct"],
                              stderr=subprocess.DEVNULL)
    try:
        for _ in range(200):  # until the drive is busy with the reader
            if m.stats()["reads"] > 3:
                break
            time.sleep(0.01)
        m.proc.send_signal(signal.SIGTERM)
        assert m.proc.wait(timeout=10) == 0
        assert not hddsim.is_mounted(m.path)
        assert reader.wait(timeout=10) != 0  # the reader saw the file system go
    finally:
        if reader.poll() is None:
            reader.kill()
            reader.wait()


def test_custom_drive_file(scratch, small_library, hddsim_mount):
    conf = scratch / "my.conf"
    conf.write_text("drive tiny  # a made-up drive\nrpm 7200\ncapacity 1073741824\n"
                    "rate_outer 100\nrate_middle 80\nrate_inner 50\n"
                    "access_quarter 10\naccess_half 12\naccess_full 16\npolicy fifo\n")
    m = hddsim_mount(small_library, drive="tiny", drive_file=conf)
    assert "drive tiny" in m.banner and m.stats()["drive"] == "tiny"
    conf.write_text("drive bad\nrpm fast\n")
    (scratch / "m2").mkdir()
    r = run_hddsim(scratch / "m2", "--library", small_library, "--drive", "bad", "--drive-file", conf)
    assert r.returncode == 1 and f'drive file "{conf}" line 2' in r.stderr


def test_untimed_reads_leave_the_drive_model_alone(small_library, hddsim_mount):
    m = hddsim_mount(small_library)
    path = os.path.join(m.path, "sd/v00000.mp4")
    size = os.path.getsize(path)
    before = m.stats()
    assert before["timed"] == 1
    with m.untimed():
        assert m.stats()["timed"] == 0
        with open(path, "rb") as f:
            got = f.read()
    after = m.stats()
    assert got == content_bytes("sd/v00000.mp4", 0, size)
    assert_every_page_went_into_the_cache(path)
    assert after["timed"] == 1
    assert after["untimed_bytes"] >= size
    for k in ("reads", "bytes", "busy_s", "commands"):    # the drive saw nothing
        assert after[k] == before[k], k
    m.drop_cache([path])
    with open(path, "rb") as f:                            # timed again
        assert f.read() == got
    again = m.stats()
    assert again["reads"] > after["reads"] and again["bytes"] >= size
    assert again["untimed_bytes"] == after["untimed_bytes"]
