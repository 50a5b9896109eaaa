#!/usr/bin/env bash
# Runs ZooKeeper servers (Debian package `zookeeper`) on loopback for the
# tests and for developers: a standalone server and a 3-node ensemble.
#
#   zk.sh start | stop             the standalone server
#   zk.sh start N | stop N | kill N
#                                  ensemble member N (1..3); `kill` is SIGKILL,
#                                  a crash without clean shutdown. This is the
#                                  shape tests call through
#                                  $TRIBUTARY_TEST_ZK_ENSEMBLE_CTL.
#   zk.sh ensemble-start [N]       all three members, or member N
#   zk.sh ensemble-stop [N]        all three members, or member N
#   zk.sh status                   the Mode of every server
#   zk.sh check-ports              fails, naming them, if any of the ports is taken
#   zk.sh java                     prints the java used (OpenJDK 17)
#
# `start` and `ensemble-start` print `export ...` lines for the variables
# internal/testkit/testenv reads; progress and errors go to stderr. Every start waits
# (bounded) until the server serves; every stop waits until the process is gone.
#
# Environment:
#   TRIBUTARY_ZK_DIR            standalone state dir (default .cache/zk/standalone)
#   TRIBUTARY_ZK_ENSEMBLE_DIR   ensemble state dir (default .cache/zk/ensemble)
#   TRIBUTARY_TEST_PORT_OFFSET  added to every port, for a second checkout (default 0)
#   ZK_WAIT_SECONDS             bound on each wait (default 90)
#
# Ports (plus the offset): standalone client 21810; ensemble member N client
# 2181N, peer 2888N, election 2488N. They stay clear of a developer's own
# ZooKeeper on 2181/2888/3888, of each other for offsets up to 3000, and
# below Linux's ephemeral range (32768-60999): an election port there can be
# taken by any outgoing connection's local port while its member is down,
# and the member then cannot come back.
#
# Timing: the standalone server ticks every 500 ms so that session-expiry tests
# can ask for sessions down to 1 s; the ensemble ticks every 1 s with generous
# init/sync limits so that a loaded 2-core machine does not drop followers.
# Both accept sessions up to 60 s. Neither fsyncs (forceSync=no): the data is
# scratch, and fsync latency would dominate test time.
set -euo pipefail

here=$(cd "$(dirname "$0")" && pwd)
repo=$(cd "$here/.." && pwd)
offset=${TRIBUTARY_TEST_PORT_OFFSET:-0}
wait_seconds=${ZK_WAIT_SECONDS:-90}
# Absolute: a server is recognised by its state dir in its command line.
standalone_dir=$(realpath -m "${TRIBUTARY_ZK_DIR:-$repo/.cache/zk/standalone}")
ensemble_dir=$(realpath -m "${TRIBUTARY_ZK_ENSEMBLE_DIR:-$repo/.cache/zk/ensemble}")
zk_jars=(/usr/share/java/zookeeper.jar /usr/share/java/slf4j-log4j12.jar /usr/share/java/log4j-1.2.jar)

die() {
	echo "zk.sh: $*" >&2
	exit 1
}
say() { echo "zk.sh: $*" >&2; }

# find_java prints OpenJDK 17's java. Not the first java on PATH: the machines
# also carry a newer JDK, and the Java servers are only tested on 17.
find_java() {
	local candidate
	if [ -n "${TRIBUTARY_JAVA:-}" ]; then
		echo "$TRIBUTARY_JAVA"
		return
	fi
	for candidate in /usr/lib/jvm/java-17-openjdk-*/bin/java /usr/lib/jvm/*-17-*/bin/java /usr/lib/jvm/*17*/bin/java; do
		if [ -x "$candidate" ]; then
			echo "$candidate"
			return
		fi
	done
	die "no OpenJDK 17 under /usr/lib/jvm (apt-get install openjdk-17-jre-headless, or set TRIBUTARY_JAVA)"
}

check_tools() {
	local jar
	for jar in "${zk_jars[@]}"; do
		[ -f "$jar" ] || die "$jar missing: run \`make deps\` (installs the Debian package zookeeper)"
	done
	command -v nc >/dev/null || die "nc missing: run \`make deps\` (installs netcat-openbsd)"
}

port_in_use() { nc -z -w 1 127.0.0.1 "$1" >/dev/null 2>&1; }

standalone_port() { echo $((21810 + offset)); }
member_port() { echo $((21810 + $1 + offset)); }
member_peer_port() { echo $((28880 + $1 + offset)); }
member_election_port() { echo $((24880 + $1 + offset)); }

