#!/bin/bash
# Where a peer's RSS goes at scale: RSS, anonymous RSS, and the V8 heap committed ("total") and
# in use ("used", from the peer's /metrics, no collection forced), right after N registrations
# and again after 20 s idle. Outside CI; 127.0.0.1 only; every load bounded (loader maxMs).
#   bench/rss-vs-heap.sh one N    one peer, N registrations (1,000 services, five metadata keys)
#   bench/rss-vs-heap.sh two N    two peers, N registrations on the first only, both measured
# NODE_FLAGS overrides the peers' Node flags (default: PEER_NODE_FLAGS, src/node-flags.ts);
# LOG_DIR keeps the peers' logs (with NODE_FLAGS="--max-semi-space-size=8 --trace-gc-verbose": each
# collection's heap spaces). CLUSTER_EXTRA adds fields to the config's "cluster" section, e.g. '"antiEntropyIntervalMs":600000'.
# Needs `npm run build`. Run from the repository root.
set -euo pipefail
MODE=${1:?one or two}; N=${2:?instances}
FLAGS=${NODE_FLAGS:-$(node --input-type=module -e "import('./dist/node-flags.js').then((m) => console.log(m.PEER_NODE_FLAGS.join(' ')))")}
echo "peers' Node flags: $FLAGS"
WORK=$(mktemp -d)
BASE=$((20000 + RANDOM % 5000))
PEERS=1; [ "$MODE" = two ] && PEERS=2
PIDS=()
cleanup() {
  for pid in "${PIDS[@]}"; do kill "$pid" 2>/dev/null || true; done
  if [ -n "${LOG_DIR:-}" ]; then mkdir -p "$LOG_DIR" && cp "$WORK"/p*.log "$LOG_DIR"/; fi
  rm -rf "$WORK"
}
trap cleanup EXIT
members=""
for i in $(seq 1 $PEERS); do
  members="$members${members:+,}{\"id\":\"p$i\",\"url\":\"http://127.0.0.1:$((BASE + i))\",\"region\":\"local\",\"zone\":\"a\"}"
done
cat > "$WORK/cluster.json" <<J
{"cluster":{"name":"rss","profile":"lan"${CLUSTER_EXTRA:+,$CLUSTER_EXTRA}},"peers":[$members],"limits":{"rateLimitPerSecond":0,"instancesPerServiceMax":10000000,"instancesPerNamespaceMax":100000000}}
J
for i in $(seq 1 $PEERS); do
  # shellcheck disable=SC2086
  node $FLAGS dist/main.js --config "$WORK/cluster.json" --id "p$i" --log-level warn > "$WORK/p$i.log" 2>&1 &
  PIDS+=($!)
done
for i in $(seq 1 $PEERS); do
  for _ in $(seq 1 150); do curl -sf "http://127.0.0.1:$((BASE + i))/readyz" > /dev/null && break; sleep 0.2; done
done
report() {
  for i in $(seq 1 $PEERS); do
    local pid=${PIDS[$((i - 1))]} port=$((BASE + i))
    local rss anon metrics total used
    rss=$(awk '/VmRSS/ {print $2}' "/proc/$pid/status"); anon=$(awk '/RssAnon/ {print $2}' "/proc/$pid/status")
    metrics=$(curl -s "http://127.0.0.1:$port/metrics")
    total=$(awk '/^nodejs_heap_size_total_bytes/ {print $2}' <<< "$metrics")
    used=$(awk '/^nodejs_heap_size_used_bytes/ {print $2}' <<< "$metrics")
    echo "$1 p$i: RSS $((rss / 1024)) MB, anonymous $((anon / 1024)) MB, V8 heap committed $((total / 1048576)) MB, in use $((used / 1048576)) MB"
    if [ "$PEERS" -gt 1 ]; then
      echo "  anti-entropy: $(grep -E '^registry_anti_entropy_(rounds_total|rounds_in_sync_total|repaired_keys_total)' <<< "$metrics" | tr '\n' ' ')"
    fi
  done
}
report "idle"
started=$(date +%s)
HALF=$((N / 2)); LOADERS=()
for range in "0 $HALF" "$HALF $N"; do
  set -- $range
  node --import tsx bench/scale-loader.ts "{\"mode\":\"register\",\"urls\":[\"http://127.0.0.1:$((BASE + 1))\"],\"from\":$1,\"to\":$2,\"services\":1000,\"inFlight\":64,\"maxMs\":600000}" > "$WORK/loader-$1.json" &
  LOADERS+=($!)
done
wait "${LOADERS[@]}"
echo "registered: $(cat "$WORK"/loader-*.json | tr '\n' ' ' | grep -o '"done":[0-9]*' | tr '\n' ' ') in $(( $(date +%s) - started )) s; p99 per loader: $(cat "$WORK"/loader-*.json | grep -o '"p99Ms":[0-9.]*' | tr '\n' ' ')"
sleep 5
report "after $N (5 s)"
sleep 20
report "after 20 s idle"
