#!/usr/bin/env bash
# stop.sh DATADIR (or DATADIR/minihdfs.pid): stops the test HDFS that
# start.sh started there. SIGTERM first (the cluster shuts down cleanly in
# well under a second), SIGKILL if it is still running after 30 s; returns
# once the process is gone. Removes the pid and ready files and the file
# system (dfs/, tmp/) and a Kerberized cluster's cluster.env; keeps
# minihdfs.log. A pid file whose process is not
# that DATADIR's cluster (gone, or a reused pid) is only removed.
set -euo pipefail

die() {
	echo "hdfs stop.sh: $*" >&2
	exit 1
}

[ $# -eq 1 ] || { echo "usage: stop.sh DATADIR" >&2; exit 2; }
target=$(realpath -m "$1")
if [ "$(basename "$target")" = minihdfs.pid ]; then
	datadir=$(dirname "$target")
else
	datadir=$target
fi
pidfile=$datadir/minihdfs.pid

# alive PID: exists and is not a zombie (see start.sh).
alive() {
	local stat
	stat=$(ps -o stat= -p "$1" 2>/dev/null) || return 1
	[[ -n $stat && $stat != Z* ]]
}

# ours PID: the process is the cluster of this DATADIR, not a reused pid:
# a JVM whose java.io.tmpdir is DATADIR/tmp (start.sh sets it).
ours() {
	local cmdline
	cmdline=$(tr '\0' ' ' <"/proc/$1/cmdline" 2>/dev/null) || return 1
	[[ $cmdline == *"-Djava.io.tmpdir=$datadir/tmp "* ]]
}

# wait_gone PID SECONDS: 0 once the process is gone, 1 if it outlived SECONDS.
wait_gone() {
	local deadline=$((SECONDS + $2))
	while alive "$1"; do
		[ "$SECONDS" -lt "$deadline" ] || return 1
		sleep 0.1
	done
}

if [ -f "$pidfile" ]; then
	pid=$(cat "$pidfile")
	[[ $pid =~ ^[0-9]+$ ]] || die "$pidfile holds no pid"
	if alive "$pid" && ours "$pid"; then
		kill -TERM "$pid" 2>/dev/null || true
		if ! wait_gone "$pid" 30; then
			echo "hdfs stop.sh: pid $pid still running 30s after SIGTERM: SIGKILL" >&2
			kill -KILL "$pid" 2>/dev/null || true
			wait_gone "$pid" 30 || die "pid $pid survived SIGKILL for 30s"
		fi
	fi
fi
rm -rf "$pidfile" "$datadir/minihdfs.ready" "$datadir/minihdfs.ready.tmp" "$datadir/dfs" "$datadir/tmp" \
	"$datadir/cluster.env" "$datadir/cluster.env.tmp"