# alive DIR: the server whose state lives in DIR runs. The command-line check
# guards against a recycled pid; the state check against an unreaped zombie.
alive() {
	local dir=$1 pid state
	[ -f "$dir/zk.pid" ] || return 1
	pid=$(cat "$dir/zk.pid")
	[ -r "/proc/$pid/cmdline" ] || return 1
	state=$(awk '{print $3}' "/proc/$pid/stat" 2>/dev/null) || return 1
	[ "$state" != Z ] || return 1
	tr '\0' ' ' <"/proc/$pid/cmdline" | grep -qF -- "$dir/conf"
}

write_log4j() {
	local dir=$1
	cat >"$dir/conf/log4j.properties" <<EOF
log4j.rootLogger=INFO, FILE
log4j.appender.FILE=org.apache.log4j.FileAppender
log4j.appender.FILE.File=$dir/zookeeper.log
log4j.appender.FILE.layout=org.apache.log4j.PatternLayout
log4j.appender.FILE.layout.ConversionPattern=%d{ISO8601} %-5p [%t] %c{1}@%L - %m%n
EOF
}

common_cfg() {
	cat <<EOF
dataDir=$1/data
clientPortAddress=127.0.0.1
admin.enableServer=false
4lw.commands.whitelist=*
maxSessionTimeout=60000
forceSync=no
preAllocSize=4096
EOF
}

configure_standalone() {
	local dir=$standalone_dir
	mkdir -p "$dir/conf" "$dir/data"
	{
		common_cfg "$dir"
		echo "tickTime=500"
		echo "minSessionTimeout=1000"
		echo "clientPort=$(standalone_port)"
	} >"$dir/conf/zoo.cfg"
	write_log4j "$dir"
}

configure_member() {
	local n=$1 dir=$ensemble_dir/$1 i
	mkdir -p "$dir/conf" "$dir/data"
	echo "$n" >"$dir/data/myid"
	{
		common_cfg "$dir"
		echo "tickTime=1000"
		echo "initLimit=20"
		echo "syncLimit=10"
		echo "clientPort=$(member_port "$n")"
		for i in 1 2 3; do
			echo "server.$i=127.0.0.1:$(member_peer_port "$i"):$(member_election_port "$i")"
		done
	} >"$dir/conf/zoo.cfg"
	write_log4j "$dir"
}

# launch DIR PORTS...: starts the server configured in DIR/conf unless it
# already runs; fails if one of its ports is taken by something else.
launch() {
	local dir=$1 java cp port
	shift
	if alive "$dir"; then
		say "already running in $dir (pid $(cat "$dir/zk.pid"))"
		return
	fi
	for port in "$@"; do
		if port_in_use "$port"; then
			die "port 127.0.0.1:$port is already in use (another ZooKeeper? \`bash scripts/zk.sh status\`; or set TRIBUTARY_TEST_PORT_OFFSET)"
		fi
	done
	java=$(find_java)
	cp="$dir/conf$(printf ':%s' "${zk_jars[@]}")"
	# Output goes to files, never to our stdout: a test that runs this script
	# through exec.Cmd.Output would otherwise wait for the server to exit.
	"$java" -Xmx256m -XX:+UseSerialGC -XX:TieredStopAtLevel=1 -Djava.net.preferIPv4Stack=true \
		-cp "$cp" org.apache.zookeeper.server.quorum.QuorumPeerMain "$dir/conf/zoo.cfg" \
		</dev/null >"$dir/zk.out" 2>&1 &
	echo $! >"$dir/zk.pid"
}

# await DIR PORT: bounded wait until the server answers `srvr` with a Mode
# line (`ruok` answers earlier, before the server serves).
await() {
	local dir=$1 port=$2 deadline=$((SECONDS + wait_seconds))
	while :; do
		if echo srvr | nc -w 2 127.0.0.1 "$port" 2>/dev/null | grep -q '^Mode:'; then
			return
		fi
		if ! alive "$dir"; then
			tail -n 20 "$dir/zk.out" "$dir/zookeeper.log" >&2 2>/dev/null || true
			die "ZooKeeper in $dir exited before serving on port $port"
		fi
		if [ $SECONDS -ge $deadline ]; then
			tail -n 20 "$dir/zookeeper.log" >&2 2>/dev/null || true
			die "ZooKeeper in $dir not serving on 127.0.0.1:$port after ${wait_seconds}s"
		fi
		sleep 0.1
	done
}

# halt DIR SIGNAL: stops the server in DIR and waits until it is gone.
halt() {
	local dir=$1 signal=$2 pid deadline
	if ! alive "$dir"; then
		rm -f "$dir/zk.pid"
		return
	fi
	pid=$(cat "$dir/zk.pid")
	kill -"$signal" "$pid" 2>/dev/null || true
	deadline=$((SECONDS + 15))
	while alive "$dir"; do
		if [ $SECONDS -ge $deadline ]; then
			say "pid $pid ignored SIG$signal for 15s; killing it"
			kill -KILL "$pid" 2>/dev/null || true
			deadline=$((SECONDS + 15))
			signal=KILL
		fi
		sleep 0.05
	done
	rm -f "$dir/zk.pid"
}

