#!/usr/bin/env bash
# start.sh PORT DATADIR [--datanodes N] [--datanode-control] [--kerberos
#          [--protection P] [--cipher-suites S]]: starts the test HDFS (Hadoop's
# MiniDFSCluster, see TestHdfs.java) in the background with its NameNode RPC
# on 127.0.0.1:PORT, waits until it serves and prints only the JVM's PID on
# stdout. Progress and errors go to stderr; exit 1 if it did not come up
# (the log's tail is printed and the JVM killed). Stop it with stop.sh DATADIR.
#
# DATADIR holds minihdfs.log (kept after stop), minihdfs.pid, minihdfs.ready
# (the URI, present while it serves), tmp/ (the JVM's java.io.tmpdir: Jetty
# unpacks the web apps there) and dfs/ (the file system: formatted on start,
# deleted on stop). A DATADIR whose cluster still runs is refused.
#
# --datanode-control lets datanode.sh DATADIR stop|start N stop and restart
# DataNode N while the cluster runs (through DATADIR/datanode.control and
# DATADIR/datanode.control.state; see TestHdfs.java).
#
# --kerberos makes the cluster Kerberized, with a KDC (MiniKdc) in the same
# JVM (see Kerberos.java): dfs.data.transfer.protection P (authentication,
# the default, integrity or privacy) and dfs.encrypt.data.transfer.cipher.suites
# S (e.g. AES/CTR/NoPadding; default none). DATADIR then also holds
# cluster.env (sourceable KEY=VALUE: HDFS_ADDR, HDFS_NAMENODE_PRINCIPAL,
# HDFS_DATA_TRANSFER_PROTECTION, HDFS_ENCRYPT_CIPHER_SUITES, KRB5_CONFIG,
# KRB5_REALM, KRB5_KDC, KRB5_CLIENT_PRINCIPAL, KRB5_CLIENT_KEYTAB,
# KRB5_HDFS_KEYTAB; present while it serves), krb5.conf, keytabs/, kdc/,
# ssl/ and conf/, all made anew on each start (a new KDC: old keytabs no
# longer work).
#
# The first start fetches the jars with Maven (dependency:copy-dependencies of
# pom.xml, about 90 MB) and compiles TestHdfs.java; both land in a cache keyed
# by a hash of what they are made from, so later starts are offline and this
# folder may be read-only:
#   $TRIBUTARY_HDFS_CACHE (default ${XDG_CACHE_HOME:-$HOME/.cache}/tributary-hdfs)
#     lib-HASH/      the jars       (HASH of pom.xml and the Hadoop version)
#     classes-HASH/  TestHdfs.class (HASH of pom.xml, the sources, the version)
#
# Environment:
#   TRIBUTARY_JAVA                 the java to run (default OpenJDK 17; javac
#                                  must sit beside it). Java 23 and later are
#                                  refused: Hadoop 3.3 calls Subject.getSubject,
#                                  which they no longer support.
#   TRIBUTARY_HDFS_HADOOP_VERSION  default 3.3.6 (3.4.1 works too)
#   TRIBUTARY_HDFS_HEAP            -Xmx, default 512m
#   TRIBUTARY_HDFS_LOG_LEVEL       log4j level, default WARN
#   TRIBUTARY_HDFS_START_TIMEOUT   seconds to wait for the cluster, default 120
set -euo pipefail

here=$(cd "$(dirname "$0")" && pwd)
main_class=tributary.testing.hdfs.TestHdfs

me="hdfs start.sh"
die() {
	echo "$me: $*" >&2
	exit 1
}
# shellcheck source=../jvm.sh
. "$here/../jvm.sh"

usage() {
	echo "usage: start.sh PORT DATADIR [--datanodes N] [--datanode-control] [--kerberos [--protection P] [--cipher-suites S]]" >&2
	exit 2
}

[ $# -ge 2 ] || usage
port=$1
datadir=$(realpath -m "$2")
shift 2
datanodes=1
kerberos=
datanode_control=
protection=authentication
cipher_suites=
while [ $# -gt 0 ]; do
	case $1 in
	--datanodes)
		[ $# -ge 2 ] || usage
		datanodes=$2
		shift 2
		;;
	--datanode-control)
		datanode_control=1
		shift
		;;
	--kerberos)
		kerberos=1
		shift
		;;
	--protection)
		[ $# -ge 2 ] || usage
		protection=$2
		shift 2
		;;
	--cipher-suites)
		[ $# -ge 2 ] || usage
		cipher_suites=$2
		shift 2
		;;
	*) usage ;;
	esac
done
[[ $port =~ ^[0-9]+$ ]] && [ "$port" -ge 1 ] && [ "$port" -le 65535 ] || die "PORT $port: want 1..65535"
[[ $datanodes =~ ^[0-9]+$ ]] && [ "$datanodes" -ge 1 ] || die "--datanodes $datanodes: want a number >= 1"
case $protection in
authentication | integrity | privacy) ;;
*) die "--protection $protection: want authentication, integrity or privacy" ;;
esac

hadoop_version=${TRIBUTARY_HDFS_HADOOP_VERSION:-3.3.6}
heap=${TRIBUTARY_HDFS_HEAP:-512m}
log_level=${TRIBUTARY_HDFS_LOG_LEVEL:-WARN}
timeout=${TRIBUTARY_HDFS_START_TIMEOUT:-120}
cache=${TRIBUTARY_HDFS_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/tributary-hdfs}

