"""libception.so changes nothing a program can see: real programs and the
t_calls helper give byte-identical output, the same exit status and the
same stderr with and without the library, in every mode, with no daemon
listening.  Files are made cold before every run, so the library's miss
path (fstat, the daemon attempt, the in-process prefetch) really runs."""
import hashlib
import os
import shutil
import subprocess
import sys

import pytest

from fixtures_preload import (MODES, T_CALLS, debug_counts, drop_cache, lib_env, plain_env, run)


def cold_all(files):
    for root, _, names in os.walk(files["dir"]):
        for n in names:
            drop_cache(os.path.join(root, n))


def same_with_and_without(files, cmd, mode, tmp_path, outputs=(), **kw):
    """Run cmd plain and under the library (files cold each time); compare
    stdout, stderr, exit status and the bytes of each file in outputs."""
    results = []
    for env in (plain_env(), lib_env(mode, debug=tmp_path / "debug.log")):
        for o in outputs:
            if os.path.exists(o):
                os.unlink(o)
        cold_all(files)
        code, out, err = run(cmd, env, **kw)
        produced = [open(o, "rb").read() if os.path.exists(o) else None for o in outputs]
        results.append((code, out, err, produced))
    plain, lib = results
    assert lib[0] == plain[0], f"exit status {lib[0]} != {plain[0]}: {lib[2]!r}"
    assert lib[2] == plain[2]
    assert lib[1] == plain[1]
    assert lib[3] == plain[3]
    return lib


PROGRAMS = {
    "cat": lambda f, o: (["cat", f["big"], f["odd"], f["one"], f["empty"]], []),
    "cat_to_file": lambda f, o: (["sh", "-c", f'cat "{f["big"]}" "{f["odd"]}" > "{o}"'], [o]),
    "cp": lambda f, o: (["cp", f["big"], o], [o]),
    "dd_bs4k_skip": lambda f, o: (["dd", f"if={f['big']}", "bs=4096", "skip=3", "status=none"], []),
    "dd_bs1M_count": lambda f, o: (["dd", f"if={f['big']}", "bs=1M", "count=2", "status=none"], []),
    "dd_ibs_obs": lambda f, o: (["dd", f"if={f['odd']}", "ibs=1000", "obs=3000", "skip=5",
                                 "status=none"], []),
    "dd_direct": lambda f, o: (["dd", f"if={f['big']}", "bs=64k", "iflag=direct", "status=none"], []),
    "sha256sum": lambda f, o: (["sha256sum", f["big"], f["odd"], f["page_minus"]], []),
    "diff_same": lambda f, o: (["diff", "-r", f["tree"], f["tree"]], []),
    "diff_differs": lambda f, o: (["diff", "-r", "--text", f["tree"], f["tree"] + "2"], []),
    "tar": lambda f, o: (["tar", "cf", "-", "-C", f["tree"], "--sort=name", "."], []),
    "cat_missing": lambda f, o: (["cat", f["odd"], "/nonexistent/file"], []),
    "cat_dir": lambda f, o: (["cat", f["tree"]], []),
}


@pytest.fixture(scope="module")
def files(preload_files):
    """The test files plus a modified copy of the tree, for diff."""
    other = preload_files["tree"] + "2"
    if not os.path.exists(other):
        shutil.copytree(preload_files["tree"], other)
        with open(os.path.join(other, "f2"), "r+b") as f:
            f.seek(4000)
            f.write(b"changed")
        os.unlink(os.path.join(other, "sub", "f1"))
    return preload_files


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("prog", sorted(PROGRAMS))
def test_program_unchanged(preload_built, files, tmp_path, prog, mode):
    cmd, outputs = PROGRAMS[prog](files, str(tmp_path / "out"))
    same_with_and_without(files, cmd, mode, tmp_path, outputs)


