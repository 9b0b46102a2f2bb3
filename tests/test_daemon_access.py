"""receptiond's access model (docs/libception-security.md "Access model"): where
the per-user socket lives and who made its directory, whom the library
hands its descriptors to, who may connect (--access), and who may stop
the daemon (judged per message).  Attackers run as nobody."""
import grp
import os
import subprocess
import threading
import time

import pytest

from conftest import LIBCEPTION_SO
from fixtures_daemon import RECEPTIOND, make_cold_file
from fixtures_hostile import NOBODY, empty_listener_fds, refused, run_as
from libception import daemon as lcd

VICTIM = 54321     # uids no account has: every test's own
USER_DAEMON = 54322


def as_uid(uid):
    def drop():
        os.setgroups([])
        os.setgid(uid)
        os.setuid(uid)
    return drop


def plain_env(**extra):
    """An environment without any socket choice of the caller's."""
    env = {k: v for k, v in os.environ.items()
           if k not in (lcd.ENV_SOCKET, "XDG_RUNTIME_DIR", "LD_PRELOAD")}
    env.update(extra)
    return env


def test_library_gives_a_squatter_no_descriptors(scratch, private_tmp_dir, need_library):
    """nobody makes the victim's default socket directory first and listens
    there; the victim's program under the library must not send it a single
    descriptor (it checks the listener with SO_PEERCRED), and still reads
    its file right."""
    sock_dir = private_tmp_dir(f"/tmp/libception-{VICTIM}")
    sock = os.path.join(sock_dir, "receptiond.sock")
    target = make_cold_file(str(scratch / "secret"), 8 << 20)
    os.chmod(target, 0o644)

    def squat():
        os.mkdir(sock_dir, 0o777)
        os.chmod(sock_dir, 0o777)
        return empty_listener_fds(sock, 6)

    got = {}
    t = threading.Thread(target=lambda: got.update(n=run_as(NOBODY, squat)))
    t.start()
    deadline = time.monotonic() + 10
    while not os.path.exists(sock) and time.monotonic() < deadline:
        time.sleep(0.02)
    assert os.path.exists(sock)
    r = subprocess.run(["dd", f"if={target}", "bs=64k", "status=none"],
                       env=plain_env(LD_PRELOAD=LIBCEPTION_SO, LIBCEPTION_TIMEOUT_MS="300"),
                       preexec_fn=as_uid(VICTIM), capture_output=True, timeout=60)
    t.join(30)
    assert r.returncode == 0, r.stderr
    assert r.stdout == open(target, "rb").read()
    assert got["n"] == 0, f"the squatter received {got['n']} of the victim's descriptors"


@pytest.mark.parametrize("how", ["directory", "symlink"])
def test_daemon_refuses_a_socket_directory_someone_else_made(private_tmp_dir, how):
    """A user daemon's default directory made first by nobody (a 0777
    directory, or a symlink to nobody's directory) is refused, exit 1 with
    a clear line; nothing there is chmod'ed."""
    sock_dir = private_tmp_dir(f"/tmp/libception-{USER_DAEMON}")
    elsewhere = private_tmp_dir(f"/tmp/lc-squat-{USER_DAEMON}")

    def squat():
        os.mkdir(elsewhere if how == "symlink" else sock_dir, 0o777)
        os.chmod(elsewhere if how == "symlink" else sock_dir, 0o777)
        if how == "symlink":
            os.symlink(elsewhere, sock_dir)

    run_as(NOBODY, squat)
    p = subprocess.Popen([RECEPTIOND, "--foreground"], env=plain_env(),
                         preexec_fn=as_uid(USER_DAEMON), stderr=subprocess.PIPE, text=True)
    try:
        rc = p.wait(timeout=15)
    except subprocess.TimeoutExpired:
        p.kill()
        p.wait()
        pytest.fail("receptiond listened in a directory nobody made")
    err = p.stderr.read()
    assert rc == 1, err
    assert f"/tmp/libception-{USER_DAEMON}" in err and "refusing" in err or "symlink" in err, err
    target = elsewhere if how == "symlink" else sock_dir
    assert os.stat(target).st_mode & 0o777 == 0o777
    assert not os.path.exists(os.path.join(target, "receptiond.sock"))


