"""vidload against a real nginx on loopback serving a materialized library:
every byte verified, the fixed request schedule kept (seen from the server's
access log), deadline failures when the server is too slow, the emulated
link rates, integrity failures on wrong content, and the rate search."""
import collections
import os
import re
import shutil
import pytest

from fixtures_vidload import SEGMENT, SD, materialize, served_dir, write_library
from libception import hddsim, vidload


def log_requests(path):
    """{connection: [(request number, start time, request time, status, bytes)]}"""
    conns = collections.defaultdict(list)
    for conn, num, end, rtime, status, size, _, _ in log_lines(path):
        conns[conn].append((int(num), float(end) - float(rtime), float(rtime), int(status), int(size)))
    return conns


def log_lines(path):
    with open(path) as f:
        return [line.split() for line in f]


def test_sessions_verify_bytes_and_keep_the_schedule(vidload_lib, vidload_nginx):
    srv = vidload_nginx(vidload_lib.root)
    # Everyone watches to the end, so each connection carries the 10 s schedule.
    out = vidload.run(srv.url, vidload_lib.library, rate=2, duration=24, seed=1,
                      views="0,1", late_ms=100, progress=0)
    r = out["result"]
    assert out["vidload"] == 1 and out["settings"]["seed"] == 1
    assert r["started"] >= 20
    assert r["failed"] == 0, r["first_error"]
    assert r["completed"] == r["started"]
    assert r["late_starts"] == 0
    # What the server sent, less what was still in flight when the run ended.
    served = sum(b for reqs in log_requests(srv.log).values() for *_, b in reqs)
    assert served - 3 * SEGMENT * r["active_at_end"] <= r["bytes"] <= served
    # Server side: after the three back-to-back requests, one request every
    # 10 s on each connection, whatever the replies took.
    # The burst: each of the first three asked for only once the previous
    # reply has arrived, a round trip (2 x 50 ms) after the server sent it.
    gaps, turnarounds = [], []
    for reqs in log_requests(srv.log).values():
        reqs.sort()
        assert all(status in (200, 206) for _, _, _, status, _ in reqs)
        ends = {num: start + rtime for num, start, rtime, *_ in reqs}
        turnarounds += [start - ends[num - 1] for num, start, *_ in reqs
                        if num in (2, 3) and num - 1 in ends]
        starts = [start for num, start, *_ in reqs if num >= 4]
        gaps += [b - a for a, b in zip(starts, starts[1:])]
    assert len(gaps) >= 5
    assert all(abs(g - 10.0) < 0.25 for g in gaps), gaps
    assert len(turnarounds) >= 20
    assert all(t >= 0.095 for t in turnarounds), turnarounds


def run_logged(vidload_lib, vidload_nginx, library):
    """A short failure-free run of `library`; its result and nginx's log lines."""
    srv = vidload_nginx(vidload_lib.root)
    r = vidload.run(srv.url, library, rate=3, duration=6, seed=2, progress=0)["result"]
    assert r["started"] > 0 and r["failed"] == 0, r["first_error"]
    lines = log_lines(srv.log)
    assert lines
    return r, lines


def test_chunked_layout_fetches_chunk_files(vidload_lib, vidload_nginx):
    r, lines = run_logged(vidload_lib, vidload_nginx, vidload_lib.chunked)
    for *_, status, size, uri, rng in lines:
        # Whole chunk files, no ranges (a reply cut off by the end of the run is shorter).
        assert status == "200" and rng == "-" and int(size) <= SEGMENT
        assert re.fullmatch(r"/ch/c0000[01]\.mp4/00000\d", uri), uri
    assert sum(int(size) == SEGMENT for *_, size, _, _ in lines) >= r["segments"] - 2


