"""The web servers of the benchmark, as Debian ships them: nginx, Apache
(`EnableSendfile On`), lighttpd and Caddy, each started from a generated
configuration in a private directory (own port, pid and log files,
docroot, workers running as www-data), optionally inside a memory cgroup
and under libception, and stopped reliably.

    s = make_server("nginx", workdir, docroot, port, tunables={"workers": 2})
    s.start(cgroup=group, env=libception_env(...))
    ... http://127.0.0.1:port/video.mp4 ...
    s.stop()

Tunables (the fairness search varies them; defaults are Debian's):
  nginx:    workers, worker_connections, sendfile (bool), sendfile_max_chunk
            (bytes, 0 = unlimited), aio ("off" | "threads"), thread_pool
            (threads of the pool `aio threads` uses; nginx's default 32),
            output_buffers ("2 32k"), directio (unused by default)
  apache:   mpm ("event" | "worker" | "prefork"), start_servers,
            threads_per_child, max_request_workers, server_limit,
            sendfile (bool), mmap (bool)
  lighttpd: network_backend ("sendfile" | "writev" | "write"), max_worker
            (forked workers; 0 = one process)
  caddy:    gomaxprocs (0 = Go's default); runs as www-data through setpriv
"""
import os
import pwd
import signal
import socket
import subprocess
import time

USER = "www-data"
# Viewing sessions send one segment every 10 s on a persistent connection:
# idle connections must outlive that interval in every server.
KEEPALIVE_S = 60
MAX_FDS = 20000


class ServerError(Exception):
    """A server could not be configured, started or stopped."""


def libception_env(lib, socket_path, mode="prefetch+serialize", prefetch=None, lookahead=False):
    """The environment that puts a server under libception (same variables
    as `libception run`)."""
    env = {"LD_PRELOAD": lib, "LIBCEPTION_SOCKET": socket_path, "LIBCEPTION_MODE": mode}
    if prefetch is not None:
        env["LIBCEPTION_PREFETCH"] = str(prefetch)
    if lookahead:
        env["LIBCEPTION_LOOKAHEAD"] = "1"
    return env


def wait_port(port, host="127.0.0.1", timeout=20.0, alive=lambda: True):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if not alive():
            return False
        try:
            with socket.create_connection((host, port), timeout=0.5):
                return True
        except OSError:
            time.sleep(0.05)
    return False


def port_free(port, host="127.0.0.1"):
    """Whether a server could listen on port now.  With SO_REUSEADDR, as
    every server sets it: connections the last server closed linger in
    TIME_WAIT for a minute and do not keep the port (an Apache that
    served a probe leaves thousands)."""
    with socket.socket() as s:
        s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            s.bind((host, port))
            return True
        except OSError:
            return False


