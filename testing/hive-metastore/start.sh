#!/usr/bin/env bash
# start.sh PORT DATADIR: starts the test Hive Metastore (Apache Hive's
# standalone metastore 3.1.3, Thrift on 127.0.0.1:PORT, an embedded Derby
# database in DATADIR/metastore_db) in the background, waits until it
# serves and prints only the JVM's PID on stdout. Progress and errors go to
# stderr; exit 1 if it did not come up (the log's tail is printed and the
# JVM killed). Stop it with stop.sh DATADIR.
#
# DATADIR holds metastore_db/ (created with the metastore's schema tool on
# the first start and kept by stop.sh, so a restarted metastore has its
# tables), conf/metastore-site.xml (written on each start from
# conf/metastore-site.xml.in), hms.log and schematool.log (kept), hms.pid and
# hms.ready (the thrift:// URI, present while it serves) and tmp/. A DATADIR
# whose metastore still runs is refused.
#
# `start.sh --fetch` only fills the cache (scripts/install-deps.sh runs it).
# The first start fetches the jars with Maven (dependency:copy-dependencies
# of pom.xml, about 140 jars, 110 MB) and the Derby schema scripts (only the
# -bin tarball carries them) into a cache keyed by a hash of pom.xml, so
# later starts are offline and this folder may be read-only:
#   $TRIBUTARY_HMS_CACHE (default <repository>/.cache/hive-metastore)
#     lib-HASH/      the jars
#     dist-HASH/     scripts/metastore/upgrade/derby/ (METASTORE_HOME)
#
# Environment:
#   TRIBUTARY_JAVA                the java to run (default OpenJDK 17; 11..22)
#   TRIBUTARY_HMS_WAREHOUSE       the warehouse root (default file://DATADIR/warehouse;
#                                 an hdfs://host:port/dir works: HDFS client jars are in)
#   TRIBUTARY_HMS_HEAP            -Xmx, default 512m
#   TRIBUTARY_HMS_START_TIMEOUT   seconds to wait for the metastore to serve once its
#                                 JVM runs (the schema tool's run not counted), default 120
set -euo pipefail

here=$(cd "$(dirname "$0")" && pwd)
hive_version=3.1.3

me="hive-metastore start.sh"
die() {
	echo "$me: $*" >&2
	exit 1
}
# shellcheck source=../jvm.sh
. "$here/../jvm.sh"