def test_chunks_of_several_segments_are_asked_by_range(vidload_lib, vidload_nginx):
    # As in the chunking paper: 0.5 MiB segments whatever the chunk size,
    # so a 1 MiB chunk file is asked for in two ranges (every byte checked).
    _, lines = run_logged(vidload_lib, vidload_nginx, vidload_lib.chunked2)
    ranges = set()
    for *_, status, size, uri, rng in lines:
        m = re.fullmatch(r"/ch2/c0000[01]\.mp4/00000(\d)", uri)
        assert m and int(m.group(1)) <= 4, uri
        assert status == "206" and int(size) <= SEGMENT, (status, size, uri, rng)
        ranges.add(rng)
    # The last chunk file holds SEGMENT + 4096 bytes: its second range is short.
    assert ranges <= {f"bytes=0-{SEGMENT - 1}", f"bytes={SEGMENT}-{2 * SEGMENT - 1}",
                      f"bytes={SEGMENT}-{SEGMENT + 4095}"}, ranges
    assert {f"bytes=0-{SEGMENT - 1}", f"bytes={SEGMENT}-{2 * SEGMENT - 1}"} <= ranges


def test_slow_server_fails_sessions_on_the_deadline(vidload_lib, vidload_nginx):
    # 20 KB/s per connection: a 0.5 MiB segment needs ~26 s, far beyond 10 s.
    srv = vidload_nginx(vidload_lib.root, server_extra="limit_rate 20k;")
    r = vidload.run(srv.url, vidload_lib.library, rate=3, duration=14, seed=3,
                    progress=0)["result"]
    assert r["errors"]["deadline"] >= 3
    assert r["failed"] == r["errors"]["deadline"]
    assert r["latency_ms"]["max"] >= 10000 - 100
    # Sessions started in the last 10 s had no deadline yet: they count as completed.
    assert r["failed"] + r["active_at_end"] + r["finished"] == r["started"]


def test_warmup_sessions_load_the_server_but_are_not_judged(vidload_lib, vidload_nginx):
    # The same slow server: sessions of the first 11 s miss their deadline
    # before the run ends, those of the judged 3 s cannot yet.
    srv = vidload_nginx(vidload_lib.root, server_extra="limit_rate 20k;")
    r = vidload.run(srv.url, vidload_lib.library, rate=3, duration=3, warmup=11, seed=3,
                    progress=0, timeline=1)["result"]
    assert r["warmup"] == 11 and r["warmup_started"] >= 20
    assert r["warmup_failed"] >= 3
    assert r["started"] >= 1 and r["failed"] == 0
    assert r["latency_ms"]["max"] < 10000
    assert r["failed"] + r["active_at_end"] + r["finished"] == r["started"]
    assert 2.5 < r["elapsed"] < 4
    tl = r["timeline"]
    assert len(tl["t_s"]) == len(tl["active"]) == len(tl["failed"]) >= 14
    assert tl["t_s"] == sorted(tl["t_s"]) and tl["t_s"][0] == 0 and tl["active"][0] == 0
    assert max(tl["active"]) >= 10
    # failures counted as they happen: none before the first deadline (10 s)
    assert tl["failed"] == sorted(tl["failed"])
    assert tl["failed"][-1] == r["warmup_failed"] + r["failed"] + r["past_failed"]
    assert {f for t, f in zip(tl["t_s"], tl["failed"]) if t < 9.5} == {0}
    assert set(tl["past_failed"]) == {0}


def test_hd_on_a_slow_link_keeps_up_after_a_long_burst(vidload_www, vidload_nginx):
    """HD (2.5 MiB segments) at 3.5 Mbit/s: the three-segment burst takes
    18 s, past segment 3's slot at 10 s; the schedule shifts by the overrun,
    so segment 4 (due at 20 s, 30.4 s on a backlogged link) does not fail."""
    hd_segment = 2621440
    lib = write_library(vidload_www / "hd.lcvl",
                        [(f"hd/v{i}.mp4", 5 * hd_segment, 2097152, 0) for i in range(3)])
    materialize(lib, vidload_www / "www")
    srv = vidload_nginx(vidload_www / "www")
    r = vidload.run(srv.url, lib, rate=1, duration=40, seed=2, views="0,1", links=["3.5M"],
                    progress=0)["result"]
    assert r["failed"] == 0, r["first_error"]
    assert r["finished"] >= 1


