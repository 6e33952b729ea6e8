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
 */
export const PEER_NODE_FLAGS: readonly string[] = ['--max-semi-space-size=8'];
