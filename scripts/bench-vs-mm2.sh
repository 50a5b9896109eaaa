#!/usr/bin/env bash
# bench-vs-mm2.sh: Apache Kafka's MirrorMaker 2 (dedicated mode) and
# `tributary mirror` mirroring the same records between the same two Apache
# Kafka brokers (source and target, KRaft, scripts/kafka.sh), each system run
# MM2_RUNS times, interleaved (the order alternates), directly and over a
# link with added latency between the source broker and the mirror
# (`tributary link` in front of a second source listener, for both systems;
# the target stays local). Every run mirrors the whole topic afresh: each
# has its own source alias, so its own target topic (<alias>.bench: MM2's
# naming, and topic.rename=${source}.${topic} for ours), consumer group and
# MirrorMaker 2 internal topics.
#
# Per run, sampling the target's end offsets every ~0.1 s: the time from the
# mirror's start to the first mirrored record, the steady-state records/s
# between 10% and 90% of the records landed (start-up excluded), and the
# mirror process's CPU-seconds (user+system, /proc) per million records,
# over the whole run and over the 10%-90% window. One table of medians and
# ratios (tributary / MirrorMaker 2), and per system the link row's share of
# its direct steady-state throughput.
#
# Environment:
#   MM2_RECORDS      records produced once to the source (default 2000000)
#   MM2_RECORD_SIZE  bytes per record (default 100)
#   MM2_PARTITIONS   partitions of the topic (default 12)
#   MM2_TASKS        MirrorMaker 2 tasks.max (default 2, one per core)
#   MM2_RUNS         runs of each system per row (default 3)
#   MM2_LINK_LATENCY added one-way delay of the link row, each direction
#                    (default 20ms: a 40 ms round trip); 0 drops the row
#   MM2_DIR          work dir: brokers' data, configs, logs, samples (default:
#                    a temp dir, removed afterwards unless MM2_KEEP=1)
# Ports: source 127.0.0.1:19292 (+19293; its LINK listener 19295 behind the
# link on 19296), target 127.0.0.1:19392 (+19393), each plus
# TRIBUTARY_TEST_PORT_OFFSET. The MirrorMaker 2 jars
# (org.apache.kafka:connect-mirror, same version as the broker) are fetched
# with Maven into .cache/mm2/lib once.
set -euo pipefail

here=$(cd "$(dirname "$0")" && pwd)
repo=$(cd "$here/.." && pwd)
cd "$repo"

records=${MM2_RECORDS:-2000000}
size=${MM2_RECORD_SIZE:-100}
partitions=${MM2_PARTITIONS:-12}
tasks=${MM2_TASKS:-2}
runs=${MM2_RUNS:-3}
latency=${MM2_LINK_LATENCY:-20ms}
offset=${TRIBUTARY_TEST_PORT_OFFSET:-0}
src_offset=$((offset + 200))
dst_offset=$((offset + 300))
src=127.0.0.1:$((19092 + src_offset))
dst=127.0.0.1:$((19092 + dst_offset))
link_listener_port=$((19095 + src_offset))
link=127.0.0.1:$((19096 + src_offset))
kafka_version=$(sed -n 's:.*<kafka.version>\(.*\)</kafka.version>.*:\1:p' "$here/kafka/pom.xml")
lib=$repo/.cache/mm2/lib
tributary=$repo/bin/tributary
clk=$(getconf CLK_TCK)

die() {
	echo "bench-vs-mm2: $*" >&2
	exit 1
}
say() { echo "bench-vs-mm2: $*" >&2; }

[ -x "$tributary" ] || die "$tributary missing: run make build"
command -v kcat >/dev/null || die "kcat not found: run \`make deps\`"
java=$(bash "$here/zk.sh" java)

work=${MM2_DIR:-$(mktemp -d)}
mkdir -p "$work"
cleanup() {
	[ -n "${mirror_pid:-}" ] && kill -KILL "$mirror_pid" 2>/dev/null || true
	[ -n "${link_pid:-}" ] && kill -TERM "$link_pid" 2>/dev/null || true
	TRIBUTARY_KAFKA_DIR=$work/source TRIBUTARY_TEST_PORT_OFFSET=$src_offset bash "$here/kafka.sh" stop || true
	TRIBUTARY_KAFKA_DIR=$work/target TRIBUTARY_TEST_PORT_OFFSET=$dst_offset bash "$here/kafka.sh" stop || true
	if [ -z "${MM2_DIR:-}" ] && [ "${MM2_KEEP:-}" != 1 ]; then rm -rf "$work"; fi
}
trap cleanup EXIT

