#!/usr/bin/env bash
# Installs the programs the integration tests drive. Idempotent: a second run
# on a machine that has them does nothing but check.
set -euo pipefail

need=()
command -v kcat >/dev/null 2>&1 || need+=(kcat)
[ -f /usr/share/java/zookeeper.jar ] || need+=(zookeeper)
command -v nc >/dev/null 2>&1 || need+=(netcat-openbsd)

if [ ${#need[@]} -gt 0 ]; then
	if [ "$(id -u)" != 0 ]; then
		echo "install-deps: need root to apt-get install ${need[*]}" >&2
		exit 1
	fi
	echo "install-deps: installing ${need[*]}"
	export DEBIAN_FRONTEND=noninteractive
	apt-get update -qq
	apt-get install -y -qq "${need[@]}" >/dev/null
fi
go mod download
