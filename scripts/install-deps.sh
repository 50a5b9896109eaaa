#!/usr/bin/env bash
# Installs the third-party programs the integration tests drive (kcat,
# ZooKeeper, netcat-openbsd for ZooKeeper's four-letter words, Chromium for
# the dashboard test, Burrow and Maven for the Kafka-tools compatibility
# tests), the independent Avro/Parquet readers (a Python virtualenv with
# fastavro, pyarrow, confluent-kafka, PySpark 3.5.9, DuckDB and pyiceberg in
# .cache/venv; PySpark 4.1.1 in .cache/venv-spark4), Apache Iceberg's Spark
# runtime and SQLite's JDBC driver (.cache/iceberg), the test
# Hive Metastore's jars (testing/hive-metastore), Apache Kafka 2.8.2's command-line
# tools (jars from Maven Central in .cache/kafka-2.8/lib), Apache Kafka 3.9's
# broker and tools (.cache/kafka/lib, through scripts/kafka.sh fetch) and the
# Go modules.
# The test HDFS (testing/hdfs) needs Maven and a JDK 17 (javac, not only the
# JRE); it fetches its jars from Maven Central on its first start. Idempotent
# and quiet: on a machine that has everything it only checks, and apt-get runs
# (update + install) only for what is missing.
#
# The checks ask dpkg, not PATH: another netcat (netcat-traditional, busybox)
# may provide `nc` but lacks the flags the scripts rely on.
set -euo pipefail
cd "$(dirname "$0")/.."

installed() {
	[ "$(dpkg-query -W -f='${Status}' "$1" 2>/dev/null)" = "install ok installed" ]
}

need=()
for pkg in kcat zookeeper netcat-openbsd chromium burrow maven openjdk-17-jdk-headless; do
	installed "$pkg" || need+=("$pkg")
done