# fetch_mm2 copies connect-mirror and its dependencies into $lib once.
fetch_mm2() {
	if [ -f "$lib/.version" ] && [ "$(cat "$lib/.version")" = "$kafka_version" ]; then
		return
	fi
	command -v mvn >/dev/null || die "mvn not found: install Maven (Debian package maven)"
	mkdir -p "$repo/.cache/mm2"
	local tmp
	tmp=$(mktemp -d "$repo/.cache/mm2/lib.XXXXXX")
	cat >"$tmp/pom.xml" <<POM
<project xmlns="http://maven.apache.org/POM/4.0.0">
  <modelVersion>4.0.0</modelVersion>
  <groupId>io.tributary.bench</groupId>
  <artifactId>mirrormaker2</artifactId>
  <version>1</version>
  <packaging>pom</packaging>
  <dependencies>
    <dependency><groupId>org.apache.kafka</groupId><artifactId>connect-mirror</artifactId><version>$kafka_version</version></dependency>
    <dependency><groupId>org.apache.kafka</groupId><artifactId>kafka-tools</artifactId><version>$kafka_version</version></dependency>
    <dependency><groupId>org.slf4j</groupId><artifactId>slf4j-reload4j</artifactId><version>1.7.36</version></dependency>
  </dependencies>
</project>
POM
	say "fetching MirrorMaker 2 $kafka_version (connect-mirror) with Maven into $lib"
	if ! JAVA_HOME=$(dirname "$(dirname "$java")") mvn -B -q -Dstyle.color=never -f "$tmp/pom.xml" \
		dependency:copy-dependencies -DincludeScope=runtime -DoutputDirectory="$tmp/lib" >&2; then
		rm -rf "$tmp"
		die "Maven could not fetch connect-mirror (see above)"
	fi
	echo "$kafka_version" >"$tmp/lib/.version"
	rm -rf "$lib"
	mv "$tmp/lib" "$lib"
	rm -rf "$tmp"
}

# end_total prints the sum of a topic's end offsets on a broker (0 when the
# topic does not exist yet).
end_total() {
	local broker=$1 topic=$2 args=() p
	for ((p = 0; p < partitions; p++)); do args+=(-t "$topic:$p:-1"); done
	{ kcat -Q -b "$broker" "${args[@]}" 2>/dev/null || true; } |
		awk '/offset/ { for (i = 1; i < NF; i++) if ($i == "offset") s += $(i + 1) } END { print s + 0 }'
}

# cpu_seconds prints a process's user+system CPU time.
cpu_seconds() {
	awk -v clk="$clk" '{ printf "%.2f", ($14 + $15) / clk }' "/proc/$1/stat"
}

# sample PID TOPIC START OUT: every ~0.1 s until the target's TOPIC holds
# every record, appends "<seconds since START> <records> <cpu-seconds>" to
# OUT.
sample() {
	local pid=$1 topic=$2 start=$3 out=$4 n cpu now
	local deadline=$((SECONDS + 1800))
	: >"$out"
	while :; do
		[ -r "/proc/$pid/stat" ] || die "mirror (pid $pid) exited before the target held every record; see $work"
		cpu=$(cpu_seconds "$pid")
		n=$(end_total "$dst" "$topic")
		now=$(date +%s.%N)
		echo "$(awk -v a="$now" -v b="$start" 'BEGIN { print a - b }') $n $cpu" >>"$out"
		[ "$n" -lt "$records" ] || return 0
		[ $SECONDS -lt $deadline ] || die "target $topic incomplete after 30 minutes"
		sleep 0.1
	done
}

