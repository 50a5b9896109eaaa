# jvm.sh: what the test servers' scripts (hdfs/, hive-metastore/) share:
# finding Java, publishing a cache directory, telling whether a server's JVM
# is alive and ours, and stopping it. Sourced, not run; the sourcing script
# defines die MESSAGE (prints its own name and MESSAGE, exits 1).

# alive PID: the process exists and is not a zombie. `kill -0` is not enough:
# where nothing reaps orphans an exited JVM stays a zombie, and kill -0
# succeeds on zombies.
alive() {
	local stat
	stat=$(ps -o stat= -p "$1" 2>/dev/null) || return 1
	[[ -n $stat && $stat != Z* ]]
}

# find_java prints the java to use. Not the first on PATH: these machines
# also carry a newer JDK that Hadoop 3.3 cannot run on.
find_java() {
	local candidate
	if [ -n "${TRIBUTARY_JAVA:-}" ]; then
		echo "$TRIBUTARY_JAVA"
		return
	fi
	for candidate in /usr/lib/jvm/java-17-openjdk-*/bin/java /usr/lib/jvm/*-17-*/bin/java; do
		if [ -x "$candidate" ]; then
			echo "$candidate"
			return
		fi
	done
	command -v java || die "no java found: install OpenJDK 17 (make deps) or set TRIBUTARY_JAVA"
}

# pick_java WHO: sets java and java_home to a Java of 11..22 (Hadoop 3.3
# calls Subject.getSubject, which Java 23 and later no longer support); WHO
# names what needs it in the refusal.
pick_java() {
	local java_major
	java=$(find_java)
	[ -x "$java" ] || die "java $java is not executable (TRIBUTARY_JAVA)"
	java_major=$("$java" -version 2>&1 | sed -n 's/^.*version "\([0-9]*\)[."].*$/\1/p' | head -n 1)
	[ -n "$java_major" ] || die "cannot tell the version of $java"
	if [ "$java_major" -lt 11 ] || [ "$java_major" -gt 22 ]; then
		die "$java is Java $java_major; $1 needs Java 11..22 (17 is tested; set TRIBUTARY_JAVA)"
	fi
	java_home=$(dirname "$(dirname "$java")")
}

# publish TMP DEST: makes the finished directory TMP visible as DEST in one
# rename. Two starts racing on a cold cache both build; the loser drops its copy.
publish() {
	touch "$1/.complete"
	if ! mv -T "$1" "$2" 2>/dev/null; then
		rm -rf "$1"
	fi
	[ -f "$2/.complete" ] || die "could not populate $2"
}

# refuse_busy PIDFILE DATADIR PORT WHAT: dies if DATADIR's server (WHAT)
# still runs or 127.0.0.1:PORT is taken.
refuse_busy() {
	local old
	if [ -f "$1" ]; then
		old=$(cat "$1")
		if [[ $old =~ ^[0-9]+$ ]] && alive "$old" && tr '\0' ' ' <"/proc/$old/cmdline" 2>/dev/null | grep -qF -- "$2/"; then
			die "$2 is in use by the running $4 $old (stop.sh $2)"
		fi
	fi
	if timeout 2 bash -c "exec 3<>/dev/tcp/127.0.0.1/$3" 2>/dev/null; then
		die "port 127.0.0.1:$3 is already in use"
	fi
}

# ours PID DATADIR: the process is the server of DATADIR, not a reused pid:
# a JVM whose java.io.tmpdir is DATADIR/tmp (start.sh sets it).
ours() {
	local cmdline
	cmdline=$(tr '\0' ' ' <"/proc/$1/cmdline" 2>/dev/null) || return 1
	[[ $cmdline == *"-Djava.io.tmpdir=$2/tmp "* ]]
}

# wait_gone PID SECONDS: 0 once the process is gone, 1 if it outlived SECONDS.
wait_gone() {
	local deadline=$((SECONDS + $2))
	while alive "$1"; do
		[ "$SECONDS" -lt "$deadline" ] || return 1
		sleep 0.1
	done
}

# stop_pidfile PIDFILE DATADIR: stops the server of DATADIR whose pid
# PIDFILE holds, if it runs: SIGTERM, SIGKILL if it is still running after
# 30 s; returns once it is gone. A pid that is not DATADIR's is left alone.
stop_pidfile() {
	local pid
	[ -f "$1" ] || return 0
	pid=$(cat "$1")
	[[ $pid =~ ^[0-9]+$ ]] || die "$1 holds no pid"
	if alive "$pid" && ours "$pid" "$2"; then
		kill -TERM "$pid" 2>/dev/null || true
		if ! wait_gone "$pid" 30; then
			echo "$me: pid $pid still running 30s after SIGTERM: SIGKILL" >&2
			kill -KILL "$pid" 2>/dev/null || true
			wait_gone "$pid" 30 || die "pid $pid survived SIGKILL for 30s"
		fi
	fi
}
