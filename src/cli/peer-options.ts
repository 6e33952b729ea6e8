import type { Command } from 'commander';
import { LISTENER_ADAPTERS } from '../adapters/listeners.js';

/**
 * The flags of a peer (docs/configuration.md, docs/cli.md), each with its environment twin; shared by `npm start`
 * (src/main.ts) and `registry start` so the two never drift apart.
 */
export function addPeerOptions(command: Command): Command {
  command
    .option('--config <file>', 'cluster file (env REGISTRY_CONFIG)')
    .option('--id <id>', "this peer's id in the cluster file (env REGISTRY_ID)")
    .option('--host <address>', 'address to listen on (env REGISTRY_HOST)')
    .option('--port <port>', 'port to listen on (env REGISTRY_PORT)')
    .option('--url <url>', 'URL other peers use to reach this one (env REGISTRY_URL)')
    .option('--data-dir <dir>', 'directory for durable state (env REGISTRY_DATA_DIR)')
    .option('--sync-policy <policy>', 'with --data-dir: always, interval or never (env REGISTRY_SYNC_POLICY)')
    .option('--log-level <level>', 'fatal, error, warn, info, debug, trace or silent (env REGISTRY_LOG_LEVEL)')
    .option('--profile <name>', 'timing profile: lan, wan or local (env REGISTRY_PROFILE)')
    .option('--region <name>', "this peer's region (env REGISTRY_REGION)")
    .option('--zone <name>', "this peer's zone (env REGISTRY_ZONE)")
    .option('--tls-cert <file>', "this peer's TLS certificate, PEM (env REGISTRY_TLS_CERT)")
    .option('--tls-key <file>', 'its private key, PEM (env REGISTRY_TLS_KEY)')
    .option('--tls-ca <file>', "the CA of the peers' certificates, PEM (env REGISTRY_TLS_CA)");
  // Each protocol listener's port, from its declaration (src/adapters/listeners.ts).
  for (const { settings } of LISTENER_ADAPTERS) command.option(`${settings.flag} <port>`, `${settings.help} (env ${settings.env})`);
  return command
    .option('--insecure', 'start on a non-loopback address even without authentication (env REGISTRY_INSECURE)');
}