pick_java "Hadoop $hadoop_version's MiniDFSCluster"
javac=$(dirname "$java")/javac
[ -x "$javac" ] || die "$javac missing: a JDK, not only a JRE, is needed (make deps installs openjdk-17-jdk-headless)"

mkdir -p "$cache"
lib_hash=$( { cat "$here/pom.xml"; echo "$hadoop_version"; } | sha256sum | cut -c1-12)
lib=$cache/lib-$lib_hash
if [ ! -f "$lib/.complete" ]; then
	command -v mvn >/dev/null || die "mvn missing: run \`make deps\` (installs the Debian package maven)"
	echo "hdfs start.sh: fetching Hadoop $hadoop_version's MiniDFSCluster jars with Maven into $lib" >&2
	tmp=$(mktemp -d "$cache/.lib.XXXXXX")
	mvn_log=$tmp.log
	if ! JAVA_HOME=$java_home mvn -B -q -Dstyle.color=never -f "$here/pom.xml" \
		-Dhadoop.version="$hadoop_version" dependency:copy-dependencies \
		-DincludeScope=runtime -DoutputDirectory="$tmp" >"$mvn_log" 2>&1; then
		cat "$mvn_log" >&2
		rm -rf "$tmp" "$mvn_log"
		die "Maven could not fetch the jars of $here/pom.xml (see above)"
	fi
	rm -f "$mvn_log"
	publish "$tmp" "$lib"
fi

classes_hash=$( { cat "$here/pom.xml"; echo "$hadoop_version"; find "$here/src" -type f | LC_ALL=C sort | xargs cat; } | sha256sum | cut -c1-12)
classes=$cache/classes-$classes_hash
if [ ! -f "$classes/.complete" ]; then
	echo "hdfs start.sh: compiling TestHdfs into $classes" >&2
	tmp=$(mktemp -d "$cache/.classes.XXXXXX")
	mapfile -t sources < <(find "$here/src/main/java" -name '*.java' | LC_ALL=C sort)
	# -XDignore.symbol.file: sun.misc.Signal is supported (jdk.unsupported)
	# but javac warns about it without this.
	if ! "$javac" -nowarn -XDignore.symbol.file --release 11 -encoding UTF-8 \
		-cp "$lib/*" -d "$tmp" "${sources[@]}" >"$tmp.log" 2>&1; then
		cat "$tmp.log" >&2
		rm -rf "$tmp" "$tmp.log"
		die "javac failed (see above)"
	fi
	rm -f "$tmp.log"
	cp -r "$here/src/main/resources/." "$tmp/"
	publish "$tmp" "$classes"
fi

mkdir -p "$datadir"
pidfile=$datadir/minihdfs.pid
ready=$datadir/minihdfs.ready
log=$datadir/minihdfs.log
refuse_busy "$pidfile" "$datadir" "$port" cluster
rm -rf "$datadir/dfs" "$datadir/tmp" "$ready" "$ready.tmp" "$pidfile" "$datadir/datanode.control" "$datadir/datanode.control.state" \
	"$datadir/cluster.env" "$datadir/krb5.conf" "$datadir/keytabs" "$datadir/kdc" "$datadir/ssl" "$datadir/conf"
mkdir -p "$datadir/tmp"
classpath=$classes:$lib/*
secure_args=()
control_args=()
if [ -n "$datanode_control" ]; then
	control_args=("-Dtributary.hdfs.datanode.control=$datadir/datanode.control")
fi
if [ -n "$kerberos" ]; then
	# Hadoop loads ssl-server.xml and ssl-client.xml from the classpath; the
	# JVM writes them into DATADIR/conf, which must exist when it starts.
	mkdir -p "$datadir/conf"
	classpath=$classes:$datadir/conf:$lib/*
	secure_args=(--kerberos "$datadir" "$protection" "$cipher_suites")
fi

# The JVM's own stdout too goes to the log: were it our stdout, a caller
# reading the PID with $(start.sh ...) would wait for the JVM to exit.
"$java" "-Xmx$heap" -XX:+UseSerialGC -Djava.net.preferIPv4Stack=true \
	"-Djava.io.tmpdir=$datadir/tmp" \
	"-Dlog4j.configuration=file:$classes/log4j.properties" \
	"-Dtributary.hdfs.log.level=$log_level" "${control_args[@]}" \
	-cp "$classpath" "$main_class" "$port" "$datanodes" "$datadir/dfs" "$ready" "${secure_args[@]}" \
	</dev/null >"$log" 2>&1 &
pid=$!
echo "$pid" >"$pidfile"

began=$SECONDS
until [ -s "$ready" ]; do
	if ! alive "$pid"; then
		tail -n 60 "$log" >&2
		rm -f "$pidfile"
		die "the cluster exited before it served on 127.0.0.1:$port (log: $log)"
	fi
	if [ $((SECONDS - began)) -ge "$timeout" ]; then
		tail -n 60 "$log" >&2
		kill -KILL "$pid" 2>/dev/null || true
		wait "$pid" 2>/dev/null || true
		rm -f "$pidfile"
		die "the cluster did not serve on 127.0.0.1:$port within ${timeout}s (TRIBUTARY_HDFS_START_TIMEOUT; log: $log)"
	fi
	sleep 0.2
done
echo "hdfs start.sh: $(cat "$ready") up in $((SECONDS - began))s, pid $pid, log $log" >&2
echo "$pid"
