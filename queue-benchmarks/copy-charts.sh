#!/bin/sh
# Copies the charts of the last benchmark run (queue-benchmarks/target/charts/*.png) into
# docs/images/ as benchmark-<chart>.png, where the performance guide embeds them. The guide shows
# the full run's charts: the script says so when the last run was a quick one, and copies only
# with --quick-too then.
set -eu
root=$(cd "$(dirname "$0")/.." && pwd)
from="$root/queue-benchmarks/target/charts"
to="$root/docs/images"
if ! ls "$from"/*.png >/dev/null 2>&1; then
	echo "No charts in $from: run the benchmark first" >&2
	exit 1
fi
if grep -q "(quick run)" "$root/queue-benchmarks/target/bench-results.md" 2>/dev/null \
		&& [ "${1:-}" != "--quick-too" ]; then
	echo "The last run was a quick one; the guide shows the full run's charts (--quick-too copies them anyway)" >&2
	exit 1
fi
mkdir -p "$to"
for chart in "$from"/*.png; do
	cp "$chart" "$to/benchmark-$(basename "$chart")"
	echo "docs/images/benchmark-$(basename "$chart")"
done