@pytest.mark.parametrize("link_bps", [3.5e6, 10e6])
def test_link_emulation_paces_at_the_link_rate(vidload_lib, vidload_nginx, link_bps):
    # The server's send buffer is kept small so the paced reads are what it feels.
    srv = vidload_nginx(vidload_lib.root, listen_extra="sndbuf=32k")
    r = vidload.run(srv.url, vidload_lib.library, rate=1.5, duration=12, seed=4,
                    links=[f"{link_bps / 1e6}M"], burst=1, delay_ms=50, progress=0)["result"]
    assert r["failed"] == 0 and r["segments"] >= 8
    # Every segment is a lone whole 0.5 MiB request: latency = 2 x 50 ms + size / rate.
    wire_ms = SEGMENT * 8 / link_bps * 1000
    measured_wire_ms = r["latency_ms"]["mean"] - 100
    # Never faster than the link (a busy host only makes it slower), and
    # not a unit off (bits for bytes, 8x; Mbit for Mibit, 5%).  How close
    # to the rate it paces on a quiet machine is a measurement, not a test.
    assert 0.97 * wire_ms < measured_wire_ms < 2 * wire_ms, (measured_wire_ms, wire_ms)
    # Back-pressure reached the server: it spent most of the wire time writing.
    times = [rt for reqs in log_requests(srv.log).values() for _, _, rt, _, _ in reqs]
    assert sorted(times)[len(times) // 2] > 0.5 * wire_ms / 1000


def test_wrong_content_is_an_integrity_failure(vidload_www, vidload_nginx):
    lib = vidload_www / "lib.lcvl"
    write_library(lib, [("bad.mp4", 6 * SEGMENT, SD, 0)])
    root = vidload_www / "www"
    materialize(lib, root)
    with open(root / "bad.mp4", "r+b") as f:
        f.seek(SEGMENT + 12345)
        b = f.read(1)
        f.seek(SEGMENT + 12345)
        f.write(bytes([b[0] ^ 0x40]))
    srv = vidload_nginx(root)
    r = vidload.run(srv.url, lib, rate=2, duration=5, seed=5, progress=0)["result"]
    assert r["started"] > 0
    # Every session asks for segment 1 in its opening burst, so every one hits the bad byte.
    assert r["errors"]["integrity"] >= 1
    assert r["failed"] == r["errors"]["integrity"]
    assert f"offset {SEGMENT + 12345}" in r["first_error"]


def test_missing_file_is_an_http_failure(tmp_path, vidload_lib, vidload_nginx):
    lib = tmp_path / "lib.lcvl"
    write_library(lib, [("nothere.mp4", 6 * SEGMENT, SD, 0)])
    srv = vidload_nginx(vidload_lib.root)
    r = vidload.run(srv.url, lib, rate=3, duration=3, seed=6, progress=0)["result"]
    assert r["started"] > 0 and r["failed"] == r["errors"]["http"] > 0
    assert r["failed"] + r["active_at_end"] == r["started"]
    assert "status 404" in r["first_error"]


def test_search_bisects_to_the_capacity(vidload_lib, vidload_nginx, tmp_path):
    """nginx admitting few simultaneous requests (limit_conn) fails more
    sessions the higher the rate: the search must bracket that and run
    --between before every probe."""
    srv = vidload_nginx(vidload_lib.root, server_extra="limit_conn vl 4;", listen_extra="sndbuf=32k",
                        http_extra="limit_conn_zone $binary_remote_addr zone=vl:1m;")
    marker = tmp_path / "probes"
    out = vidload.search(srv.url, vidload_lib.library, lo=0.25, hi=16, duration=6, seed=7,
                         resolution=2, max_fail=0.3, between=f"echo x >> {marker}",
                         timeout=300)
    probes = out["probes"]
    assert marker.read_text().count("x") == len(probes)
    assert out["answer"] is not None
    passed = [p["result"]["rate"] for p in probes if p["pass"]]
    failed = [p["result"]["rate"] for p in probes if not p["pass"]]
    assert passed and failed
    assert out["answer"] == max(passed) and max(passed) < min(failed)
    assert min(failed) - out["answer"] <= 2


def test_server_closes_are_survived_by_reconnecting(vidload_lib, vidload_nginx):
    """nginx closing idle connections (3 s keep-alive, less than the 10 s
    between segments) and closing after every second request (so one of
    the three pipelined opening requests must be asked again) fails nothing."""
    srv = vidload_nginx(vidload_lib.root, http_extra="keepalive_requests 2;",
                        server_extra="keepalive_timeout 3s;")
    r = vidload.run(srv.url, vidload_lib.library, rate=2, duration=14, seed=8, views="0,1",
                    progress=0)["result"]
    assert r["started"] > 0 and r["failed"] == 0, r["first_error"]
    assert r["reconnects"] >= r["started"]
    # Each segment answered once, in full, on whichever connection.
    served = [b for reqs in log_requests(srv.log).values() for *_, status, b in reqs if status in (200, 206)]
    assert served.count(SEGMENT) >= r["segments"]


def test_sessions_against_nginx_on_an_hddsim_mount(vidload_lib, vidload_nginx):
    """The real set-up: nginx serving hddsim's emulated disk, whose content
    vidload checks byte for byte (same library file for both)."""
    if not os.path.exists("/dev/fuse"):
        pytest.skip("no /dev/fuse")
    d = served_dir("mnt")
    mount = None
    try:
        mount = hddsim.Mount(os.path.join(d, "mnt"), library=vidload_lib.library)
        srv = vidload_nginx(mount.path)
        r = vidload.run(srv.url, vidload_lib.library, rate=2, duration=8, seed=9,
                        progress=0)["result"]
        assert r["started"] > 0 and r["segments"] > 0
        assert r["failed"] == 0, r["first_error"]
    finally:
        if mount:
            mount.unmount()
        shutil.rmtree(d, ignore_errors=True)


def test_failing_between_command_stops_the_search(vidload_lib, vidload_nginx):
    srv = vidload_nginx(vidload_lib.root)
    with pytest.raises(vidload.VidloadError, match='vidload: --between "false" failed'):
        vidload.search(srv.url, vidload_lib.library, lo=1, hi=2, duration=2, between="false",
                       timeout=60)


def test_a_run_with_a_past_starts_with_the_sessions_still_watching(vidload_lib, vidload_nginx,
                                                                   tmp_path):
    """--past: the sessions that arrivals over the past would still have
    running carry on from their next segment, each on the 10 s schedule
    of its own start (so their first requests spread over one segment
    period); the run's own sessions are the same as without a past."""
    lib = tmp_path / "sd.lcvl"
    write_library(lib, [(f"sd/v{i:05d}.mp4", (6 + i) * SEGMENT, SD, 0) for i in range(12)])
    longest = vidload.longest_video_s(lib)
    assert round(longest) == 170
    cold = vidload_nginx(vidload_lib.root)
    # 13 s: every carried session's next segment (due within 10 s) is served
    r0 = vidload.run(cold.url, lib, rate=2, duration=13, seed=4, views="0,1",
                     progress=0)["result"]
    srv = vidload_nginx(vidload_lib.root)
    r = vidload.run(srv.url, lib, rate=2, duration=13, seed=4, views="0,1", past=longest,
                    progress=0, timeline=1)["result"]
    assert r["failed"] == 0 and r["past_failed"] == 0, r["first_error"]
    assert r["started"] == r0["started"]
    # 2/s watching 60..170 s videos to the end: about 230 sessions running
    assert 150 <= r["past_running"] <= 320
    assert r["timeline"]["active"][0] == r["past_running"]
    firsts = {}
    for conn, num, end, rtime, status, size, uri, rng in log_lines(srv.log):
        if num == "1" and rng != "-":
            firsts[conn] = (float(end) - float(rtime), int(rng.split("=")[1].split("-")[0]))
    carried = [t for t, off in firsts.values() if off > 0]
    assert len(carried) == r["past_running"]
    # their next segment is never the burst's (segments 0-2)
    assert all(off >= 3 * SEGMENT and off % SEGMENT == 0 for _, off in firsts.values() if off)
    assert max(carried) - min(carried) >= 5


def test_the_timeline_dates_the_failures_of_sessions_carried_on(vidload_lib, vidload_nginx,
                                                                tmp_path):
    """On a server too slow for anyone (20 KB/s a connection), the carried-on
    sessions fail at their next segment's deadline, 10 s after it was due
    (due from the start on): the timeline counts them as they go."""
    lib = tmp_path / "sd.lcvl"
    write_library(lib, [(f"sd/v{i:05d}.mp4", (6 + i) * SEGMENT, SD, 0) for i in range(12)])
    srv = vidload_nginx(vidload_lib.root, server_extra="limit_rate 20k;")
    r = vidload.run(srv.url, lib, rate=2, duration=16, seed=4, views="0,1",
                    past=vidload.longest_video_s(lib), progress=0, timeline=1)["result"]
    tl = r["timeline"]
    assert r["past_failed"] >= 20
    assert tl["past_failed"] == sorted(tl["past_failed"])
    assert tl["past_failed"][-1] == r["past_failed"]
    assert tl["failed"][-1] == r["past_failed"] + r["warmup_failed"] + r["failed"]
    assert {f for t, f in zip(tl["t_s"], tl["past_failed"]) if t < 9.5} == {0}


def test_past_reads_are_its_segments_least_recent_first(vidload_lib, tmp_path):
    lib = tmp_path / "sd.lcvl"
    write_library(lib, [(f"sd/v{i:05d}.mp4", (6 + i) * SEGMENT, SD, 0) for i in range(12)])
    reads = vidload.past_reads(lib, rate=2, past=170, seed=4, views="0,1")
    assert len(reads) >= 100
    assert [t for t, *_ in reads] == sorted(t for t, *_ in reads)
    assert all(-170 <= t < 0 for t, *_ in reads)
    # each segment once (its latest read), a whole segment of its file
    assert len({(path, off) for _, off, _, path in reads}) == len(reads)
    for _, off, n, path in reads:
        size = os.path.getsize(os.path.join(vidload_lib.root, path))
        assert off % SEGMENT == 0 and n == SEGMENT and off + n <= size
    # the same past as the run's: a different seed, a different past
    assert vidload.past_reads(lib, rate=2, past=170, seed=5, views="0,1") != reads


def test_the_page_cache_is_filled_with_the_newest_reads():
    from libception.bench import past
    reads = [(-30, 0, 10, "a"), (-25, 0, 10, "b"), (-20, 10, 10, "a"), (-10, 20, 10, "a"),
             (-5, 0, 10, "c")]
    # 35 bytes: c, then a's two newest segments, oldest first; b is older than what fits
    assert past.newest(reads, 35) == ([(-20, 10, 10, "a"), (-10, 20, 10, "a"),
                                       (-5, 0, 10, "c")], 30)
    assert past.newest(reads, float("inf"))[1] == 50
    assert past.newest(reads, 5) == ([], 0)


def test_the_past_is_read_by_the_daemon_where_it_prefetches():
    from libception.bench import past
    M = 1 << 20
    assert past.daemon_window({"mode": "libception", "prefetch": "1M"}) == M
    assert past.daemon_window({"mode": "watch"}) == 2 * M
    # without the daemon the kernel reads ahead: the fill replays the server's reads
    assert past.daemon_window({"mode": "vanilla"}) is None

