#!/usr/bin/env bash
# stop.sh DATADIR (or DATADIR/minihdfs.pid): stops the test HDFS that
# start.sh started there. SIGTERM first (the cluster shuts down cleanly in
# well under a second), SIGKILL if it is still running after 30 s; returns
# once the process is gone. Removes the pid and ready files and the file
# system (dfs/, tmp/) and a Kerberized cluster's cluster.env; keeps
# minihdfs.log. A pid file whose process is not
# that DATADIR's cluster (gone, or a reused pid) is only removed.
set -euo pipefail

here=$(cd "$(dirname "$0")" && pwd)
me="hdfs stop.sh"
die() {
	echo "$me: $*" >&2
	exit 1
}
# shellcheck source=../jvm.sh
. "$here/../jvm.sh"

[ $# -eq 1 ] || { echo "usage: stop.sh DATADIR" >&2; exit 2; }
target=$(realpath -m "$1")
if [ "$(basename "$target")" = minihdfs.pid ]; then
	datadir=$(dirname "$target")
else
	datadir=$target
fi
pidfile=$datadir/minihdfs.pid

stop_pidfile "$pidfile" "$datadir"
rm -rf "$pidfile" "$datadir/minihdfs.ready" "$datadir/minihdfs.ready.tmp" "$datadir/dfs" "$datadir/tmp" \
	"$datadir/cluster.env" "$datadir/cluster.env.tmp"
