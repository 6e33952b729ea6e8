import { createHash } from 'node:crypto';
import { defaultsOf, securitySettings, type SecuritySettings } from './settings.js';

/**
 * The `security` and `tls` parts of the configuration: client tokens, the cluster secret,
 * mTLS between peers, the Eureka namespace, and the certificate files. Only validation
 * here (no file is read: src/peer.ts reads the certificates); see docs/security.md.
 */

export const scopes = ['read', 'write', 'admin'] as const;
export type Scope = (typeof scopes)[number];

/** One client token as the configuration holds it: only its SHA-256, never the token itself. */
export interface TokenGrant {
  /** Shown in logs instead of the token. */
  name: string;
  /** Lower-case hex SHA-256 of the token. */
  sha256: string;
  /** The namespaces it may use, or `*` for all. */
  namespaces: readonly string[] | '*';
  scopes: readonly Scope[];
}

export interface SecurityConfig extends SecuritySettings {
  /** Client tokens; none means the client routes are open (dev mode). */
  tokens: TokenGrant[];
  /** Signs and verifies peer calls (HMAC); null when peers do not sign. */
  clusterSecret: string | null;
  /** Peers present their certificate (from `tls`) and a verified one is accepted on peer routes. */
  peerMtls: boolean;
  /** The namespace the Eureka API serves. */
  eurekaNamespace: string;
  /** `--insecure`: start on a non-loopback address even without authentication. */
  insecure: boolean;
}

/** Certificate files (PEM); all null: plain HTTP. */
export interface TlsConfig {
  /** This peer's certificate: served to clients and peers, and presented to peers with `peerMtls`. */
  certFile: string | null;
  keyFile: string | null;
  /** The CA that signed the peers' certificates: trusted for peer calls, and for client certificates with `peerMtls`. */
  caFile: string | null;
}

/** Where a security value came from, for error messages (`REGISTRY_TOKENS` or `security.tokens`). */
export interface SecuritySources {
  env: Record<string, string | undefined>;
  /** `--insecure` or `REGISTRY_INSECURE`, with the name to blame. */
  insecure: [string, unknown];
  /** `--tls-cert`, `--tls-key`, `--tls-ca` with the name to blame, already layered (flag, env, file). */
  tls: { certFile: [string, unknown]; keyFile: [string, unknown]; caFile: [string, unknown] };
}

/** Secrets come from the environment (or the file), never from flags: a command line is visible to every user. */
export const SECURITY_ENV = {
  tokens: 'REGISTRY_TOKENS',
  clusterSecret: 'REGISTRY_CLUSTER_SECRET',
} as const;

const SECURITY_FIELDS = new Set(['tokens', 'clusterSecret', 'peerMtls', 'eurekaNamespace', ...Object.keys(securitySettings)]);
const TOKEN_FIELDS = new Set(['name', 'sha256', 'token', 'namespaces', 'scopes']);
const TOKEN_NAME = /^[A-Za-z0-9][A-Za-z0-9_.:@-]{0,63}$/;
const NAMESPACE = /^[A-Za-z0-9][A-Za-z0-9._:-]{0,127}$/;
const SHA256_HEX = /^[0-9a-f]{64}$/;
/** Long enough that guessing is hopeless: `openssl rand -hex 32` gives 64 characters. */
export const CLUSTER_SECRET_MIN_LENGTH = 32;
export const TOKEN_MIN_LENGTH = 16;
export const TOKEN_MAX_LENGTH = 4_096;

/** A problem with one field; load.ts turns it into a ConfigError. */
export class SecurityConfigError extends Error {
  constructor(
    readonly field: string,
    readonly problem: string,
  ) {
    super(`${field}: ${problem}`);
  }
}

type Json = Record<string, unknown>;

