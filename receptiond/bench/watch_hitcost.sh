#!/usr/bin/env bash
# watch_hitcost.sh [BATCHES [RECEPTIOND ARGS...]] - the extra cost of a cached 64 KiB read under
# `receptiond --watch`, as root: an ext4 image mounted twice (the watched
# mount and an unmarked bind mount of it), one file of SIZE (default 4M:
# over --watch-quiet's default, so every read is an event; SIZE=1M gives a
# file that goes quiet), the daemon watching the first.  Prints
# watch_hitcost's report and the load average.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
top=$(cd "$here/../.." && pwd)
work=$(mktemp -d /tmp/lc-watch-hitcost.XXXXXX)
daemon=""
cleanup() {
	[ -n "$daemon" ] && kill "$daemon" 2>/dev/null && wait "$daemon" 2>/dev/null || true
	umount "$work/plain" 2>/dev/null || true
	umount "$work/watched" 2>/dev/null || true
	rm -rf "$work"
}
trap cleanup EXIT
make -s -C "$top/receptiond" bench/watch_hitcost
truncate -s 64M "$work/img"
mkfs.ext4 -q -F "$work/img"
mkdir "$work/watched" "$work/plain"
mount -o loop "$work/img" "$work/watched"
mount --bind "$work/watched" "$work/plain"
head -c "${SIZE:-4M}" /dev/urandom > "$work/watched/f"
"$top/build/bin/receptiond" --foreground --socket "$work/rd.sock" --watch "$work/watched" \
	--log "$work/rd.log" "${@:2}" &
daemon=$!
for _ in $(seq 100); do [ -S "$work/rd.sock" ] && break; sleep 0.05; done
"$here/watch_hitcost" "$work/watched/f" "$work/plain/f" "${1:-200}"
echo "load average: $(cut -d' ' -f1-3 /proc/loadavg)"
