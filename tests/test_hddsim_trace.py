"""hddsim's observables: the trace, the live counters, the Fig. 6 tool,
layouts that put the same data in the same place, the library generator."""
import io
import json
import os
import subprocess

from conftest import bin_path
from fixtures_hddsim import write_library
from libception import cmd_mklib


def trace_rows(path):
    rows = []
    with open(path, encoding="ascii") as f:
        for line in f:
            if not line.startswith("#"):
                t, pos, size, dist, wait, posn, xfer, late, kind, pid = line.split()
                rows.append({"pos": int(pos), "len": int(size), "kind": kind, "dist": int(dist),
                             "position_us": float(posn), "transfer_us": float(xfer),
                             "pid": int(pid)})
    return rows


def read_all(path):
    with open(path, "rb") as f:
        while f.read(1 << 20):
            pass


def test_trace_and_counters_describe_a_sequential_read(scratch, hddsim_mount):
    lib = write_library(scratch / "one.lcvl", [("v.mp4", 8 << 20, 419430, 0)])
    trace = scratch / "trace.txt"
    # No kernel read-ahead: one synchronous request at a time, in order.
    m = hddsim_mount(lib, trace=trace, read_ahead_kb=0)
    read_all(os.path.join(m.path, "v.mp4"))
    st = m.stats()
    m.unmount()
    rows = trace_rows(trace)
    data = [r for r in rows if r["kind"] != "meta"]
    assert [r["kind"] for r in rows].count("meta") == 1  # the inode, once
    assert sum(r["len"] for r in data) == 8 << 20
    # One stream: the commands tile the file exactly, no byte read twice.
    # (Their arrival order is the kernel's: with several FUSE threads two
    # pieces of one read can swap places on a loaded machine.)
    tiles = sorted(data, key=lambda r: r["pos"])
    assert all(b["pos"] == a["pos"] + a["len"] for a, b in zip(tiles, tiles[1:]))
    assert all(r["position_us"] == 0 for r in data[1:] if r["kind"] in ("cont", "merge"))
    assert {r["pid"] for r in rows} == {os.getpid()}  # the reader, for the inode too
    assert st["reads"] == len(rows) and st["bytes"] == sum(r["len"] for r in rows)
    assert st["reads_4k"] == sum(r["len"] <= 4096 for r in rows)
    assert st["reads_under_128k"] == sum(r["len"] < 128 << 10 for r in rows)
    assert st["continued"] == sum(r["kind"] in ("cont", "merge") for r in rows)
    assert st["merged"] == sum(r["kind"] == "merge" for r in rows)
    assert st["commands"] == st["reads"] - st["merged"]
    assert 0 < st["utilisation"] <= 1
    out = subprocess.run([bin_path("libception"), "seqcdf", str(trace), "--json",
                          "--kib", "1024", "8192"], capture_output=True, text=True, check=True).stdout
    cdf = json.loads(out)
    assert cdf["sequences"] == 1 and cdf["bytes"] == 8 << 20
    assert [c["percent"] for c in cdf["cdf"]] == [0.0, 100.0]


def test_chunks_lie_where_the_unchunked_video_lies(scratch, hddsim_mount):
    videos = [("a.mp4", 3 << 20, 419430), ("b.mp4", (5 << 20) + 100, 419430)]
    starts = {}
    for chunk in (0, 524288):
        lib = write_library(scratch / f"c{chunk}.lcvl", [(n, s, r, chunk) for n, s, r in videos])
        trace = scratch / f"t{chunk}.txt"
        m = hddsim_mount(lib, name=f"m{chunk}", trace=trace, read_ahead_kb=0, meta_group=0)
        path = os.path.join(m.path, "b.mp4") if not chunk else os.path.join(m.path, "b.mp4", "000003")
        with open(path, "rb") as f:
            f.read(4096)
        m.unmount()
        starts[chunk] = trace_rows(trace)[0]["pos"]
    assert starts[524288] == starts[0] + 3 * 524288


def test_interleaved_readers_seek_and_sequence_tool_sees_it(scratch, hddsim_mount):
    lib = write_library(scratch / "two.lcvl", [("a.mp4", 4 << 20, 419430, 0),
                                               ("gap.mp4", 4 << 30, 419430, 0),
                                               ("b.mp4", 4 << 20, 419430, 0)])
    trace = scratch / "trace.txt"
    # No drive read-ahead: each switch between the files is a seek.
    m = hddsim_mount(lib, trace=trace, read_ahead_kb=0, meta_group=0, readahead=0)
    fa = open(os.path.join(m.path, "a.mp4"), "rb", buffering=0)
    fb = open(os.path.join(m.path, "b.mp4"), "rb", buffering=0)
    for _ in range(16):  # alternate small reads between two far-apart files
        fa.read(8192)
        fb.read(8192)
    fa.close()
    fb.close()
    m.unmount()
    rows = trace_rows(trace)
    assert sum(1 for r in rows if r["dist"] > 4 << 30) >= 30
    out = subprocess.run([bin_path("libception"), "seqcdf", str(trace), "--json", "--kib", "128"],
                         capture_output=True, text=True, check=True).stdout
    assert json.loads(out)["cdf"][0]["percent"] == 100.0


def test_mklib_is_reproducible_and_matches_the_papers():
    a = cmd_mklib.generate("sd", 2000, seed=7)
    assert a == cmd_mklib.generate("sd", 2000, seed=7)
    assert a != cmd_mklib.generate("sd", 2000, seed=8)
    mean = sum(v[1] * 8 / v[2] for v in a) / len(a)
    assert abs(mean - 265) < 1
    assert {v[2] for v in a} == {419430}
    hd = cmd_mklib.generate("hd", 100, seed=1, chunk=2097152)
    assert {v[2] for v in hd} == {5 * 419430} and {v[3] for v in hd} == {2097152}
    mixed = cmd_mklib.generate("mixed", 1000, seed=1)
    share = sum(v[2] != 419430 for v in mixed) / 1000
    assert 0.4 < share < 0.6
    buf = io.StringIO()
    cmd_mklib.write(a[:3], buf)
    assert buf.getvalue().splitlines()[1] == "lcvl 1"


def test_generated_library_mounts(scratch, hddsim_mount):
    lib = scratch / "gen.lcvl"
    subprocess.run([bin_path("libception"), "mklib", "sd", "--count", "50", "--chunk", "2097152",
                    "-o", str(lib)], check=True, capture_output=True)
    m = hddsim_mount(str(lib), spread=True)
    assert len(os.listdir(os.path.join(m.path, "sd"))) == 50
    assert "platter 0.0000..1.0000" in m.banner or "..0.9999" in m.banner