# summarize OUT: "<first-record s> <steady records/s> <CPU s/M records>
# <steady CPU s/M records>" from a sample file; the crossings of 10% and
# 90% are interpolated between samples.
summarize() {
	awk -v n="$records" '
	function cross(frac,   target, i) {
		target = frac * n
		for (i = 1; i <= k; i++) if (c[i] >= target) break
		if (i == 1 || c[i] == c[i - 1]) { xt = t[i]; xu = u[i]; return }
		xt = t[i - 1] + (t[i] - t[i - 1]) * (target - c[i - 1]) / (c[i] - c[i - 1])
		xu = u[i - 1] + (u[i] - u[i - 1]) * (target - c[i - 1]) / (c[i] - c[i - 1])
	}
	{ k++; t[k] = $1; c[k] = $2; u[k] = $3; if (first == "" && $2 > 0) first = $1 }
	END {
		cross(0.1); t10 = xt; u10 = xu
		cross(0.9); t90 = xt; u90 = xu
		dt = t90 - t10; if (dt <= 0) dt = 0.05
		printf "%.2f %.0f %.2f %.2f\n", first, 0.8 * n / dt, u[k] / n * 1e6, (u90 - u10) / (0.8 * n) * 1e6
	}' "$1"
}

# run_mm2 ALIAS BOOTSTRAP: one MirrorMaker 2 run, source->target as ALIAS,
# sampled into $work/ALIAS.samples.
run_mm2() {
	local alias=$1 bootstrap=$2
	cat >"$work/$alias-mm2.properties" <<PROPS
clusters = $alias, target
$alias.bootstrap.servers = $bootstrap
target.bootstrap.servers = $dst
$alias->target.enabled = true
$alias->target.topics = bench
target->$alias.enabled = false
tasks.max = $tasks
replication.factor = 1
checkpoints.topic.replication.factor = 1
heartbeats.topic.replication.factor = 1
offset-syncs.topic.replication.factor = 1
offset.storage.replication.factor = 1
status.storage.replication.factor = 1
config.storage.replication.factor = 1
sync.topic.acls.enabled = false
PROPS
	cat >"$work/$alias-mm2-log4j.properties" <<PROPS
log4j.rootLogger=INFO, FILE
log4j.appender.FILE=org.apache.log4j.FileAppender
log4j.appender.FILE.File=$work/$alias-mm2.log
log4j.appender.FILE.layout=org.apache.log4j.PatternLayout
log4j.appender.FILE.layout.ConversionPattern=[%d] %p %m (%c)%n
PROPS
	local start
	start=$(date +%s.%N)
	"$java" -Xmx1g -Xms1g -server -XX:+UseG1GC -Dlog4j.configuration="file:$work/$alias-mm2-log4j.properties" \
		-cp "$lib/*" org.apache.kafka.connect.mirror.MirrorMaker "$work/$alias-mm2.properties" >"$work/$alias-mm2.out" 2>&1 &
	mirror_pid=$!
	sample "$mirror_pid" "$alias.bench" "$start" "$work/$alias.samples"
	stop_mirror
	drop_topic "$alias.bench"
}

# run_trib ALIAS BOOTSTRAP: one `tributary mirror` run with source ALIAS,
# sampled into $work/ALIAS.samples.
run_trib() {
	local alias=$1 bootstrap=$2
	cat >"$work/$alias-mirror.properties" <<PROPS
source.$alias.bootstrap.servers=$bootstrap
target.bootstrap.servers=$dst
topics=bench
topic.rename=\${source}.\${topic}
group.id=tributary-mirror-$alias
PROPS
	local start
	start=$(date +%s.%N)
	"$tributary" mirror --config "$work/$alias-mirror.properties" >"$work/$alias-mirror.log" 2>&1 &
	mirror_pid=$!
	sample "$mirror_pid" "$alias.bench" "$start" "$work/$alias.samples"
	stop_mirror
	drop_topic "$alias.bench"
}

stop_mirror() {
	kill -TERM "$mirror_pid" 2>/dev/null || true
	wait "$mirror_pid" 2>/dev/null || true
	mirror_pid=
}

# drop_topic deletes a mirrored copy (the target's disk holds one at a time).
drop_topic() {
	"$tributary" topics delete --bootstrap "$dst" --topic "$1" >/dev/null 2>&1 || say "could not delete $1 on the target"
}

