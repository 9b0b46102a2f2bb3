"""Threads and fork under libception.so: t_forkthreads reads one file from
many threads while forking children that do the same; its checksums must
match the run without the library, in every mode, with and without a
daemon, and children must talk to the daemon on their own connections."""
import os
import signal
import subprocess
import sys

import pytest

from fixtures_preload import (MODES, T_FORKTHREADS, debug_counts, drop_cache, lib_env,
                              plain_env, run, write_file)


@pytest.fixture(scope="module")
def threads_file(tmp_path_factory):
    d = tmp_path_factory.mktemp("preload-threads")
    return write_file(d / "f", 9 * 1024 * 1024 + 4321, seed=42)


def forkthreads(path, env):
    drop_cache(path)
    code, out, err = run([T_FORKTHREADS, path, "8", "3"], env, timeout=120)
    assert code == 0, err
    return sorted(out.decode().splitlines())


@pytest.mark.parametrize("mode", MODES)
def test_threads_and_fork_without_daemon(preload_built, threads_file, mode):
    expect = forkthreads(threads_file, plain_env())
    assert len(expect) == 4
    assert forkthreads(threads_file, lib_env(mode)) == expect


@pytest.mark.parametrize("mode", ["prefetch+serialize", "serialize"])
def test_threads_and_fork_with_daemon(preload_built, threads_file, fake_daemon, tmp_path, mode):
    d = fake_daemon("ok")
    dbg = tmp_path / "debug.log"
    expect = forkthreads(threads_file, plain_env())
    assert forkthreads(threads_file, lib_env(mode, d.path, debug=dbg)) == expect
    assert d.requests and all(r["nfds"] == 1 for r in d.requests)
    # every request a well-formed message of its own: no two threads'
    # bytes interleaved on one connection
    assert all(r["size"] == 48 for r in d.requests)
    assert len(d.pids) >= 2, "forked children must open their own connections"
    counts = debug_counts(dbg)
    assert counts["pread"][0] > 0 and counts["read"][0] > 0


def test_thread_cancelled_while_waiting_for_the_daemon(preload_built, threads_file, fake_daemon,
                                                       tmp_path):
    """A thread cancelled while the library waits for a slow daemon is
    cancelled at the program's own read (a cancellation point), not inside
    the library, and the process neither hangs nor crashes."""
    src = tmp_path / "t_cancel.c"
    src.write_text(r'''
#include <fcntl.h>
#include <pthread.h>
#include <stdio.h>
#include <unistd.h>
static int fd;
static void *reader(void *a) { char b[4096]; (void)a; pread(fd, b, sizeof b, 0); return (void *)7; }
int main(int argc, char **argv) {
    (void)argc;
    fd = open(argv[1], O_RDONLY);
    pthread_t t; void *ret;
    pthread_create(&t, NULL, reader, NULL);
    usleep(100000);                 /* the reader is waiting for the daemon */
    pthread_cancel(t);
    pthread_join(t, &ret);
    printf("%s\n", ret == PTHREAD_CANCELED ? "cancelled" : "finished");
    return 0;
}
''')
    exe = tmp_path / "t_cancel"
    subprocess.run(["cc", "-O2", "-o", str(exe), str(src), "-lpthread"], check=True)
    d = fake_daemon("slow")
    drop_cache(threads_file)
    code, out, err = run([str(exe), threads_file], lib_env("prefetch+serialize", d.path,
                                                           LIBCEPTION_TIMEOUT_MS=2000))
    assert code == 0, err
    # the wait is not a cancellation point; the pread after it is, so the
    # pending cancel acts there, exactly as without the library
    assert out.strip() == b"cancelled"
