"""receptiond on emulated hard disks: each hddsim (FUSE) mount is a device
of its own with its own queue; a program reading 4 KiB at a time under
libception.so makes the emulated disk see prefetch-size runs, serialized."""
import os
import subprocess
import threading

from fixtures_common import reader_cmd
from fixtures_hddsim import content_bytes, write_library

MiB = 1 << 20

def trace_rows(path):
    rows = []
    with open(path, encoding="ascii") as f:
        for line in f:
            if not line.startswith("#"):
                fields = line.split()
                rows.append({"pos": int(fields[1]), "len": int(fields[2]), "kind": fields[8]})
    return rows


def runs(rows):
    """Contiguous runs of data reads, as lengths."""
    out = []
    end = None
    for r in rows:
        if r["kind"] == "meta":
            continue
        if end is not None and r["pos"] == end:
            out[-1] += r["len"]
        else:
            out.append(r["len"])
        end = r["pos"] + r["len"]
    return out


def test_each_mount_is_a_device_and_reads_come_in_windows(need_library, receptiond, scratch,
                                                          hddsim_mount):
    import hashlib
    size = 8 * MiB
    mounts, traces = [], []
    for i in range(2):
        lib = write_library(scratch / f"d{i}.lcvl", [(f"v{i}.mp4", size, 419430, 0)])
        traces.append(scratch / f"trace{i}.txt")
        # No kernel readahead on the mounts: whatever is enlarged, the daemon did.
        mounts.append(hddsim_mount(lib, name=f"m{i}", trace=traces[i], read_ahead_kb=0))
    want = [hashlib.sha256(content_bytes(f"v{i}.mp4", 0, size)).hexdigest() for i in range(2)]
    outs = [None, None]

    def read(i):
        r = subprocess.run(reader_cmd(os.path.join(mounts[i].path, f"v{i}.mp4")),
                           capture_output=True, text=True, timeout=300, env=receptiond.env())
        outs[i] = (r.returncode, r.stdout.strip())

    threads = [threading.Thread(target=read, args=(i,)) for i in range(2)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    st = receptiond.stats()
    for m in mounts:
        m.unmount()
    assert outs == [(0, w) for w in want]
    # (Python itself may have read its own files through the daemon too.)
    devs = [d for d in st["devices"] if d["name"].startswith("fuse-")]
    assert len(devs) == 2, st["devices"]
    for d in devs:
        assert d["inflight_max"] == 1
        assert d["bytes_read"] == size and d["reads"] == size // (2 * MiB)
    for t in traces:
        rows = [r for r in trace_rows(t) if r["kind"] != "meta"]
        # The disk saw every byte of the file exactly once ...
        assert runs(sorted(rows, key=lambda r: r["pos"])) == [size]
        # ... in large commands, although the program read 4 KiB at a time
        # and the mount has no readahead (which would give 4 KiB commands;
        # the daemon's WILLNEED hints give 128 KiB ones, possibly out of
        # order within a window).
        assert len(rows) <= size // (64 * 1024), len(rows)