fetch_mm2
bash "$here/kafka.sh" fetch
say "starting source ($src) and target ($dst) Apache Kafka $kafka_version brokers in $work"
KAFKA_LINK_LISTENER="$link_listener_port $link" KAFKA_HEAP_OPTS="-Xmx512m -Xms512m" TRIBUTARY_KAFKA_DIR=$work/source TRIBUTARY_TEST_PORT_OFFSET=$src_offset bash "$here/kafka.sh" start >/dev/null
KAFKA_HEAP_OPTS="-Xmx512m -Xms512m" TRIBUTARY_KAFKA_DIR=$work/target TRIBUTARY_TEST_PORT_OFFSET=$dst_offset bash "$here/kafka.sh" start >/dev/null

say "creating topic bench ($partitions partitions) and producing $records x $size B records"
"$tributary" topics create --bootstrap "$src" --topic bench --partitions "$partitions" >/dev/null
bash "$here/kafka.sh" run org.apache.kafka.tools.ProducerPerformance --topic bench \
	--num-records "$records" --record-size "$size" --throughput -1 \
	--producer-props bootstrap.servers="$src" acks=1 linger.ms=5 batch.size=65536 >"$work/produce.out" 2>&1 ||
	{ cat "$work/produce.out" >&2; die "producing failed"; }
[ "$(end_total "$src" bench)" -ge "$records" ] || die "source holds $(end_total "$src" bench) records, want $records"

rows=(direct)
if [ "$latency" != 0 ]; then
	rows+=(link)
	"$tributary" link --listen "$link" --upstream "127.0.0.1:$link_listener_port" --latency "$latency" >"$work/link.log" 2>&1 &
	link_pid=$!
	for _ in $(seq 100); do
		[ "$(end_total "$link" bench)" -ge "$records" ] && break
		sleep 0.1
	done
	[ "$(end_total "$link" bench)" -ge "$records" ] || die "the source is not reachable through the link $link; see $work/link.log"
fi

: >"$work/results"
for ((r = 1; r <= runs; r++)); do
	for row in "${rows[@]}"; do
		bootstrap=$src
		[ "$row" = direct ] || bootstrap=$link
		order=(mm2 trib)
		((r % 2 == 1)) || order=(trib mm2)
		for sys in "${order[@]}"; do
			alias=r$r$row$sys
			say "run $r/$runs, $row: $sys (load: $(cut -d' ' -f1-3 /proc/loadavg))"
			"run_$sys" "$alias" "$bootstrap"
			echo "$row $sys $(summarize "$work/$alias.samples")" | tee -a "$work/results" >&2
		done
	done
done

echo
echo "mirroring $records x $size B records over $partitions partitions, Apache Kafka $kafka_version source -> target,"
echo "medians of $runs interleaved runs each (link: +$latency each way between the source and the mirror); $(uptime)"
echo
awk -v rows="${rows[*]}" '
function median(key,   n, i, j, v, tmp) {
	n = split(vals[key], v, " ")
	for (i = 1; i <= n; i++) for (j = i + 1; j <= n; j++) if (v[j] < v[i]) { tmp = v[i]; v[i] = v[j]; v[j] = tmp }
	return n % 2 ? v[(n + 1) / 2] : (v[n / 2] + v[n / 2 + 1]) / 2
}
{ for (f = 3; f <= 6; f++) vals[$1 " " $2 " " f] = vals[$1 " " $2 " " f] " " $f }
END {
	split("first record s|steady records/s|CPU s/M records|steady CPU s/M records", names, "|")
	printf "| %-6s | %-24s | %14s | %14s | %10s |\n", "row", "metric", "MirrorMaker 2", "tributary", "trib/MM2"
	printf "|--------|--------------------------|----------------|----------------|------------|\n"
	nr = split(rows, rr, " ")
	for (i = 1; i <= nr; i++) for (f = 3; f <= 6; f++) {
		m = median(rr[i] " mm2 " f); t = median(rr[i] " trib " f)
		printf "| %-6s | %-24s | %14.2f | %14.2f | %9.2fx |\n", rr[i], names[f - 2], m, t, (m > 0 ? t / m : 0)
	}
	if (nr > 1) {
		printf "\nlink steady-state throughput / direct: MirrorMaker 2 %.2f, tributary %.2f\n",
			median("link mm2 4") / median("direct mm2 4"), median("link trib 4") / median("direct trib 4")
	}
}' "$work/results"
