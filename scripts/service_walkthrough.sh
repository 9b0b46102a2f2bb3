#!/bin/bash
# service_walkthrough.sh DEB - README "Install as a service", followed
# under a real systemd: this machine's own Debian 12 booted with systemd as
# PID 1 in a container (systemd-nspawn, private network), over an overlay
# whose changes live in a tmpfs, so the host is left as it was.  In it:
# install the package, run nginx under libception through `libception
# enable`, fetch a cold file, scrape the metrics with Prometheus, read the
# man page and the journal, then disable and purge.  Prints one line per
# step ("ok: ..."); exit 0 only if every step passed.  As root; needs
# systemd-nspawn (Debian package systemd-container), nginx, prometheus.
set -euo pipefail
deb=$(realpath "$1")
work=$(mktemp -d /tmp/lc-walk-XXXXXX)
machine=lcwalk-$$

# The container's root: the host's / under an overlay, in a mount
# namespace of its own (gone with its last process).
cat > "$work/boot" <<EOF
set -eu
mount -t tmpfs tmpfs "$work/t"
mkdir -p "$work/t/upper" "$work/t/work" "$work/t/root"
mount -t overlay overlay -o "lowerdir=/,upperdir=$work/t/upper,workdir=$work/t/work" "$work/t/root"
exec systemd-nspawn -D "$work/t/root" --boot --register=no --private-network \
    --machine=$machine --console=passive --keep-unit --bind="$work/www:/var/www/html/lc"
EOF
# The served file lives on this machine's disk, not in the overlay's tmpfs
# (where every page is always resident).
mkdir "$work/t" "$work/www"
unshare --mount --propagation private bash "$work/boot" > "$work/nspawn.log" 2>&1 &
nspawn=$!
cleanup() {
	kill "$nspawn" 2>/dev/null || true
	wait "$nspawn" 2>/dev/null || true
	rm -rf "$work"
}
trap cleanup EXIT

# systemd inside: the child of systemd-nspawn
init=
for _ in $(seq 300); do
	nspawn_pid=$(pgrep -f "^systemd-nspawn -D $work/t/root" || true)
	[ -n "$nspawn_pid" ] && init=$(pgrep -P "$nspawn_pid" -x systemd || true)
	[ -n "$init" ] && [ -e "/proc/$init/root/run/systemd/system" ] && break
	init=
	sleep 0.1
done
[ -n "$init" ] || { cat "$work/nspawn.log"; echo "FAILED: container did not start"; exit 1; }
inside() { nsenter -t "$init" -a "$@"; }
state=
for _ in $(seq 240); do      # until the boot is done (degraded: some host unit failed)
	state=$(inside systemctl is-system-running 2>/dev/null || true)
	case $state in running|degraded) break ;; esac
	sleep 0.5
done
case $state in running|degraded) ;; *) echo "FAILED: container boot: $state"; exit 1 ;; esac
echo "ok: booted, systemd is PID 1 in the container ($state)"
cp "$deb" "/proc/$init/root/root/"

inside bash -s "$(basename "$deb")" <<'STEPS'
set -euo pipefail
deb=/root/$1
step() { echo "ok: $*"; }
fail() { echo "FAILED: $*"; exit 1; }
# drop a file's clean pages from the page cache (/proc/sys is read-only here)
uncache() {
	python3 -c 'import os, sys; fd = os.open(sys.argv[1], os.O_RDONLY)
os.posix_fadvise(fd, 0, 0, os.POSIX_FADV_DONTNEED)' "$1"
}

# An nginx worker's pid, once the restarted master has forked one:
# systemd's restart returns when the master wrote its pid file, which
# it does before it forks its workers.
nginx_worker() {
	local w
	for _ in $(seq 100); do
		w=$(pgrep -u www-data nginx | head -1 || true)
		[ -n "$w" ] && { echo "$w"; return; }
		sleep 0.1
	done
	return 1
}

# This machine keeps packages from starting services (policy-rc.d, for
# its tests); a Debian 12 as installed has none.
rm -f /usr/sbin/policy-rc.d

# README: install
apt-get install -y -qq "$deb" >/dev/null 2>&1 || fail "apt-get install $deb"
getent group libception >/dev/null || fail "no group libception"
[ "$(systemctl is-active receptiond.socket)" = active ] ||
	fail "receptiond.socket not active: $(systemctl status receptiond.socket 2>&1 | tail -5)"
mode=$(stat -c '%A %U %G' /run/libception/receptiond.sock)
[ "$mode" = "srw-rw---- root libception" ] || fail "socket is $mode"
step "package installed; receptiond.socket listening ($mode)"

# README: nginx under libception
libception enable nginx.service --user www-data >/dev/null
systemctl restart nginx
worker=$(nginx_worker) || fail "no nginx worker 10 s after its restart"
grep -q /usr/lib/libception.so "/proc/$worker/maps" || fail "libception.so not in nginx's worker"
step "nginx restarted with libception.so in its workers (pid $worker)"

