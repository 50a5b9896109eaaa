#!/usr/bin/env bash
# datanode.sh DATADIR stop|start N: stops or restarts DataNode N (from 1) of
# the cluster start.sh --datanode-control runs in DATADIR, and returns once
# it is done (bounded by TRIBUTARY_HDFS_START_TIMEOUT, default 120 s).
# datanode.sh DATADIR status prints "N running" or "N stopped" per DataNode.
set -euo pipefail

die() {
	echo "hdfs datanode.sh: $*" >&2
	exit 1
}

[ $# -ge 2 ] || { echo "usage: datanode.sh DATADIR stop|start N | DATADIR status" >&2; exit 2; }
datadir=$(realpath -m "$1")
control=$datadir/datanode.control
state=$control.state
[ -f "$state" ] || die "$datadir: no cluster started with --datanode-control runs there"
case $2 in
status)
	cat "$state"
	exit 0
	;;
stop) want=stopped ;;
start) want=running ;;
*) die "$2: want stop, start or status" ;;
esac
[ $# -eq 3 ] && [[ $3 =~ ^[0-9]+$ ]] || die "$2 needs a DataNode number"
grep -q "^$3 " "$state" || die "no DataNode $3 (the cluster has: $(cut -d' ' -f1 "$state" | tr '\n' ' '))"
echo "$2 $3" >"$control.tmp"
mv -f "$control.tmp" "$control"
deadline=$((SECONDS + ${TRIBUTARY_HDFS_START_TIMEOUT:-120}))
until [ ! -f "$control" ] && grep -qx "$3 $want" "$state"; do
	[ $SECONDS -lt $deadline ] || die "DataNode $3 not $want after ${TRIBUTARY_HDFS_START_TIMEOUT:-120}s (log: $datadir/minihdfs.log)"
	sleep 0.2
done