METHODS = ["read", "read_chk", "pread", "pread_chk", "readv", "preadv", "preadv2", "sendfile",
           "sendfile_off", "splice", "splice_off", "cfr", "cfr_off"]


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("method", METHODS)
def test_entry_point_unchanged(preload_built, files, tmp_path, method, mode):
    """Every intercepted entry point copies the file identically and leaves
    the fd's offset where libc leaves it (t_calls prints it on stderr)."""
    out = str(tmp_path / "out")
    for name, bs in (("big", 65536), ("odd", 10000)):
        # copy_file_range wants a regular file as output
        target = [out] if method.startswith("cfr") else []
        lib = same_with_and_without(files, [T_CALLS, "copy", method, files[name], str(bs)] + target,
                                    mode, tmp_path, [out] if target else [])
        data = open(out, "rb").read() if target else lib[1]
        assert data == open(files[name], "rb").read()


@pytest.mark.parametrize("mode", MODES)
def test_error_cases_unchanged(preload_built, files, tmp_path, mode):
    """EBADF, EISDIR, EINVAL offsets, write-only and O_PATH fds, O_DIRECT,
    /dev/zero, pipes, sockets, RWF_NOWAIT, EOF: same results, same errno,
    same offsets."""
    lib = same_with_and_without(files, [T_CALLS, "errors", files["odd"], files["dir"]], mode, tmp_path)
    text = lib[1].decode()
    # the helper really exercised the failures (guards against a silent no-op)
    assert "read_dir -1 EISDIR" in text and "pread_negative -1 EINVAL" in text
    assert "read_socket 5 -" in text and "pread_socket -1 ESPIPE" in text
    # unreadable offset pointers and iovecs: EFAULT, not a crash
    for case in ("sendfile_wild_off", "sendfile_noread_off", "cfr_wild_off",
                 "splice_noread_off", "readv_wild_iov", "readv_iov_crosses_noread"):
        assert f"{case} -1 EFAULT" in text


PY_READER = r'''
import hashlib, mmap, os, socket, sys
p = sys.argv[1]
def h(b): return hashlib.sha256(b).hexdigest()[:16]
fd = os.open(p, os.O_RDONLY)
chunks = []
while True:
    b = os.read(fd, 70000)
    if not b: break
    chunks.append(b)
print("os.read", h(b"".join(chunks)), os.lseek(fd, 0, os.SEEK_CUR))
print("os.pread", h(b"".join(os.pread(fd, 12345, o) for o in range(0, os.fstat(fd).st_size, 12345))))
with open(p, "rb", buffering=0) as f:
    buf = bytearray(50000); out = []
    while (n := f.readinto(buf)): out.append(bytes(buf[:n]))
    print("readinto", h(b"".join(out)))
with open(p, "rb") as f:
    print("buffered", h(f.read()))
    with mmap.mmap(f.fileno(), 0, access=mmap.ACCESS_READ) as m:
        print("mmap", h(m[:]))
a, b = socket.socketpair()
got = bytearray()
off = 0
size = os.fstat(fd).st_size
while off < size:
    n = os.sendfile(a.fileno(), fd, off, 32768)
    off += n
    while len(got) < off: got += b.recv(1 << 20)
print("sendfile", h(bytes(got)))
try:
    os.read(fd + 100, 10)
except OSError as e:
    print("badfd", e.errno)
'''


@pytest.mark.parametrize("mode", MODES)
def test_python_reader_unchanged(preload_built, files, tmp_path, mode):
    lib = same_with_and_without(files, [sys.executable, "-c", PY_READER, files["big"]], mode, tmp_path)
    expect = hashlib.sha256(open(files["big"], "rb").read()).hexdigest()[:16]
    assert lib[1].decode().count(expect) == 6


def test_calls_are_intercepted(preload_built, files, tmp_path):
    """Track mode counts what each program really calls; this is what makes
    the tests above meaningful (they would pass with a no-op library)."""
    dbg = tmp_path / "debug.log"
    cases = [
        (["cat", files["big"]], "read"),
        (["cp", files["big"], str(tmp_path / "copy")], "copy_file_range"),
        (["dd", f"if={files['big']}", "of=/dev/null", "bs=64k", "status=none"], "read"),
        ([T_CALLS, "copy", "pread", files["big"]], "pread"),
        ([T_CALLS, "copy", "pread_chk", files["big"]], "pread"),
        ([T_CALLS, "copy", "read_chk", files["big"]], "read"),
        ([T_CALLS, "copy", "preadv2", files["big"]], "preadv"),
        ([T_CALLS, "copy", "sendfile", files["big"]], "sendfile"),
        ([T_CALLS, "copy", "splice", files["big"]], "splice"),
        ([sys.executable, "-c", "import os; os.pread(os.open(__import__('sys').argv[1], 0), 10, 0)",
          files["big"]], "pread"),
    ]
    for cmd, call in cases:
        if dbg.exists():
            dbg.unlink()
        code, out, err = run(cmd, lib_env("track", debug=dbg))
        assert code == 0, err
        counts = debug_counts(dbg)
        assert counts.get(call, (0, 0))[0] > 0, (cmd, counts)


