#!/usr/bin/env bash
# stop.sh DATADIR: stops the test Hive Metastore that start.sh started there.
# SIGTERM first, SIGKILL if it is still running after 30 s; returns once the
# process is gone. Removes hms.pid, hms.ready and tmp/; keeps metastore_db/
# (a later start.sh serves the same tables) and the logs. A pid file whose
# process is not that DATADIR's metastore (gone, or a reused pid) is only
# removed.
set -euo pipefail

[ $# -eq 1 ] || { echo "usage: stop.sh DATADIR" >&2; exit 2; }
datadir=$(realpath -m "$1")
pidfile=$datadir/hms.pid

alive() {
	local stat
	stat=$(ps -o stat= -p "$1" 2>/dev/null) || return 1
	[[ -n $stat && $stat != Z* ]]
}

# ours PID: a JVM whose java.io.tmpdir is DATADIR/tmp (start.sh sets it).
ours() {
	local cmdline
	cmdline=$(tr '\0' ' ' <"/proc/$1/cmdline" 2>/dev/null) || return 1
	[[ $cmdline == *"-Djava.io.tmpdir=$datadir/tmp "* ]]
}

wait_gone() {
	local deadline=$((SECONDS + $2))
	while alive "$1"; do
		[ "$SECONDS" -lt "$deadline" ] || return 1
		sleep 0.1
	done
}

if [ -f "$pidfile" ]; then
	pid=$(cat "$pidfile")
	[[ $pid =~ ^[0-9]+$ ]] || { echo "hive-metastore stop.sh: $pidfile holds no pid" >&2; exit 1; }
	if alive "$pid" && ours "$pid"; then
		kill -TERM "$pid" 2>/dev/null || true
		if ! wait_gone "$pid" 30; then
			echo "hive-metastore stop.sh: pid $pid still running 30s after SIGTERM: SIGKILL" >&2
			kill -KILL "$pid" 2>/dev/null || true
			wait_gone "$pid" 30 || { echo "hive-metastore stop.sh: pid $pid survived SIGKILL" >&2; exit 1; }
		fi
	fi
fi
rm -rf "$pidfile" "$datadir/hms.ready" "$datadir/tmp"