def test_user_daemon_listens_in_its_runtime_dir(private_tmp_dir):
    """With a private $XDG_RUNTIME_DIR, a user's daemon and library meet
    at $XDG_RUNTIME_DIR/libception.sock."""
    xdg = private_tmp_dir(f"/tmp/lc-xdg-{USER_DAEMON}")
    os.mkdir(xdg, 0o700)
    os.chown(xdg, USER_DAEMON, USER_DAEMON)
    env = plain_env(XDG_RUNTIME_DIR=xdg)
    p = subprocess.Popen([RECEPTIOND, "--foreground"], env=env, preexec_fn=as_uid(USER_DAEMON),
                         stderr=subprocess.PIPE, text=True)
    try:
        def ask():
            os.environ["XDG_RUNTIME_DIR"] = xdg
            os.environ.pop(lcd.ENV_SOCKET, None)
            path = lcd.socket_path()
            deadline = time.monotonic() + 15
            while not lcd.is_listening(path) and time.monotonic() < deadline:
                time.sleep(0.05)
            return [path, lcd.stats(path)["pid"]]
        path, pid = run_as(USER_DAEMON, ask)
        assert path == os.path.join(xdg, "libception.sock")
        assert pid == p.pid
        assert refused(path) is False       # root may always connect
        assert run_as(NOBODY, refused, path) is True   # owner only by default
    finally:
        p.terminate()
        p.wait(timeout=20)


def test_access_owner(make_daemon):
    d = make_daemon(["--access", "owner"])
    assert not refused(d.path)
    assert run_as(NOBODY, refused, d.path)
    assert d.stats()["connections"]["denied"] == 1
    assert "is not allowed by --access owner" in d.log_text()


def test_access_group(make_daemon):
    """group:users admits a member by a supplementary group, not others."""
    users = grp.getgrnam("users").gr_gid
    d = make_daemon(["--access", "group:users"])
    assert not run_as(NOBODY, refused, d.path, groups=[users])
    assert not run_as(NOBODY, refused, d.path, gid=users)
    assert run_as(NOBODY, refused, d.path)
    assert not refused(d.path)


def test_access_all(make_daemon):
    d = make_daemon(["--access", "all"])
    assert not run_as(NOBODY, refused, d.path)


def test_access_default_for_a_root_daemon(daemon_dir):
    """No --access: group libception; without that group, root only, said
    once in the log."""
    sock = os.path.join(daemon_dir, "default.sock")
    log = os.path.join(daemon_dir, "default.log")
    p = subprocess.Popen([RECEPTIOND, "--foreground", "--socket", sock, "--log", log])
    try:
        deadline = time.monotonic() + 15
        while not lcd.is_listening(sock) and time.monotonic() < deadline:
            time.sleep(0.02)
        assert not refused(sock)
        assert run_as(NOBODY, refused, sock)
        text = open(log).read()
        try:
            grp.getgrnam("libception")
            assert "access group:libception" in text
        except KeyError:
            assert "access owner" in text
            assert text.count("no group libception: only root may connect") == 1
    finally:
        p.terminate()
        p.wait(timeout=20)


def test_bad_access_is_refused_at_start(daemon_dir):
    for spec, why in [("everyone", "expected all, owner or group:NAME"),
                      ("group:no-such-group-lc", "no group no-such-group-lc")]:
        r = subprocess.run([RECEPTIOND, "--foreground", "--socket",
                            os.path.join(daemon_dir, "x.sock"), "--access", spec],
                           capture_output=True, text=True, timeout=15)
        assert r.returncode == 2 and why in r.stderr, r.stderr


def test_shutdown_is_judged_per_message(receptiond):
    """A root process connects, then its child becomes nobody and sends
    SHUTDOWN on the inherited socket: refused (the message's credentials
    are nobody's), and the daemon keeps running."""
    s = receptiond.connect()
    try:
        def shut():
            s.send(lcd.HEADER.pack(lcd.MAGIC, lcd.VERSION, lcd.MSG_SHUTDOWN, 9))
            return lcd.ENSURE_REPLY.unpack(s.recv(4096))[4]
        assert run_as(NOBODY, shut) == lcd.ST_BADREQUEST
        time.sleep(0.2)
        assert receptiond.alive()
        assert "shutdown refused: uid 65534" in receptiond.log_text()
        # The same socket, used by root, may.
        s.send(lcd.HEADER.pack(lcd.MAGIC, lcd.VERSION, lcd.MSG_SHUTDOWN, 10))
        assert lcd.ENSURE_REPLY.unpack(s.recv(4096))[4] == lcd.ST_OK
    finally:
        s.close()
    assert receptiond.proc.wait(timeout=20) == 0