def test_off_mode_counts_nothing(preload_built, files, tmp_path):
    dbg = tmp_path / "debug.log"
    code, _, _ = run(["cat", files["big"]], lib_env("off", debug=dbg))
    assert code == 0
    assert debug_counts(dbg) == {}


def test_prefetch_mode_reads_ahead_in_process(preload_built, files, tmp_path):
    """Mode prefetch: the first miss makes a whole prefetch window resident
    (2 MiB by default), without any daemon."""
    from fixtures_common import cached_pages
    drop_cache(files["big"])
    dbg = tmp_path / "debug.log"
    # one 4 KiB pread at 0 on a cold file: the kernel alone would read only
    # its own small window (see research 3.2)
    prog = "import os,sys; fd=os.open(sys.argv[1],0); os.posix_fadvise(fd,0,0,os.POSIX_FADV_RANDOM); os.pread(fd,4096,0)"
    code, _, err = run([sys.executable, "-c", prog, files["big"]], lib_env("prefetch", debug=dbg))
    assert code == 0, err
    assert cached_pages(files["big"], 0, 2 << 20) == 512
    drop_cache(files["big"])
    code, _, err = run([sys.executable, "-c", prog, files["big"]], plain_env())
    assert cached_pages(files["big"], 0, 2 << 20) < 512


def test_bad_environment_passes_through_silently(preload_built, files, tmp_path):
    """A bad LIBCEPTION_MODE prints nothing and leaves the program alone."""
    env = lib_env("warp-speed")
    code, out, err = run(["cat", files["odd"]], env)
    assert code == 0 and err == b""
    assert out == open(files["odd"], "rb").read()
    dbg = tmp_path / "d.log"
    code, out, err = run(["cat", files["odd"]], lib_env("prefetch", debug=dbg, LIBCEPTION_PREFETCH="lots"))
    assert code == 0 and err == b"" and out == open(files["odd"], "rb").read()
    assert 'LIBCEPTION_PREFETCH="lots"' in dbg.read_text()


def test_no_output_without_debug(preload_built, files):
    """Nothing printed by the library: stderr is empty for a clean run,
    in the daemon-less failure path too."""
    code, out, err = run(["cat", files["big"]], lib_env("prefetch+serialize"))
    assert code == 0 and err == b""


# close, dup2, dup3, close_range and closefrom are wrapped only to keep the
# per-device hit counts right (devices.c); results and errno stay libc's.
PY_DESCRIPTORS = r'''
import os, sys
def attempt(name, f, *a):
    try:
        print(name, f(*a))
    except OSError as e:
        print(name, "errno", e.errno)
fd = os.open(sys.argv[1], os.O_RDONLY)
attempt("pread", lambda: len(os.pread(fd, 4096, 0)))
attempt("close-bad", os.close, 12345)
attempt("dup2-bad", os.dup2, 12345, 40)
attempt("dup2", os.dup2, fd, 40)
attempt("dup2-nonheritable", os.dup2, fd, 41, False)     # dup3 with O_CLOEXEC
attempt("pread-dup", lambda: len(os.pread(40, 4096, 4096)))
attempt("closerange", os.closerange, 40, 42)              # close_range
attempt("pread-closed", os.pread, 40, 10, 0)
attempt("close", os.close, fd)
attempt("close-again", os.close, fd)
'''


@pytest.mark.parametrize("mode", MODES)
def test_descriptor_calls_unchanged(preload_built, files, tmp_path, mode):
    lib = same_with_and_without(files, [sys.executable, "-c", PY_DESCRIPTORS, files["big"]],
                                mode, tmp_path)
    out = lib[1].decode()
    assert "close-bad errno 9" in out and "pread-closed errno 9" in out and "dup2 40" in out
