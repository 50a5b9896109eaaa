#!/usr/bin/env bash
# with-servers.sh CMD [ARGS...]: runs CMD with the test servers up and stops
# them afterwards, whatever CMD's outcome; exits with CMD's exit code.
#
# Servers (see scripts/zk.sh for ports and settings), state in a fresh temp dir:
#   - a standalone ZooKeeper        TRIBUTARY_TEST_ZK=127.0.0.1:21810
#   - a 3-node ZooKeeper ensemble   TRIBUTARY_TEST_ZK_ENSEMBLE=127.0.0.1:21811,...:21812,...:21813
#     controlled by tests through   TRIBUTARY_TEST_ZK_ENSEMBLE_CTL (`$CTL stop 2`, `$CTL start 2`,
#                                   `$CTL kill 2`), which finds the ensemble through
#                                   TRIBUTARY_ZK_ENSEMBLE_DIR, exported too.
#   - a real HDFS (MiniDFSCluster)  TRIBUTARY_TEST_HDFS=127.0.0.1:19000, from testing/hdfs
#                                   (NameNode RPC port 19000 + TRIBUTARY_TEST_PORT_OFFSET;
#                                   TRIBUTARY_HDFS_SCRIPTS names another folder with the same
#                                   start.sh PORT DATADIR / stop.sh DATADIR)
#   - two Kerberized HDFS, each with its KDC (testing/hdfs/start.sh --kerberos), one per data
#     transfer protection; their cluster.env files (addresses, principals, keytabs, krb5.conf):
#       privacy with AES/CTR/NoPadding  TRIBUTARY_TEST_HDFS_SECURE_PRIVACY_ENV (port 19001 + offset)
#       authentication                  TRIBUTARY_TEST_HDFS_SECURE_AUTHENTICATION_ENV (19002 + offset)
#   - a Hive Metastore (standalone 3.1.3 on Derby, testing/hive-metastore), its warehouse on
#     that HDFS                       TRIBUTARY_TEST_HIVE_METASTORE=thrift://127.0.0.1:19083
#                                   (19083 + TRIBUTARY_TEST_PORT_OFFSET)
# and the reader/browser the tests check output with:
#   TRIBUTARY_TEST_PYTHON (.cache/venv, fastavro + pyarrow, made by install-deps.sh)
#   TRIBUTARY_TEST_SPARK4_PYTHON (.cache/venv-spark4, PySpark 4.1, made by install-deps.sh)
#
# TRIBUTARY_KEEP_SERVER_DIR=1 keeps the temp dir (server logs) after the run.
set -euo pipefail