function isObject(value: unknown): value is Json {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

function fail(field: string, problem: string): never {
  throw new SecurityConfigError(field, problem);
}

/** Lower-case hex SHA-256 of a token (what `security.tokens[].sha256` holds). */
export function sha256Hex(text: string): string {
  return createHash('sha256').update(text, 'utf8').digest('hex');
}

/** A boolean from a flag, an environment variable (`true`, `false`, `1`, `0`) or the file. */
export function readBoolean(field: string, value: unknown): boolean | undefined {
  if (value === undefined) return undefined;
  if (typeof value === 'boolean') return value;
  if (value === 'true' || value === '1') return true;
  if (value === 'false' || value === '0') return false;
  return fail(field, `must be true or false (got ${JSON.stringify(value)})`);
}

function readToken(field: string, value: unknown): TokenGrant {
  if (!isObject(value)) fail(field, 'must be an object {name, sha256 or token, namespaces, scopes}');
  for (const key of Object.keys(value)) if (!TOKEN_FIELDS.has(key)) fail(`${field}.${key}`, 'is not a known field');
  const { name, sha256, token, namespaces, scopes: granted } = value;
  if (typeof name !== 'string' || !TOKEN_NAME.test(name)) {
    fail(`${field}.name`, 'must be 1-64 letters, digits, ".", "_", ":", "@" or "-", starting with a letter or digit');
  }
  if ((sha256 === undefined) === (token === undefined)) fail(field, 'must give exactly one of sha256 (preferred) or token');
  let digest: string;
  if (sha256 !== undefined) {
    if (typeof sha256 !== 'string' || !SHA256_HEX.test(sha256.toLowerCase())) fail(`${field}.sha256`, 'must be 64 hexadecimal digits');
    digest = sha256.toLowerCase();
  } else {
    // Never echo the token itself in a message.
    if (typeof token !== 'string' || token.length < TOKEN_MIN_LENGTH || token.length > TOKEN_MAX_LENGTH) {
      fail(`${field}.token`, `must be a string of ${TOKEN_MIN_LENGTH} to ${TOKEN_MAX_LENGTH} characters`);
    }
    if (/[\s\u0000-\u001f\u007f]/.test(token)) fail(`${field}.token`, 'must not contain spaces or control characters');
    digest = sha256Hex(token);
  }
  let allowed: readonly string[] | '*';
  if (!Array.isArray(namespaces) || namespaces.length === 0) fail(`${field}.namespaces`, 'must be ["*"] or a non-empty list of namespaces');
  if (namespaces.includes('*')) {
    if (namespaces.length !== 1) fail(`${field}.namespaces`, '"*" stands alone');
    allowed = '*';
  } else {
    allowed = namespaces.map((ns, i) => (typeof ns === 'string' && NAMESPACE.test(ns) ? ns : fail(`${field}.namespaces[${i}]`, 'must be a namespace name')));
  }
  if (!Array.isArray(granted) || granted.length === 0) fail(`${field}.scopes`, `must be a non-empty list of ${scopes.join(', ')}`);
  const checked = granted.map((scope, i) =>
    (scopes as readonly unknown[]).includes(scope) ? (scope as Scope) : fail(`${field}.scopes[${i}]`, `must be one of ${scopes.join(', ')}`),
  );
  return { name, sha256: digest, namespaces: allowed, scopes: [...new Set(checked)] };
}

function readTokens(file: unknown, env: Record<string, string | undefined>): TokenGrant[] {
  const fromEnv = env[SECURITY_ENV.tokens];
  let field = 'security.tokens';
  let value = file;
  if (fromEnv !== undefined && fromEnv !== '') {
    field = SECURITY_ENV.tokens;
    try {
      value = JSON.parse(fromEnv);
    } catch {
      fail(field, 'must hold a JSON array of tokens');
    }
  }
  if (value === undefined) return [];
  if (!Array.isArray(value)) fail(field, 'must be an array of {name, sha256 or token, namespaces, scopes}');
  const tokens = value.map((item, i) => readToken(`${field}[${i}]`, item));
  const names = new Set<string>();
  const digests = new Set<string>();
  tokens.forEach((grant, i) => {
    if (names.has(grant.name)) fail(`${field}[${i}].name`, `duplicates token name ${JSON.stringify(grant.name)}`);
    if (digests.has(grant.sha256)) fail(`${field}[${i}]`, 'is the same token as an earlier entry');
    names.add(grant.name);
    digests.add(grant.sha256);
  });
  return tokens;
}

function readSecret(file: unknown, env: Record<string, string | undefined>): string | null {
  const fromEnv = env[SECURITY_ENV.clusterSecret];
  const [field, value] = fromEnv !== undefined && fromEnv !== '' ? [SECURITY_ENV.clusterSecret, fromEnv] : ['security.clusterSecret', file];
  if (value === undefined) return null;
  if (typeof value !== 'string' || value.length < CLUSTER_SECRET_MIN_LENGTH || value.length > TOKEN_MAX_LENGTH) {
    fail(field, `must be a string of at least ${CLUSTER_SECRET_MIN_LENGTH} characters (make one with: openssl rand -hex 32)`);
  }
  return value;
}

function readPath(field: string, value: unknown): string | null {
  if (value === undefined) return null;
  if (typeof value !== 'string' || value.length === 0) fail(field, 'must be a file path');
  return value;
}

function readSettingValue(field: string, value: unknown, min: number, max: number): number {
  if (typeof value !== 'number' || !Number.isInteger(value) || value < min || value > max) {
    fail(field, `must be an integer from ${min} to ${max} (got ${JSON.stringify(value)})`);
  }
  return value;
}

/** Validates `security` (file and environment) and `tls` (already layered from flags, environment and file). */
export function readSecurity(doc: unknown, tlsDoc: unknown, sources: SecuritySources): { security: SecurityConfig; tls: TlsConfig } {
  const security: Json = doc === undefined ? {} : isObject(doc) ? doc : fail('security', 'must be an object');
  for (const key of Object.keys(security)) if (!SECURITY_FIELDS.has(key)) fail(`security.${key}`, 'is not a known setting');
  if (tlsDoc !== undefined && !isObject(tlsDoc)) fail('tls', 'must be an object {certFile, keyFile, caFile}');
  for (const key of Object.keys(tlsDoc ?? {})) if (!['certFile', 'keyFile', 'caFile'].includes(key)) fail(`tls.${key}`, 'is not a known setting');

  const settings = { ...defaultsOf(securitySettings) };
  for (const [name, setting] of Object.entries(securitySettings) as [keyof SecuritySettings, (typeof securitySettings)[keyof SecuritySettings]][]) {
    if (security[name] !== undefined) settings[name] = readSettingValue(`security.${name}`, security[name], setting.min, setting.max);
  }
  const tokens = readTokens(security.tokens, sources.env);
  const clusterSecret = readSecret(security.clusterSecret, sources.env);
  if (clusterSecret !== null) {
    const secretDigest = sha256Hex(clusterSecret);
    const clash = tokens.findIndex((grant) => grant.sha256 === secretDigest);
    if (clash >= 0) fail(`security.tokens[${clash}]`, 'is the cluster secret: a client token must never open the peer routes, nor the secret the client routes');
  }
  const eurekaNamespace = security.eurekaNamespace ?? 'default';
  if (typeof eurekaNamespace !== 'string' || !NAMESPACE.test(eurekaNamespace)) fail('security.eurekaNamespace', 'must be a namespace name');
  const peerMtls = readBoolean('security.peerMtls', security.peerMtls) ?? false;
  const insecure = readBoolean(...sources.insecure) ?? false;

  const tls: TlsConfig = {
    certFile: readPath(...sources.tls.certFile),
    keyFile: readPath(...sources.tls.keyFile),
    caFile: readPath(...sources.tls.caFile),
  };
  if ((tls.certFile === null) !== (tls.keyFile === null)) fail(tls.certFile === null ? sources.tls.certFile[0] : sources.tls.keyFile[0], 'is required with the other of tls.certFile and tls.keyFile');
  if (peerMtls && (tls.certFile === null || tls.caFile === null)) {
    fail('security.peerMtls', 'needs tls.certFile, tls.keyFile and tls.caFile (the peers\' CA)');
  }
  return { security: { ...settings, tokens, clusterSecret, peerMtls, eurekaNamespace, insecure }, tls };
}