fetch_only=
if [ $# -eq 1 ] && [ "$1" = --fetch ]; then
	fetch_only=1
	set -- 0 .
fi
[ $# -eq 2 ] || { echo "usage: start.sh PORT DATADIR | start.sh --fetch" >&2; exit 2; }
port=$1
datadir=$(realpath -m "$2")
if [ -z "$fetch_only" ]; then
	[[ $port =~ ^[0-9]+$ ]] && [ "$port" -ge 1 ] && [ "$port" -le 65535 ] || die "PORT $port: want 1..65535"
fi
heap=${TRIBUTARY_HMS_HEAP:-512m}
timeout=${TRIBUTARY_HMS_START_TIMEOUT:-120}
cache=${TRIBUTARY_HMS_CACHE:-$(cd "$here/../.." && pwd)/.cache/hive-metastore}
warehouse=${TRIBUTARY_HMS_WAREHOUSE:-file://$datadir/warehouse}

pick_java "the metastore's Hadoop 3.3"

# mvn_into DIR WHAT GOAL...: runs a Maven goal of pom.xml that writes into DIR.
mvn_into() {
	local dir=$1 what=$2
	shift 2
	command -v mvn >/dev/null || die "mvn missing: run \`make deps\` (installs the Debian package maven)"
	if ! JAVA_HOME=$java_home mvn -B -q -Dstyle.color=never -f "$here/pom.xml" "$@" \
		-DoutputDirectory="$dir" >"$dir.log" 2>&1; then
		cat "$dir.log" >&2
		rm -rf "$dir" "$dir.log"
		die "Maven could not fetch $what (see above)"
	fi
	rm -f "$dir.log"
}

mkdir -p "$cache"
hash=$(sha256sum "$here/pom.xml" | cut -c1-12)
lib=$cache/lib-$hash
if [ ! -f "$lib/.complete" ]; then
	echo "hive-metastore start.sh: fetching the metastore's jars with Maven into $lib" >&2
	tmp=$(mktemp -d "$cache/.lib.XXXXXX")
	mvn_into "$tmp" "the jars of $here/pom.xml" dependency:copy-dependencies -DincludeScope=runtime
	publish "$tmp" "$lib"
fi
dist=$cache/dist-$hash
if [ ! -f "$dist/.complete" ]; then
	echo "hive-metastore start.sh: fetching the metastore's Derby schema scripts into $dist" >&2
	tmp=$(mktemp -d "$cache/.dist.XXXXXX")
	mvn_into "$tmp" "hive-standalone-metastore-$hive_version-bin.tar.gz" dependency:copy \
		-Dartifact="org.apache.hive:hive-standalone-metastore:$hive_version:tar.gz:bin"
	tar xzf "$tmp"/*.tar.gz -C "$tmp" --strip-components=1 --wildcards '*/scripts/metastore/upgrade/derby/*' ||
		die "the -bin tarball in $tmp has no Derby schema scripts"
	rm -f "$tmp"/*.tar.gz
	publish "$tmp" "$dist"
fi

[ -z "$fetch_only" ] || exit 0

mkdir -p "$datadir"
pidfile=$datadir/hms.pid
ready=$datadir/hms.ready
log=$datadir/hms.log
refuse_busy "$pidfile" "$datadir" "$port" metastore
rm -rf "$ready" "$pidfile" "$datadir/tmp" "$datadir/conf"
mkdir -p "$datadir/tmp" "$datadir/conf"
sed -e "s#@PORT@#$port#g" -e "s#@DATADIR@#$datadir#g" -e "s#@WAREHOUSE@#$warehouse#g" \
	"$here/conf/metastore-site.xml.in" >"$datadir/conf/metastore-site.xml"
cp "$here/conf/metastore-log4j2.properties" "$datadir/conf/"

java_opts=("-Xms64m" "-Xmx$heap" -XX:+UseSerialGC -XX:TieredStopAtLevel=1 -Djava.net.preferIPv4Stack=true
	"-Djava.io.tmpdir=$datadir/tmp" "-Dderby.system.home=$datadir"
	"-Dlog4j.configurationFile=$datadir/conf/metastore-log4j2.properties"
	--add-opens=java.base/java.lang=ALL-UNNAMED --add-opens=java.base/java.util=ALL-UNNAMED
	--add-opens=java.base/java.net=ALL-UNNAMED --add-opens=java.base/java.nio=ALL-UNNAMED)
classpath=$datadir/conf:$lib/*

schema_began=$SECONDS
if [ ! -d "$datadir/metastore_db" ]; then
	# METASTORE_HOME: where the schema tool finds scripts/metastore/upgrade/derby.
	if ! METASTORE_HOME=$dist "$java" "${java_opts[@]}" -cp "$classpath" \
		org.apache.hadoop.hive.metastore.tools.MetastoreSchemaTool -dbType derby -initSchema \
		</dev/null >"$datadir/schematool.log" 2>&1; then
		tail -n 40 "$datadir/schematool.log" >&2
		rm -rf "$datadir/metastore_db"
		die "the schema tool could not create $datadir/metastore_db (log: $datadir/schematool.log)"
	fi
fi

"$java" "${java_opts[@]}" -cp "$classpath" org.apache.hadoop.hive.metastore.HiveMetaStore -p "$port" \
	</dev/null >"$log" 2>&1 &
pid=$!
echo "$pid" >"$pidfile"
began=$SECONDS

fail() {
	tail -n 60 "$log" >&2
	kill -KILL "$pid" 2>/dev/null || true
	wait "$pid" 2>/dev/null || true
	rm -f "$pidfile"
	die "$*"
}
until timeout 2 bash -c "exec 3<>/dev/tcp/127.0.0.1/$port" 2>/dev/null; do
	alive "$pid" || fail "the metastore exited before it served on 127.0.0.1:$port (log: $log)"
	# A fatal init error leaves the JVM alive (non-daemon threads).
	if grep -qs "Metastore Thrift Server threw an exception" "$log"; then
		fail "the metastore failed to start (log: $log)"
	fi
	[ $((SECONDS - began)) -lt "$timeout" ] ||
		fail "the metastore did not serve on 127.0.0.1:$port within ${timeout}s (TRIBUTARY_HMS_START_TIMEOUT; log: $log)"
	sleep 0.2
done
echo "thrift://127.0.0.1:$port" >"$ready"
echo "hive-metastore start.sh: thrift://127.0.0.1:$port up in $((SECONDS - schema_began))s, pid $pid, log $log" >&2
echo "$pid"
