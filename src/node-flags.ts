/**
 * The Node.js flags a peer process runs with, wherever this project starts one: `npm start`,
 * the Docker image's command, `registry cluster` / `npm run cluster` (local-cluster.ts) and the
 * benchmarks. Node flags go before the script on the command line, so each of those writes
 * them out; test/unit/node-flags.test.ts holds them to this list.
 *
 * `--max-semi-space-size=8`: V8's young generation is two semi-spaces, each growing to 16 MB on
 * 64-bit Node 20. A peer under steady load grows them to the full 16 MB and keeps both
 * committed. At 8 MB, a peer holding 100,000 instances took 173-185 MB of RSS against 194
 * without, and 185-199 against 206 with every service listed once, with no measured cost in
 * CPU per register, heartbeat or discover (docs/deployment.md has the figures and commands).
 * A scavenge's cost follows what survives it, and a request's objects die young either way.
 *
 * `--heap-growing-percent=20`: after each full collection V8 lets the old generation grow to a
 * limit before the next; by its own rule, a factor of what survived that V8 raises (up to 4)
 * while collections are cheap next to the program's own work, as a registry's are. A peer that
 * took a flood of registrations so ends with its heap committed well above what it holds, and
 * often keeps it: an idle peer allocates too little to reach the next collection. With the
 * limit 20% above what survived:
 * one peer of 1,000,000 instances 564-568 MB after idle against 596-637 MB; of two peers with
 * every registration on the first, that one 660 against 722-864 MB and the other 570 against
 * 590-620 MB (`bench/rss-vs-heap.sh one|two 1000000` with `NODE_FLAGS`, 2026-12-06). The cost:
 * more full collections while the registry grows (23 against 8 while registering a million,
 * 1.8 against 0.6 s of main-thread marking and pauses over 90-111 s of load; the longest pause
 * 70 against 64 ms, from the same runs' `--trace-gc`), none more in steady heartbeats.
 */
export const PEER_NODE_FLAGS: readonly string[] = ['--max-semi-space-size=8', '--heap-growing-percent=20'];