# a cold file, fetched through nginx
head -c $((96 << 20)) /dev/urandom > /var/www/html/lc/cold.bin
sync
uncache /var/www/html/lc/cold.bin
want=$(sha256sum < /var/www/html/lc/cold.bin | cut -d' ' -f1)
uncache /var/www/html/lc/cold.bin
got=$(curl -sf http://127.0.0.1/lc/cold.bin | sha256sum | cut -d' ' -f1)
[ "$got" = "$want" ] || fail "curl gave other bytes"
step "96 MiB cold file through nginx: sha256 equal"
requests=$(libception stats --json | python3 -c 'import json,sys; print(sum(d["requests"] for d in json.load(sys.stdin)["devices"]))')
[ "$requests" -gt 0 ] || fail "the daemon saw no requests"
pid=$(systemctl show -p MainPID --value receptiond.service)
caps=$(awk '/^CapEff/ {print $2}' "/proc/$pid/status")
[ "$caps" = 000000000000000c ] || fail "receptiond CapEff $caps"
step "receptiond.service started by its socket (pid $pid, CapEff $caps): $requests requests"

# README: metrics
echo 'metrics-listen = 127.0.0.1:9477' >> /etc/libception/receptiond.conf
receptiond --check-config >/dev/null || fail "--check-config"
systemctl restart receptiond
# Each nginx worker finds its connection gone on its next miss and reads on
# its own for a second (libception.so(8)), then reaches the new daemon:
# fetch until one has.
for _ in $(seq 10); do
	uncache /var/www/html/lc/cold.bin
	curl -sf http://127.0.0.1/lc/cold.bin >/dev/null
	libception stats | grep -q '^vd\|^sd\|^nvme' && break
	sleep 1.5
done
curl -sf http://127.0.0.1:9477/metrics > /tmp/metrics
promtool check metrics < /tmp/metrics || fail "promtool check metrics"
grep -q "^libception_device_requests_total{device=" /tmp/metrics ||
	fail "no device series: $(libception stats 2>&1 | head -8; journalctl -u receptiond --no-pager | tail -5)"
step "/metrics passes promtool: $(grep '^libception_device_requests_total' /tmp/metrics | head -1)"
cat >> /etc/prometheus/prometheus.yml <<'EOF'
  - job_name: libception
    scrape_interval: 1s
    static_configs:
      - targets: ['127.0.0.1:9477']
EOF
systemctl restart prometheus
value=
for _ in $(seq 60); do
	value=$(curl -sf 'http://127.0.0.1:9090/api/v1/query?query=sum(libception_device_requests_total)' |
	        python3 -c 'import json,sys; r=json.load(sys.stdin)["data"]["result"]; print(r[0]["value"][1] if r else "")' \
	        2>/dev/null || true)      # (nothing yet while Prometheus starts)
	[ -n "$value" ] && [ "$value" != 0 ] && break
	sleep 1
done
[ -n "$value" ] && [ "$value" != 0 ] || fail "Prometheus has no libception_device_requests_total"
step "Prometheus scraped it: sum(libception_device_requests_total) = $value"

# README: man page, journal
MANPAGER=cat man receptiond 2>/dev/null | grep -q "^CONFIGURATION" || fail "man receptiond"
journalctl -u receptiond --no-pager | grep -q "listening on /run/libception/receptiond.sock (from systemd)" ||
	fail "journal"
step "man receptiond and journalctl -u receptiond"

# who may not use it: a user outside the group
if setpriv --reuid=nobody --regid=nogroup --clear-groups libception stats >/dev/null 2>&1; then
	fail "nobody reached the daemon"
fi
step "a user outside the group libception is refused by the socket's mode"

# README: removal, in order
libception disable nginx.service --user www-data >/dev/null
systemctl restart nginx
apt-get purge -y -qq libception >/dev/null 2>&1 || fail "apt-get purge"
worker=$(nginx_worker) || fail "no nginx worker 10 s after its restart"
! grep -q libception "/proc/$worker/maps" || fail "nginx still loads libception.so"
got=$(curl -sf http://127.0.0.1/lc/cold.bin | sha256sum | cut -d' ' -f1)
[ "$got" = "$want" ] || fail "nginx without libception gave other bytes"
left=$(ls -d /etc/libception /run/libception /usr/share/libception /usr/bin/receptiond \
          /lib/systemd/system/receptiond.socket /etc/systemd/system/nginx.service.d 2>/dev/null || true)
[ -z "$left" ] || fail "left after purge: $left"
systemctl cat receptiond.socket >/dev/null 2>&1 && fail "receptiond.socket still known"
step "disabled and purged: nginx serves as before, nothing of libception left"
STEPS
echo "ok: walkthrough complete"
