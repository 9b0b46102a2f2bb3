#!/usr/bin/env bash
# install-deps.sh - install what building, testing and benchmarking need on
# Debian 12, as root.  Quick and silent when everything is already there.
set -euo pipefail

APT_PACKAGES=(build-essential pkg-config fuse3 libfuse3-dev libext2fs-dev e2fsprogs xfsprogs
              nginx apache2 lighttpd caddy curl strace psmisc procps diffutils tar
              prometheus pandoc man-db debhelper lintian fakeroot systemd systemd-container
              clang libclang-rt-dev)
# caddy: the Go server only receptiond's watch mode reaches;
# libext2fs-dev, e2fsprogs, xfsprogs: `libception mkdisk` (block-disk images);
# prometheus: promtool checks the metrics; pandoc: the man pages from
# docs/*.md; debhelper, lintian, fakeroot: `make deb` and its test;
# systemd: systemd-analyze and systemd-socket-activate for the unit tests;
# systemd-container: systemd-nspawn for scripts/service_walkthrough.sh;
# clang, libclang-rt-dev: libFuzzer for receptiond's fuzz target.
PY_MODULES=(pytest numpy matplotlib)

missing=()
for p in "${APT_PACKAGES[@]}"; do
	dpkg -s "$p" >/dev/null 2>&1 || missing+=("$p")
done
if [ ${#missing[@]} -gt 0 ]; then
	if [ "$(id -u)" != 0 ]; then
		echo "install-deps: missing Debian packages (${missing[*]}); run as root" >&2
		exit 1
	fi
	echo "install-deps: installing ${missing[*]}"
	# Debian's policy-rc.d keeps the servers from starting at install time;
	# the tests start their own instances on their own ports.
	export DEBIAN_FRONTEND=noninteractive
	apt-get update -qq
	apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
fi

py_missing=()
for m in "${PY_MODULES[@]}"; do
	python3 -c "import $m" 2>/dev/null || py_missing+=("$m")
done
if [ ${#py_missing[@]} -gt 0 ]; then
	echo "install-deps: pip installing ${py_missing[*]}"
	python3 -m pip install -q "${py_missing[@]}" ||
		python3 -m pip install -q --break-system-packages "${py_missing[@]}"
fi
