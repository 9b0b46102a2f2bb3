"""`libception profile`: measuring a device (hddsim and the real disk),
storing the profile where receptiond finds it, and refusing bad input."""
import os

from fixtures_sizing import load_profile, run_libception


def test_profile_of_an_emulated_wd_red(sd_mount, profile_dir):
    r = run_libception("profile", "--budget", "20", sd_mount.path)
    assert r.returncode == 0, r.stderr
    lines = r.stdout.splitlines()
    assert lines and all(line.startswith("libception profile: ") for line in lines)
    name, p = load_profile(profile_dir)
    # Stored under the mount's own st_dev (FUSE: an anonymous device).
    assert name == f"{sd_mount.bdi}.json"
    assert p["device"]["key"] == sd_mount.bdi
    assert p["files"] == 60
    # The preset's zones: 133 MB/s at the outer edge, 67 at the inner one.
    # The emulator never reads faster than its model; how much slower
    # depends on the host's load (CI at 9943a2b: 107 MB/s at the outer
    # edge), so the bounds are upper ones and the zones are checked by
    # their order.
    seq = p["sequential"]
    assert seq[0]["rate"] > seq[-1]["rate"], seq
    assert seq[0]["rate"] < 145e6 and seq[-1]["rate"] < 80e6, seq
    assert all(abs(x["rate"] - x["bytes"] / x["seconds"]) < 1e-3 * x["rate"] for x in seq), seq
    # A random 4 KiB read pays a seek and half a rotation: tens of ms
    # on this drive, nothing like the GB/s disk underneath.
    assert 0.008 < p["switch_s"] < 0.040, p["switch"]
    assert abs(p["competitive_size"] - p["switch_s"] * p["rate"]) < 0.01 * p["competitive_size"]
    assert 1 << 20 <= p["competitive_size"] <= 4 << 20
    ratios = [x["ratio"] for x in p["parallel"]["results"]]
    assert ratios[0] == 1.0 and len(ratios) >= 2
    # A drive with a seek: one read at a time, however its queue did.
    assert p["concurrency"] == 1 and p["concurrency_reason"].startswith("mechanical"), p


def test_profile_of_the_real_disk(scratch, profile_dir):
    r = run_libception("profile", "--budget", "8", "--scratch", "160M", scratch)
    assert r.returncode == 0, r.stderr
    name, p = load_profile(profile_dir)
    # The whole disk holding the scratch directory, as receptiond maps it.
    st = os.stat(scratch)
    sysdir = os.path.realpath(f"/sys/dev/block/{os.major(st.st_dev)}:{os.minor(st.st_dev)}")
    if os.path.exists(os.path.join(sysdir, "partition")):
        sysdir = os.path.dirname(sysdir)
    with open(os.path.join(sysdir, "dev"), encoding="ascii") as f:
        assert name == f.read().strip() + ".json"
    assert p["method"] == "o_direct"
    # The scratch file was measured and removed.
    assert p["bytes"] >= 160 << 20
    assert not [f for f in os.listdir(scratch) if f.startswith("libception-profile-")]
    # The concurrency follows the documented rule from the measured figures.
    assert p["concurrency"] == expected_concurrency(p), p["parallel"]


def expected_concurrency(p):
    """docs/receptiond-profile.md: a mechanical switch cost (1 ms or more)
    -> 1; else the smallest count within 5% of the best if parallel wins by
    more than 15%, the largest count within 5% of the best if not."""
    if p["switch_s"] >= 0.001:
        return 1
    results = p["parallel"]["results"]
    best = max(x["rate"] for x in results)
    near = [x["threads"] for x in results if x["rate"] >= 0.95 * best]
    return min(near) if best > 1.15 * results[0]["rate"] else max(near)


def test_profile_refuses_bad_input(scratch, profile_dir):
    r = run_libception("profile", scratch / "missing")
    assert r.returncode == 1
    assert r.stderr.startswith("libception profile: ") and "missing" in r.stderr
    (scratch / "small").mkdir()
    (scratch / "small" / "f").write_bytes(b"x" * 65536)
    r = run_libception("profile", scratch / "small")
    assert r.returncode == 1
    assert r.stderr.startswith("receptiond-profile: ") and "need at least" in r.stderr
    r = run_libception("profile", "--budget", "0", scratch)
    assert r.returncode == 2 and "--budget" in r.stderr
    r = run_libception("profile", "--scratch", "lots", scratch)
    assert r.returncode == 2 and "lots" in r.stderr
    assert not os.listdir(profile_dir)