member_number() {
	case "${1:-}" in
	1 | 2 | 3) echo "$1" ;;
	*) die "ensemble member must be 1, 2 or 3, not '${1:-}'" ;;
	esac
}

ensemble_list() {
	echo "127.0.0.1:$(member_port 1),127.0.0.1:$(member_port 2),127.0.0.1:$(member_port 3)"
}

start_standalone() {
	check_tools
	alive "$standalone_dir" || configure_standalone
	launch "$standalone_dir" "$(standalone_port)"
	await "$standalone_dir" "$(standalone_port)"
	say "standalone serving on 127.0.0.1:$(standalone_port) (state in $standalone_dir)"
	echo "export TRIBUTARY_TEST_ZK=127.0.0.1:$(standalone_port)"
}

# start_members N...: launches all first, then waits, so that the members
# find each other while the JVMs start up.
start_members() {
	local n
	check_tools
	for n in "$@"; do
		# A restarted member keeps its config and data: it rejoins as the
		# same server, as after a crash.
		[ -f "$ensemble_dir/$n/conf/zoo.cfg" ] || alive "$ensemble_dir/$n" || configure_member "$n"
		launch "$ensemble_dir/$n" "$(member_port "$n")" "$(member_peer_port "$n")" "$(member_election_port "$n")"
	done
	for n in "$@"; do
		await "$ensemble_dir/$n" "$(member_port "$n")"
	done
}

print_ensemble_env() {
	echo "export TRIBUTARY_TEST_ZK_ENSEMBLE=$(ensemble_list)"
	echo "export TRIBUTARY_TEST_ZK_ENSEMBLE_CTL=$here/zk.sh"
	echo "export TRIBUTARY_ZK_ENSEMBLE_DIR=$ensemble_dir"
}

status_of() {
	local name=$1 dir=$2 port=$3 mode
	if alive "$dir"; then
		mode=$(echo srvr | nc -w 2 127.0.0.1 "$port" 2>/dev/null | sed -n 's/^Mode: //p')
		echo "$name 127.0.0.1:$port pid $(cat "$dir/zk.pid") mode ${mode:-not-serving}"
	else
		echo "$name 127.0.0.1:$port stopped"
	fi
}

cmd=${1:-}
[ $# -gt 0 ] && shift
member=
if [ $# -gt 0 ]; then
	# An assignment, so that a bad number stops the script under set -e.
	member=$(member_number "$1")
fi
case "$cmd" in
start)
	if [ -z "$member" ]; then
		start_standalone
	else
		start_members "$member"
	fi
	;;
stop)
	if [ -z "$member" ]; then
		halt "$standalone_dir" TERM
	else
		halt "$ensemble_dir/$member" TERM
	fi
	;;
kill)
	[ -n "$member" ] || die "kill needs an ensemble member number (1..3)"
	halt "$ensemble_dir/$member" KILL
	;;
ensemble-start)
	if [ -z "$member" ]; then
		mkdir -p "$ensemble_dir"
		for n in 1 2 3; do
			alive "$ensemble_dir/$n" || configure_member "$n"
		done
		start_members 1 2 3
		say "ensemble serving on $(ensemble_list) (state in $ensemble_dir)"
		print_ensemble_env
	else
		start_members "$member"
	fi
	;;
ensemble-stop)
	if [ -z "$member" ]; then
		# In parallel: a lone member's shutdown is no slower without quorum.
		for n in 1 2 3; do halt "$ensemble_dir/$n" TERM & done
		wait
	else
		halt "$ensemble_dir/$member" TERM
	fi
	;;
status)
	status_of standalone "$standalone_dir" "$(standalone_port)"
	for n in 1 2 3; do
		status_of "member $n" "$ensemble_dir/$n" "$(member_port "$n")"
	done
	;;
check-ports)
	busy=()
	for p in "$(standalone_port)" $(for n in 1 2 3; do
		echo "$(member_port "$n") $(member_peer_port "$n") $(member_election_port "$n")"
	done); do
		port_in_use "$p" && busy+=("$p")
	done
	if [ ${#busy[@]} -gt 0 ]; then
		die "ports already in use on 127.0.0.1: ${busy[*]} (a ZooKeeper left running? \`bash scripts/zk.sh status\`; or set TRIBUTARY_TEST_PORT_OFFSET)"
	fi
	;;
java) find_java ;;
*)
	sed -n '2,/^set -euo/p' "$0" | sed '$d; s/^# \{0,1\}//' >&2
	exit 2
	;;
esac
