"""Fixtures for the prefetch-sizing tests: a small SD library spread over
an hddsim platter, a private profile directory, and running
`libception profile`."""
import json
import os
import subprocess
import sys

import pytest

from conftest import BIN

LIBCEPTION = os.path.join(BIN, "libception")


def run_libception(*args, env=None, timeout=300):
    return subprocess.run([LIBCEPTION, *map(str, args)], capture_output=True, text=True,
                          env=env, timeout=timeout, check=False)


@pytest.fixture
def profile_dir(scratch):
    """A private profile directory, passed to everything through
    LIBCEPTION_PROFILES (so no test touches /var/lib/libception)."""
    d = scratch / "profiles"
    d.mkdir()
    old = os.environ.get("LIBCEPTION_PROFILES")
    os.environ["LIBCEPTION_PROFILES"] = str(d)
    yield d
    if old is None:
        del os.environ["LIBCEPTION_PROFILES"]
    else:
        os.environ["LIBCEPTION_PROFILES"] = old


@pytest.fixture
def sd_library(scratch):
    """60 SD videos (about 0.8 GB, no disk space used) laid over the whole
    platter with --spread, so positions cover outer to inner zones."""
    path = scratch / "sd60.lcvl"
    r = run_libception("mklib", "sd", "--count", "60", "--seed", "6", "-o", path)
    assert r.returncode == 0, r.stderr
    return path


@pytest.fixture
def sd_mount(hddsim_mount, sd_library):
    if not os.path.exists("/dev/fuse"):
        pytest.skip("no /dev/fuse")
    return hddsim_mount(sd_library, name="sdmnt", drive="wd-red", spread=True)


def load_profile(directory):
    files = [f for f in os.listdir(directory) if f.endswith(".json")]
    assert len(files) == 1, files
    with open(os.path.join(directory, files[0]), encoding="utf-8") as f:
        return files[0], json.load(f)


def python():
    return sys.executable