if [ ${#need[@]} -gt 0 ]; then
	if [ "$(id -u)" != 0 ]; then
		echo "install-deps: need root to apt-get install ${need[*]} (or install them yourself)" >&2
		exit 1
	fi
	echo "install-deps: installing ${need[*]}"
	export DEBIAN_FRONTEND=noninteractive
	# Another apt run on the same machine holds the dpkg lock for a while;
	# wait for it rather than fail.
	apt_opts=(-o DPkg::Lock::Timeout=300 -o Acquire::Retries=3)
	apt_log=$(mktemp)
	trap 'rm -f "$apt_log"' EXIT
	if ! { apt-get "${apt_opts[@]}" update -qq &&
		apt-get "${apt_opts[@]}" install -y -qq --no-install-recommends "${need[@]}"; } >"$apt_log" 2>&1; then
		cat "$apt_log" >&2
		echo "install-deps: apt-get failed installing ${need[*]}" >&2
		exit 1
	fi
	for pkg in "${need[@]}"; do
		installed "$pkg" || { echo "install-deps: $pkg still missing after apt-get" >&2; exit 1; }
	done
fi

# make_venv DIR CHECK PKG...: unless DIR's python runs CHECK, makes the
# virtualenv DIR (if missing) and pip-installs PKG... into it.
make_venv() {
	local dir=$1 check=$2 pip_log
	shift 2
	"$dir/bin/python3" -c "$check" 2>/dev/null && return 0
	echo "install-deps: making $dir with $*"
	if [ ! -x "$dir/bin/pip" ]; then
		rm -rf "$dir"
		python3 -m venv "$dir"
	fi
	pip_log=$(mktemp)
	if ! "$dir/bin/pip" install -q --disable-pip-version-check "$@" >"$pip_log" 2>&1; then
		cat "$pip_log" >&2
		rm -f "$pip_log"
		echo "install-deps: pip install $* failed" >&2
		exit 1
	fi
	rm -f "$pip_log"
}

# The readers tests use to check what we write: someone else's code, not ours.
# PySpark 3.5 (Spark SQL with Hive support: the newest whose built-in Hive
# client speaks to the test metastore's 3.1) and DuckDB read the tables;
# pyiceberg (with its SQL and Hive catalogs, and its Rust core for
# partition transforms when it writes) and Spark's Iceberg runtime
# (below) read the Iceberg tables (internal/testkit/icereader).
make_venv .cache/venv 'import fastavro, pyarrow, duckdb; from confluent_kafka.schema_registry import SchemaRegistryClient; import pyspark; assert pyspark.__version__ == "3.5.9"; import pyiceberg, pyiceberg_core, sqlalchemy, thrift; assert pyiceberg.__version__ == "0.12.0"' \
	fastavro pyarrow 'confluent-kafka[schemaregistry]' pyspark==3.5.9 duckdb 'pyiceberg[sql-sqlite,hive,pyarrow,pyiceberg-core]==0.12.0'
# PySpark 4.1.1 in a virtualenv of its own (one Python holds one PySpark):
# the type-matrix test reads the tables with Spark 3.5 and 4.1, whose
# built-in Hive 2.3 client speaks to the test metastore's 3.1 too.
make_venv .cache/venv-spark4 'import pyspark; assert pyspark.__version__ == "4.1.1"' pyspark==4.1.1

# Apache Kafka 2.8.2's tools (TopicCommand, ConfigCommand, DumpLogSegments)
# for broker/kafkacompat: fetched again only when their pom changes. Into
# a temp dir first, so that an interrupted fetch never looks complete.
kafka28_pom=scripts/kafka-2.8/pom.xml
kafka28_lib=.cache/kafka-2.8/lib
kafka28_sum=$(sha256sum "$kafka28_pom" | cut -d' ' -f1)
if [ ! -f "$kafka28_lib/.pom.sha256" ] || [ "$(cat "$kafka28_lib/.pom.sha256")" != "$kafka28_sum" ]; then
	echo "install-deps: fetching Apache Kafka 2.8.2's tools with Maven into $kafka28_lib"
	java=$(bash scripts/zk.sh java)
	mkdir -p .cache/kafka-2.8
	tmp=$(mktemp -d .cache/kafka-2.8/lib.XXXXXX)
	mvn_log=$(mktemp)
	if ! JAVA_HOME=$(dirname "$(dirname "$java")") mvn -B -q -Dstyle.color=never -f "$kafka28_pom" \
		dependency:copy-dependencies -DincludeScope=runtime -DoutputDirectory="$PWD/$tmp" >"$mvn_log" 2>&1; then
		cat "$mvn_log" >&2
		rm -rf "$tmp" "$mvn_log"
		echo "install-deps: Maven could not fetch org.apache.kafka:kafka_2.13:2.8.2 (see above)" >&2
		exit 1
	fi
	rm -f "$mvn_log"
	echo "$kafka28_sum" >"$tmp/.pom.sha256"
	rm -rf "$kafka28_lib"
	mv "$tmp" "$kafka28_lib"
fi

# fetch_jar GROUP:ARTIFACT:VERSION DIR: unless DIR holds ARTIFACT-VERSION.jar,
# copies that one jar (no dependencies) from Maven Central into DIR, through
# a temp dir so that an interrupted fetch never looks complete.
fetch_jar() {
	local coords=$1 dir=$2 jar tmp mvn_log java
	jar=$(echo "$coords" | cut -d: -f2)-$(echo "$coords" | cut -d: -f3).jar
	[ -s "$dir/$jar" ] && return 0
	echo "install-deps: fetching $coords with Maven into $dir"
	java=$(bash scripts/zk.sh java)
	mkdir -p "$dir"
	tmp=$(mktemp -d "$dir/fetch.XXXXXX")
	mvn_log=$(mktemp)
	if ! JAVA_HOME=$(dirname "$(dirname "$java")") mvn -B -q -Dstyle.color=never \
		dependency:copy -Dartifact="$coords" -Dtransitive=false -DoutputDirectory="$PWD/$tmp" \
		>"$mvn_log" 2>&1 || [ ! -s "$tmp/$jar" ]; then
		cat "$mvn_log" >&2
		rm -rf "$tmp" "$mvn_log"
		echo "install-deps: Maven could not fetch $coords (see above)" >&2
		exit 1
	fi
	rm -f "$mvn_log"
	mv "$tmp/$jar" "$dir/$jar"
	rm -rf "$tmp"
}

# The Iceberg readers of internal/testkit/icereader (its jar names must match
# these): Apache Iceberg's Spark 3.5 runtime (one shaded jar) and SQLite's
# JDBC driver, for Spark's JDBC catalog on the SQLite file of a SQL catalog.
fetch_jar org.apache.iceberg:iceberg-spark-runtime-3.5_2.12:1.10.0 .cache/iceberg
fetch_jar org.xerial:sqlite-jdbc:3.50.3.0 .cache/iceberg

# Apache Kafka 3.9's tools (TopicCommand, LeaderElectionCommand,
# DeleteRecordsCommand, LogDirsCommand, ...) for broker/kafkacompat and
# broker tests, and its broker for the benchmarks: kafka.sh fetch keys the
# jars on scripts/kafka/pom.xml's hash in the same way.
if ! fetch_log=$(bash scripts/kafka.sh fetch 2>&1); then
	echo "$fetch_log" >&2
	echo "install-deps: fetching Apache Kafka 3.9's jars failed (see above)" >&2
	exit 1
fi

# The test Hive Metastore's jars and Derby schema scripts
# (testing/hive-metastore, cached under .cache/hive-metastore by a hash of
# its pom): fetched now so that `make test` starts it offline.
if ! fetch_log=$(bash testing/hive-metastore/start.sh --fetch 2>&1); then
	echo "$fetch_log" >&2
	echo "install-deps: fetching the test Hive Metastore's jars failed (see above)" >&2
	exit 1
fi

go mod download
