import type { RegistryReads } from '../app/reads.js';
import type { RegistryWrites } from '../app/writes.js';
import type { SampledLogger } from '../log/sampled.js';
import type { AccessPort } from './access.js';
import type { LimitsPort } from './limits.js';

/**
 * The adapter contract: what every protocol (native /v1, Eureka, Prometheus SD, DNS, xDS,
 * Consul, Nacos) declares, and the narrow ports it receives, nothing else. The guarantees the
 * native API has (auth, fair limits, log hygiene, durability, shared encodings) are in the
 * ports, so an adapter inherits them by using them rather than re-deciding them:
 * - `writes`: durable by type (src/app/writes.ts: a route answers through `whenDurable`);
 * - `reads`: views, listings and watches from the read layer's shared per-change encodings
 *   (src/app/reads.ts);
 * - `access`: credentials to a principal with scopes and namespaces, by /v1's rules and its
 *   one peer-wide rate limit, the refusal as data the adapter words in its protocol (access.ts);
 * - `limits`: the peer-wide rate limit and the pools of held slots with a share per principal
 *   (limits.ts);
 * - `logger`: redacts credentials anywhere (URLs included) and samples repeated lines
 *   (src/log/sampled.ts).
 * The ports are made once per peer (ports.ts, `node.ports`): every adapter shares the same
 * rate buckets and pools. Adding a protocol: docs/architecture.md, "Adding a protocol".
 */

/**
 * How a protocol carries credentials: `bearer` (`Authorization: Bearer`), `basic` (HTTP basic,
 * the token as password), `x-consul-token` (the header), `query-token` (`?token=`),
 * `grpc-authorization` (gRPC metadata `authorization: Bearer`), `dns-source` (no token: a
 * list of allowed source networks).
 */
export type CredentialCarrier = 'bearer' | 'basic' | 'x-consul-token' | 'query-token' | 'grpc-authorization' | 'dns-source';

/** The ports an adapter receives. */
export interface AdapterPorts {
  writes: RegistryWrites;
  reads: RegistryReads;
  access: AccessPort;
  limits: LimitsPort;
  logger: SampledLogger;
}

/** What an adapter declares about itself, beside its routes or its listener. */
export interface AdapterDeclaration {
  /** Its name: the folder under src/, the `component` of its log lines. */
  name: string;
  /** How its protocol carries credentials (the access port words a 401 from these). */
  credentials: readonly CredentialCarrier[];
  /** Its settings: the config section (`consul`, `xds`), and the flag that turns it on; null: always on in the HTTP app. */
  settings: { section: string; flag: string } | null;
  /** Its page in docs/. */
  docs: string;
  /** The record extension it keeps its protocol's data in (src/registry/extensions.ts), if any. */
  extension?: string;
}