here=$(cd "$(dirname "$0")" && pwd)
repo=$(cd "$here/.." && pwd)
hdfs_scripts=${TRIBUTARY_HDFS_SCRIPTS:-$repo/testing/hdfs}
hdfs_port=$((19000 + ${TRIBUTARY_TEST_PORT_OFFSET:-0}))
privacy_port=$((19001 + ${TRIBUTARY_TEST_PORT_OFFSET:-0}))
authentication_port=$((19002 + ${TRIBUTARY_TEST_PORT_OFFSET:-0}))
hms_scripts=$repo/testing/hive-metastore
hms_port=$((19083 + ${TRIBUTARY_TEST_PORT_OFFSET:-0}))
# The HDFS clusters' data directories under the state dir.
hdfs_dirs=(hdfs hdfs-privacy hdfs-authentication)
if [ $# -eq 0 ]; then
	echo "usage: with-servers.sh CMD [ARGS...]" >&2
	exit 2
fi

# Servers of an earlier run that was killed outright (SIGKILL leaves its trap
# no chance) would hold the ports: stop them when their run is gone.
for old in "${TMPDIR:-/tmp}"/tributary-servers.*; do
	[ -f "$old/owner.pid" ] || continue
	owner=$(cat "$old/owner.pid")
	if [ -r "/proc/$owner/cmdline" ] && tr '\0' ' ' <"/proc/$owner/cmdline" | grep -q with-servers; then
		continue
	fi
	echo "with-servers: stopping servers left by a dead run in $old" >&2
	TRIBUTARY_ZK_DIR=$old/zk-standalone bash "$here/zk.sh" stop || true
	TRIBUTARY_ZK_ENSEMBLE_DIR=$old/zk-ensemble bash "$here/zk.sh" ensemble-stop || true
	for dir in "${hdfs_dirs[@]}"; do
		[ -f "$old/$dir/minihdfs.pid" ] && { bash "$hdfs_scripts/stop.sh" "$old/$dir" || true; }
	done
	[ -f "$old/hive-metastore/hms.pid" ] && { bash "$hms_scripts/stop.sh" "$old/hive-metastore" || true; }
	rm -rf "$old"
done

state=$(mktemp -d "${TMPDIR:-/tmp}/tributary-servers.XXXXXX")
echo $$ >"$state/owner.pid"
export TRIBUTARY_ZK_DIR=$state/zk-standalone
export TRIBUTARY_ZK_ENSEMBLE_DIR=$state/zk-ensemble
child=

# shellcheck disable=SC2317 # run from the traps below
stop_servers() {
	local pidfile pid dir
	# Stop in parallel; each stop waits for its process to be gone.
	bash "$here/zk.sh" stop >/dev/null 2>&1 &
	bash "$here/zk.sh" ensemble-stop >/dev/null 2>&1 &
	for dir in "${hdfs_dirs[@]}"; do
		if [ -f "$state/$dir/minihdfs.pid" ]; then
			bash "$hdfs_scripts/stop.sh" "$state/$dir" >/dev/null 2>&1 &
		fi
	done
	if [ -f "$state/hive-metastore/hms.pid" ]; then
		bash "$hms_scripts/stop.sh" "$state/hive-metastore" >/dev/null 2>&1 &
	fi
	wait
	# Belt and braces: no process started from our state dir may outlive us,
	# whatever a test did to the pid files.
	for pidfile in "$state"/*/zk.pid "$state"/*/*/zk.pid; do
		[ -f "$pidfile" ] || continue
		pid=$(cat "$pidfile")
		if tr '\0' ' ' 2>/dev/null <"/proc/$pid/cmdline" | grep -qF -- "$state/"; then
			kill -KILL "$pid" 2>/dev/null || true
		fi
	done
	if [ -n "${TRIBUTARY_KEEP_SERVER_DIR:-}" ]; then
		echo "with-servers: server logs kept in $state" >&2
	else
		rm -rf "$state"
	fi
}

# shellcheck disable=SC2317
on_exit() {
	local rc=$?
	trap - EXIT INT TERM
	stop_servers
	exit "$rc"
}

# on_signal forwards the signal to CMD and waits for it, so CMD can clean up
# before the servers it uses go away.
# shellcheck disable=SC2317
on_signal() {
	local sig=$1 code=$2
	trap - INT TERM
	if [ -n "$child" ]; then
		kill -"$sig" "$child" 2>/dev/null || true
		wait "$child" 2>/dev/null || true
	fi
	exit "$code"
}

trap on_exit EXIT
trap 'on_signal INT 130' INT
trap 'on_signal TERM 143' TERM

start=$SECONDS
bash "$here/zk.sh" check-ports
if [ ! -f "$hdfs_scripts/start.sh" ]; then
	echo "with-servers: $hdfs_scripts/start.sh not found (TRIBUTARY_HDFS_SCRIPTS; the default is testing/hdfs in the repository)" >&2
	exit 1
fi
for port in "$hdfs_port" "$privacy_port" "$authentication_port" "$hms_port"; do
	if python3 -c "import socket,sys; s=socket.socket(); sys.exit(s.connect_ex(('127.0.0.1', $port)) != 0)"; then
		echo "with-servers: port $port (HDFS or the Hive Metastore) is already in use on 127.0.0.1 (set TRIBUTARY_TEST_PORT_OFFSET)" >&2
		exit 1
	fi
done
# All at once: the JVMs start faster side by side than one after another.
bash "$here/zk.sh" start >"$state/standalone.env" 2>"$state/standalone.err" &
standalone_pid=$!
bash "$here/zk.sh" ensemble-start >"$state/ensemble.env" 2>"$state/ensemble.err" &
ensemble_pid=$!
mkdir -p "$state/hdfs"
bash "$hdfs_scripts/start.sh" "$hdfs_port" "$state/hdfs" >"$state/hdfs.pid" 2>"$state/hdfs.err" &
hdfs_pid=$!
mkdir -p "$state/hdfs-privacy" "$state/hdfs-authentication"
bash "$hdfs_scripts/start.sh" "$privacy_port" "$state/hdfs-privacy" --kerberos --protection privacy \
	--cipher-suites AES/CTR/NoPadding >"$state/hdfs-privacy.pid" 2>"$state/hdfs-privacy.err" &
privacy_pid=$!
bash "$hdfs_scripts/start.sh" "$authentication_port" "$state/hdfs-authentication" --kerberos \
	--protection authentication >"$state/hdfs-authentication.pid" 2>"$state/hdfs-authentication.err" &
authentication_pid=$!
# The metastore keeps its warehouse on the plain HDFS: it starts once that
# HDFS serves (its start.sh waits, bounded, and writes minihdfs.ready).
mkdir -p "$state/hive-metastore"
(
	while [ ! -s "$state/hdfs/minihdfs.ready" ]; do
		kill -0 "$hdfs_pid" 2>/dev/null || { echo "with-servers: no HDFS for the Hive Metastore" >&2; exit 1; }
		sleep 0.2
	done
	TRIBUTARY_HMS_WAREHOUSE=hdfs://127.0.0.1:$hdfs_port/hive/warehouse \
		exec bash "$hms_scripts/start.sh" "$hms_port" "$state/hive-metastore"
) >"$state/hive-metastore.pid" 2>"$state/hive-metastore.err" &
hms_pid=$!
failed=
for pid in "$standalone_pid" "$ensemble_pid" "$hdfs_pid" "$privacy_pid" "$authentication_pid" "$hms_pid"; do
	wait "$pid" || failed=1
done
if [ -n "$failed" ]; then
	cat "$state/standalone.err" "$state/ensemble.err" "$state/hdfs.err" \
		"$state/hdfs-privacy.err" "$state/hdfs-authentication.err" "$state/hive-metastore.err" >&2
	echo "with-servers: could not start the test servers (see above)" >&2
	exit 1
fi
# shellcheck disable=SC1091
source "$state/standalone.env"
# shellcheck disable=SC1091
source "$state/ensemble.env"
export TRIBUTARY_TEST_HDFS=127.0.0.1:$hdfs_port
export TRIBUTARY_TEST_HDFS_SECURE_PRIVACY_ENV=$state/hdfs-privacy/cluster.env
export TRIBUTARY_TEST_HDFS_SECURE_AUTHENTICATION_ENV=$state/hdfs-authentication/cluster.env
export TRIBUTARY_TEST_HIVE_METASTORE=thrift://127.0.0.1:$hms_port
if [ -x "$repo/.cache/venv/bin/python3" ]; then
	export TRIBUTARY_TEST_PYTHON=$repo/.cache/venv/bin/python3
fi
if [ -x "$repo/.cache/venv-spark4/bin/python3" ]; then
	export TRIBUTARY_TEST_SPARK4_PYTHON=$repo/.cache/venv-spark4/bin/python3
fi
echo "with-servers: ZooKeeper standalone $TRIBUTARY_TEST_ZK and ensemble $TRIBUTARY_TEST_ZK_ENSEMBLE, HDFS $TRIBUTARY_TEST_HDFS, Kerberized HDFS 127.0.0.1:$privacy_port (privacy) and 127.0.0.1:$authentication_port (authentication), Hive Metastore $TRIBUTARY_TEST_HIVE_METASTORE up in $((SECONDS - start))s" >&2

# In the background and waited for, so that a TERM or INT reaches our trap
# at once instead of after CMD ends. `<&0` keeps CMD's stdin (a background
# job would get /dev/null).
"$@" <&0 &
child=$!
rc=0
wait "$child" || rc=$?
child=
exit "$rc"
