#!/usr/bin/env bash
# stop.sh DATADIR: stops the test Hive Metastore that start.sh started there.
# SIGTERM first, SIGKILL if it is still running after 30 s; returns once the
# process is gone. Removes hms.pid, hms.ready and tmp/; keeps metastore_db/
# (a later start.sh serves the same tables) and the logs. A pid file whose
# process is not that DATADIR's metastore (gone, or a reused pid) is only
# removed.
set -euo pipefail

here=$(cd "$(dirname "$0")" && pwd)
me="hive-metastore stop.sh"
die() {
	echo "$me: $*" >&2
	exit 1
}
# shellcheck source=../jvm.sh
. "$here/../jvm.sh"

[ $# -eq 1 ] || { echo "usage: stop.sh DATADIR" >&2; exit 2; }
datadir=$(realpath -m "$1")
pidfile=$datadir/hms.pid

stop_pidfile "$pidfile" "$datadir"
rm -rf "$pidfile" "$datadir/hms.ready" "$datadir/tmp"
