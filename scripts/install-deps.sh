#!/usr/bin/env bash
# Installs the third-party programs the integration tests drive (kcat,
# ZooKeeper, netcat-openbsd for ZooKeeper's four-letter words) and the Go
# modules. Idempotent and quiet: on a machine that has everything it only
# checks, and apt-get runs (update + install) only for what is missing.
#
# The checks ask dpkg, not PATH: another netcat (netcat-traditional, busybox)
# may provide `nc` but lacks the flags the scripts rely on.
set -euo pipefail
cd "$(dirname "$0")/.."

installed() {
	[ "$(dpkg-query -W -f='${Status}' "$1" 2>/dev/null)" = "install ok installed" ]
}

need=()
for pkg in kcat zookeeper netcat-openbsd; do
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

go mod download
