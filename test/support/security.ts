import { signedHeaders } from '../../src/security/peer-signature.js';
import type { Logger } from '../../src/log/logger.js';

/** Tokens of the secured test peer (never use such values outside tests). */
export const TOKENS = {
  /** Every scope on every namespace. */
  root: 'test-token-root-0000000001',
  /** read on team-a. */
  reader: 'test-token-reader-team-a-01',
  /** write (and so read) on team-a. */
  writer: 'test-token-writer-team-a-01',
  /** admin only. */
  admin: 'test-token-admin-only-00001',
  /** read and write on team-b only. */
  otherTeam: 'test-token-writer-team-b-01',
} as const;

export const CLUSTER_SECRET = 'test-cluster-secret-0123456789abcdef0123';

/** A cluster file with every guard on: tokens, peer signing, Eureka on team-a. */
export function securedFile(extra: { security?: Record<string, unknown>; limits?: Record<string, unknown>; cluster?: Record<string, unknown> } = {}): Record<string, unknown> {
  return {
    security: {
      tokens: [
        { name: 'root', token: TOKENS.root, namespaces: ['*'], scopes: ['read', 'write', 'admin'] },
        { name: 'reader', token: TOKENS.reader, namespaces: ['team-a'], scopes: ['read'] },
        { name: 'writer', token: TOKENS.writer, namespaces: ['team-a'], scopes: ['write'] },
        { name: 'admin', token: TOKENS.admin, namespaces: ['*'], scopes: ['admin'] },
        { name: 'other-team', token: TOKENS.otherTeam, namespaces: ['team-b'], scopes: ['read', 'write'] },
      ],
      clusterSecret: CLUSTER_SECRET,
      eurekaNamespace: 'team-a',
      ...extra.security,
    },
    limits: { rateLimitPerSecond: 0, ...extra.limits },
    ...(extra.cluster ? { cluster: extra.cluster } : {}),
  };
}

export const bearer = (token: string) => ({ authorization: `Bearer ${token}` });
export const basic = (token: string, user = 'eureka') => ({ authorization: `Basic ${Buffer.from(`${user}:${token}`).toString('base64')}` });

/** The headers of a peer call signed as `peer-x` would sign it. */
export function peerHeaders(
  body: Buffer | string,
  options: { path?: string; nowMs: number; secret?: string; nonce?: string; peerId?: string; method?: string },
): Record<string, string> {
  return signedHeaders(options.secret ?? CLUSTER_SECRET, {
    method: options.method ?? 'POST',
    path: options.path ?? '/v1/peer/ping',
    peerId: options.peerId ?? 'peer-x',
    body,
    nowMs: options.nowMs,
    ...(options.nonce ? { nonce: options.nonce } : {}),
  });
}

/** A logger that keeps every line (message and fields) for assertions. */
export function recordingLogger(): Logger & { lines: { level: string; msg: string; fields: object }[] } {
  const lines: { level: string; msg: string; fields: object }[] = [];
  const make = (bindings: object): Logger => {
    const at =
      (level: string) =>
      (fieldsOrMessage: object | string, message?: string): void => {
        if (typeof fieldsOrMessage === 'string') lines.push({ level, msg: fieldsOrMessage, fields: bindings });
        else lines.push({ level, msg: message ?? '', fields: { ...bindings, ...fieldsOrMessage } });
      };
    return { debug: at('debug'), info: at('info'), warn: at('warn'), error: at('error'), child: (more) => make({ ...bindings, ...more }) };
  };
  return Object.assign(make({}), { lines });
}
