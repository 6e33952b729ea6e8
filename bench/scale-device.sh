#!/usr/bin/env bash
# The capacity benchmark at 1,000,000 instances on a larger machine, in one run of at most 8
# minutes (issue 36): bench/scale.ts with the machine's cores, figures written as JSON and
# markdown to "$OUT" (scale.json, scale.md, scale.log) and a summary printed at the end.
# Needs node, this repository with node_modules and dist/ (npm run build); nothing else.
#   OUT=/some/dir bench/scale-device.sh            # INSTANCES, CORES, SERVICES, BUDGET_S override
set -euo pipefail
cd "$(dirname "$0")/.."
: "${OUT:?set OUT to the folder the figures go to}"
INSTANCES="${INSTANCES:-1000000}"
CORES="${CORES:-$(nproc)}"
SERVICES="${SERVICES:-1000}"
# The script's own budget; the hard stop below leaves a minute for the peers to be stopped.
BUDGET_S="${BUDGET_S:-430}"
mkdir -p "$OUT"
if [ ! -f dist/main.js ]; then echo "dist/main.js missing: run npm run build first" >&2; exit 2; fi
# 1,000,000 registrations over keep-alive connections need no more descriptors than the default,
# but five peers and their loaders each hold a few hundred: raise the soft limit where allowed.
ulimit -n 65536 2>/dev/null || true
echo "scale-device: node $(node --version), $(nproc) CPUs, ${INSTANCES} instances, ${SERVICES} services, budget ${BUDGET_S} s"
status=0
timeout --kill-after=5 465 node --import tsx bench/scale.ts \
  --instances="$INSTANCES" --cores="$CORES" --services="$SERVICES" --budget-s="$BUDGET_S" --out="$OUT" \
  2>&1 | tee "$OUT/scale.log" || status=$?
if [ -f "$OUT/scale.md" ]; then
  echo; echo "=== summary ($OUT/scale.md, $OUT/scale.json) ==="; cat "$OUT/scale.md"
else
  echo "no figures written (exit $status); see $OUT/scale.log" >&2
fi
exit "$status"