class Server:
    """Common start/stop; subclasses write the configuration and say how
    to run the server in the foreground."""
    name = "?"
    defaults = {}

    def __init__(self, workdir, docroot, port, tunables=None, host="127.0.0.1"):
        unknown = set(tunables or {}) - set(self.defaults)
        if unknown:
            raise ServerError(f"{self.name}: unknown tunable(s): {', '.join(sorted(unknown))}")
        self.workdir = os.path.abspath(workdir)
        self.docroot = os.path.abspath(docroot)
        self.port = port
        self.host = host
        self.tunables = {**self.defaults, **(tunables or {})}
        self.proc = None
        self.cgroup = None
        os.makedirs(self.workdir, exist_ok=True)
        self.error_log = os.path.join(self.workdir, "error.log")
        self.pid_file = os.path.join(self.workdir, "server.pid")

    def url(self, path=""):
        return f"http://{self.host}:{self.port}/{path.lstrip('/')}"

    def describe(self):
        return {"server": self.name, **self.tunables}

    # --- subclass interface ------------------------------------------------
    def write_config(self):
        raise NotImplementedError

    def command(self):
        raise NotImplementedError

    def test_command(self):
        """The server's own check of the configuration written."""
        raise NotImplementedError

    def check(self):
        """Write the configuration and have the server itself test it
        (nginx -t, apache2 -t, lighttpd -tt); raise ServerError with its
        message if it refuses."""
        self.write_config()
        r = subprocess.run(self.test_command(), capture_output=True, text=True,
                           cwd=self.workdir, timeout=60)
        if r.returncode:
            lines = (r.stderr + r.stdout).strip().splitlines()
            raise ServerError(f"{self.name}: configuration refused: "
                              + " | ".join(lines[-3:]))

    # --- lifecycle ---------------------------------------------------------
    def start(self, cgroup=None, env=None, timeout=20.0):
        """Start in the foreground as our child (inside `cgroup` from
        before exec), with `env` added to the environment; return once it
        accepts connections."""
        if self.proc is not None:
            raise ServerError(f"{self.name}: already started")
        # The previous server's workers may still be exiting (8 nginx workers
        # on a loaded machine): give the port a few seconds to come free.
        deadline = time.monotonic() + 5
        while not port_free(self.port, self.host):
            if time.monotonic() > deadline:
                raise ServerError(f"{self.name}: port {self.port} is in use")
            time.sleep(0.1)
        self.write_config()
        full_env = dict(os.environ)
        full_env.update(env or {})
        self.cgroup = cgroup
        log = open(os.path.join(self.workdir, "stderr.log"), "ab")
        try:
            self.proc = subprocess.Popen(
                self.command(), env=full_env, stdin=subprocess.DEVNULL, stdout=log,
                stderr=log, start_new_session=True, cwd=self.workdir,
                preexec_fn=cgroup.preexec if cgroup else None)
        finally:
            log.close()
        if not wait_port(self.port, self.host, timeout, alive=lambda: self.proc.poll() is None):
            tail = self.log_tail()
            self.stop()
            raise ServerError(f"{self.name}: did not start on port {self.port}: {tail}")
        return self

    def log_tail(self, n=3):
        lines = []
        for p in (os.path.join(self.workdir, "stderr.log"), self.error_log):
            try:
                with open(p, errors="replace") as f:
                    lines += f.read().splitlines()[-n:]
            except OSError:
                pass
        return " | ".join(lines[-n:]) or "(no log output)"

    def pids(self):
        """The server's processes (master and workers)."""
        if self.cgroup is not None:
            return self.cgroup.pids()
        if self.proc is None:
            return []
        out = []
        for d in os.listdir("/proc"):
            if d.isdigit():
                try:
                    if os.getsid(int(d)) == self.proc.pid:
                        out.append(int(d))
                except OSError:
                    pass
        return out

    def stop(self, timeout=10.0):
        """SIGTERM the master, wait, then SIGKILL whatever is left of the
        session (workers detached from a dead master included)."""
        if self.proc is None:
            return
        pgid = self.proc.pid
        try:
            os.kill(self.proc.pid, signal.SIGTERM)
        except ProcessLookupError:
            pass
        try:
            self.proc.wait(timeout)
        except subprocess.TimeoutExpired:
            pass
        killed = set(self.pids()) | {pgid}
        for pid in killed:
            try:
                os.kill(pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
        try:
            os.killpg(pgid, signal.SIGKILL)
        except (ProcessLookupError, PermissionError):
            pass
        try:
            self.proc.wait(timeout)
        except subprocess.TimeoutExpired:
            pass
        # A SIGKILLed worker leaves the group only once it has run to its
        # end (seen in CI: one of lighttpd's 4 workers, just after stop()).
        deadline = time.monotonic() + timeout
        while (self.cgroup is not None and killed & set(self.cgroup.pids())
               and time.monotonic() < deadline):
            time.sleep(0.02)
        self.proc = None
        deadline = time.monotonic() + timeout
        while not port_free(self.port, self.host) and time.monotonic() < deadline:
            time.sleep(0.05)

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.stop()


def _write(path, text):
    with open(path, "w") as f:
        f.write(text)


class Nginx(Server):
    name = "nginx"
    # Debian's nginx.conf: worker_processes auto, sendfile on, tcp_nopush on.
    defaults = {"workers": "auto", "worker_connections": 16384, "sendfile": True,
                "sendfile_max_chunk": 0, "aio": "off", "thread_pool": 32,
                "output_buffers": "2 32k", "tcp_nopush": True}

    def write_config(self):
        t = self.tunables
        self.conf = os.path.join(self.workdir, "nginx.conf")
        os.makedirs(os.path.join(self.workdir, "tmp"), exist_ok=True)
        chunk = t["sendfile_max_chunk"]
        if t["aio"] not in ("off", "threads"):
            raise ServerError(f"nginx: aio \"{t['aio']}\": expected off or threads")
        # the pool `aio threads` uses (declared only then: a declared pool
        # starts its threads in every worker)
        pool = (f"thread_pool default threads={int(t['thread_pool'])} max_queue=65536;"
                if t["aio"] == "threads" else "")
        _write(self.conf, f"""# generated by libception bench (servers.py)
user {USER};
worker_processes {t["workers"] if t["workers"] == "auto" else int(t["workers"])};
worker_rlimit_nofile {MAX_FDS};
pid {self.pid_file};
error_log {self.error_log} warn;
daemon off;
{pool}
# Workers keep the libception variables (nginx clears the environment).
env LD_PRELOAD;
env LIBCEPTION_SOCKET;
env LIBCEPTION_MODE;
env LIBCEPTION_PREFETCH;
env LIBCEPTION_DEBUG;
events {{ worker_connections {int(t["worker_connections"])}; }}
http {{
    access_log off;
    default_type application/octet-stream;
    sendfile {"on" if t["sendfile"] else "off"};
    sendfile_max_chunk {int(chunk) if chunk else 0};
    tcp_nopush {"on" if t["tcp_nopush"] else "off"};
    aio {t["aio"]};
    output_buffers {t["output_buffers"]};
    keepalive_timeout {KEEPALIVE_S};
    keepalive_requests 100000;
    open_file_cache off;
    client_body_temp_path {self.workdir}/tmp/body;
    proxy_temp_path {self.workdir}/tmp/proxy;
    fastcgi_temp_path {self.workdir}/tmp/fastcgi;
    uwsgi_temp_path {self.workdir}/tmp/uwsgi;
    scgi_temp_path {self.workdir}/tmp/scgi;
    server {{
        listen {self.host}:{self.port} backlog=4096;
        root {self.docroot};
        location / {{ }}
    }}
}}
""")

    def command(self):
        return ["nginx", "-p", self.workdir, "-c", self.conf, "-e", self.error_log]

    def test_command(self):
        return self.command() + ["-t", "-q"]


class Apache(Server):
    name = "apache"
    defaults = {"mpm": "event", "start_servers": 2, "threads_per_child": 64,
                "max_request_workers": 1024, "server_limit": 16, "sendfile": True,
                "mmap": True}
    MODULES = "/usr/lib/apache2/modules"

    def write_config(self):
        t = self.tunables
        if t["mpm"] not in ("event", "worker", "prefork"):
            raise ServerError(f"apache: mpm \"{t['mpm']}\": expected event, worker or prefork")
        self.conf = os.path.join(self.workdir, "apache2.conf")
        if t["mpm"] == "prefork":
            mpm = f"""StartServers {int(t["start_servers"])}
MinSpareServers {int(t["start_servers"])}
MaxSpareServers {int(t["max_request_workers"])}
ServerLimit {int(t["max_request_workers"])}
MaxRequestWorkers {int(t["max_request_workers"])}
MaxConnectionsPerChild 0"""
        else:
            tpc = int(t["threads_per_child"])
            limit = max(int(t["server_limit"]), -(-int(t["max_request_workers"]) // tpc))
            mpm = f"""StartServers {int(t["start_servers"])}
ServerLimit {limit}
ThreadLimit {tpc}
ThreadsPerChild {tpc}
MaxRequestWorkers {int(t["max_request_workers"])}
MinSpareThreads {tpc}
MaxSpareThreads {int(t["max_request_workers"])}
MaxConnectionsPerChild 0"""
        _write(self.conf, f"""# generated by libception bench (servers.py)
ServerRoot {self.workdir}
DefaultRuntimeDir {self.workdir}
PidFile {self.pid_file}
ErrorLog {self.error_log}
LogLevel warn
Mutex file:{self.workdir} default
LoadModule mpm_{t["mpm"]}_module {self.MODULES}/mod_mpm_{t["mpm"]}.so
LoadModule authz_core_module {self.MODULES}/mod_authz_core.so
User {USER}
Group {USER}
ServerName localhost
Listen {self.host}:{self.port}
ListenBacklog 4096
{mpm}
KeepAlive On
KeepAliveTimeout {KEEPALIVE_S}
MaxKeepAliveRequests 0
Timeout 60
EnableSendfile {"On" if t["sendfile"] else "Off"}
EnableMMAP {"On" if t["mmap"] else "Off"}
DocumentRoot {self.docroot}
<Directory />
    Require all granted
    AllowOverride None
</Directory>
""")

    def command(self):
        return ["apache2", "-f", self.conf, "-DFOREGROUND"]

    def test_command(self):
        return ["apache2", "-f", self.conf, "-t"]


class Lighttpd(Server):
    name = "lighttpd"
    defaults = {"network_backend": "sendfile", "max_worker": 0}

    def write_config(self):
        t = self.tunables
        if t["network_backend"] not in ("sendfile", "writev", "write"):
            raise ServerError(f"lighttpd: network_backend \"{t['network_backend']}\": "
                              "expected sendfile, writev or write")
        self.conf = os.path.join(self.workdir, "lighttpd.conf")
        # lighttpd opens its error log after dropping to www-data.
        open(self.error_log, "a").close()
        pw = pwd.getpwnam(USER)
        os.chown(self.error_log, pw.pw_uid, pw.pw_gid)
        workers = f'server.max-worker = {int(t["max_worker"])}\n' if t["max_worker"] else ""
        _write(self.conf, f"""# generated by libception bench (servers.py)
server.document-root = "{self.docroot}"
server.bind = "{self.host}"
server.port = {self.port}
server.username = "{USER}"
server.groupname = "{USER}"
server.pid-file = "{self.pid_file}"
server.errorlog = "{self.error_log}"
server.network-backend = "{t["network_backend"]}"
server.max-fds = {MAX_FDS}
server.max-connections = {MAX_FDS // 2}
server.max-keep-alive-idle = {KEEPALIVE_S}
server.max-keep-alive-requests = 100000
server.max-read-idle = {KEEPALIVE_S}
server.max-write-idle = {KEEPALIVE_S}
server.listen-backlog = 4096
server.stat-cache-engine = "disable"
{workers}""")

    def command(self):
        return ["lighttpd", "-D", "-f", self.conf]

    def test_command(self):
        return ["lighttpd", "-tt", "-f", self.conf]


class Caddy(Server):
    """Caddy 2 (Debian's), a Go server: it makes its system calls itself
    (sendfile included), so libception.so sees none of them; only
    receptiond's watch mode prefetches for it."""
    name = "caddy"
    # GOMAXPROCS 0: Go's default (one per CPU)
    defaults = {"gomaxprocs": 0}

    def write_config(self):
        t = self.tunables
        self.conf = os.path.join(self.workdir, "Caddyfile")
        self.home = os.path.join(self.workdir, "home")
        pw = pwd.getpwnam(USER)
        os.makedirs(self.home, exist_ok=True)
        os.chown(self.home, pw.pw_uid, pw.pw_gid)
        if int(t["gomaxprocs"]) < 0:
            raise ServerError(f"caddy: gomaxprocs {t['gomaxprocs']}: expected 0 or more")
        # No admin endpoint, no HTTPS (its autosave goes to the private
        # home); idle connections outlive the sessions' 10 s between segments.
        _write(self.conf, f"""# generated by libception bench (servers.py)
{{
    admin off
    auto_https off
    storage file_system {self.home}/data
    servers {{
        timeouts {{
            idle {KEEPALIVE_S}s
        }}
    }}
}}
http://{self.host}:{self.port} {{
    bind {self.host}
    root * {self.docroot}
    file_server
}}
""")

    def _as_www_data(self, args):
        t = self.tunables
        env = [f"HOME={self.home}", f"XDG_DATA_HOME={self.home}", f"XDG_CONFIG_HOME={self.home}"]
        if int(t["gomaxprocs"]):
            env.append(f"GOMAXPROCS={int(t['gomaxprocs'])}")
        return ["setpriv", f"--reuid={USER}", f"--regid={USER}", "--init-groups",
                "env", *env, "caddy", *args, "--config", self.conf, "--adapter", "caddyfile"]

    def command(self):
        return self._as_www_data(["run"])

    def test_command(self):
        return self._as_www_data(["validate"])


SERVERS = {"nginx": Nginx, "apache": Apache, "lighttpd": Lighttpd, "caddy": Caddy}


def make_server(name, workdir, docroot, port, tunables=None):
    try:
        cls = SERVERS[name]
    except KeyError:
        raise ServerError(f"unknown server \"{name}\" (one of: {', '.join(SERVERS)})")
    return cls(workdir, docroot, port, tunables)


def www_data_can_read(path):
    """Whether the servers' user can reach `path` (each directory above it
    searchable by others)."""
    pw = pwd.getpwnam(USER)
    p = os.path.abspath(path)
    while True:
        st = os.stat(p)
        if st.st_uid != pw.pw_uid and not st.st_mode & 0o001 and os.path.isdir(p):
            return False
        parent = os.path.dirname(p)
        if parent == p:
            return True
        p = parent
