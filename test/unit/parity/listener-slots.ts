import type { ParityAdapter } from './matrix.js';

/**
 * The protocol listeners without HTTP route definitions declare their operations here, each a
 * `ParityAdapter` (matrix.ts): how to start a peer with securedFile's tokens and the listener
 * on, and per operation its need and a call that presents a credential the protocol's way and
 * reads the answer as an Outcome. The matrix itself comes with the contract.
 *
 * - xDS: an ADS stream (state of the world and incremental) with gRPC metadata
 *   `authorization: Bearer <token>` (need `read`: it serves a namespace's addresses);
 *   UNAUTHENTICATED is `unauthenticated`, PERMISSION_DENIED `forbidden`.
 * - DNS: a query from an address in / out of the source list (`dns-source`: no token), read
 *   as REFUSED or answered; its rows use the credential column as the source.
 * null: not declared yet (the test lists it as to do).
 */
export const xdsParity: ParityAdapter<unknown> | null = null;
export const dnsParity: ParityAdapter<unknown> | null = null;
