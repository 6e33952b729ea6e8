import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { TOKENS } from '../../support/security.js';

/**
 * The parity matrix of the adapter contract (src/adapters/contract.ts; issue 33): every
 * operation of every protocol, called with no credential, a read-only token, a token of
 * another namespace and a write token, gets the answer its declared need says, the same on
 * every protocol. An adapter joins the matrix by declaring its operations (a `ParityAdapter`:
 * name, need, and how to call it with a credential and read the answer), never by writing the
 * expectations again: they are `expectedOutcome`, here, once.
 */

/** The credentials each operation is called with (tokens of test/support/security.ts: reader, other-team, writer). */
export const CREDENTIALS = ['none', 'read', 'other-namespace', 'write'] as const;
export type Credential = (typeof CREDENTIALS)[number];

/** What an operation needs: nothing (open, only rate limited), the read or write scope on its namespace, or the admin scope. */
export type Need = 'public' | 'read' | 'write' | 'admin';

/** An answer as the contract sees it, whatever the protocol's words: served, 401-like (who are you?), 403-like (not you). */
export type Outcome = 'served' | 'unauthenticated' | 'forbidden';

/**
 * The one table: what each need answers each credential. The operations are called on the
 * namespace the read and write tokens hold (team-a); the other token holds only team-b; none
 * of them has the admin scope.
 */
export function expectedOutcome(need: Need, credential: Credential): Outcome {
  if (need === 'public') return 'served';
  if (credential === 'none') return 'unauthenticated';
  if (need === 'admin') return 'forbidden';
  if (credential === 'other-namespace') return 'forbidden';
  if (need === 'write' && credential === 'read') return 'forbidden';
  return 'served';
}

/** The token each credential presents (test/support/security.ts): reader and writer hold team-a, other-team only team-b. */
export const TOKEN_OF: Record<Exclude<Credential, 'none'>, string> = { read: TOKENS.reader, 'other-namespace': TOKENS.otherTeam, write: TOKENS.writer };

/**
 * An HTTP answer as the contract sees it: 401 is "who are you", 403 "not you"; a 5xx fails the
 * matrix (the operation broke: it is neither served nor refused, and must not pass as either);
 * any other answer (200, 400, 404) got through the access checks.
 */
export function outcomeOfStatus(status: number, body = ''): Outcome {
  if (status >= 500) throw new Error(`answered ${status}, neither served nor refused: ${body.slice(0, 300)}`);
  return status === 401 ? 'unauthenticated' : status === 403 ? 'forbidden' : 'served';
}

/** One operation a protocol serves, on a started peer `P`. */
export interface ParityOperation<P> {
  /** What it is, e.g. `GET /v1/services/:service`, `xDS ADS stream`. */
  name: string;
  need: Need;
  /** Calls it once with `credential` and reads the answer; must not hang (end held streams). */
  call(peer: P, credential: Credential): Promise<Outcome>;
}

/** A protocol's declaration for the matrix: how to start a peer with its tokens and this protocol on, and its operations. */
export interface ParityAdapter<P> {
  name: string;
  /** Starts a peer with the tokens of securedFile (test/support/security.ts) and this protocol on. */
  start(): Promise<P>;
  stop(peer: P): Promise<void>;
  operations: readonly ParityOperation<P>[];
}

/** The matrix of one adapter: a test per operation, each credential's answer checked against `expectedOutcome`. */
export function describeParity<P>(adapter: ParityAdapter<P>): void {
  describe(`parity: ${adapter.name}`, () => {
    let peer: P | undefined;
    beforeAll(async () => {
      peer = await adapter.start();
    });
    afterAll(async () => {
      if (peer !== undefined) await adapter.stop(peer);
    });
    it('declares its operations', () => expect(adapter.operations.length).toBeGreaterThan(0));
    it.each(adapter.operations.map((operation) => [operation.name, operation] as const))('%s answers each credential as its need says', async (_name, operation) => {
      const seen: Record<string, Outcome> = {};
      const wanted: Record<string, Outcome> = {};
      for (const credential of CREDENTIALS) {
        seen[credential] = await operation.call(peer as P, credential);
        wanted[credential] = expectedOutcome(operation.need, credential);
      }
      expect({ need: operation.need, ...seen }).toEqual({ need: operation.need, ...wanted });
    });
  });
}
