#!/usr/bin/env node
import { Command, CommanderError } from 'commander';
import { EXIT_USAGE } from './cli/client.js';
import { addPeerOptions } from './cli/peer-options.js';
import { startPeer } from './peer.js';

/** `npm start`: one registry peer. Flags as in docs/configuration.md; each has an environment twin. */
const program = addPeerOptions(new Command().name('registry-peer').description('Start one registry peer.')).showHelpAfterError().exitOverride();

try {
  program.parse(process.argv);
} catch (error) {
  // Bad usage (an unknown flag, a missing value) exits 2, as `registry start` and a bad
  // configuration do (docs/cli.md); commander's own default would be 1. --help exits 0.
  if (error instanceof CommanderError) process.exit(error.exitCode === 0 ? 0 : EXIT_USAGE);
  throw error;
}
await startPeer(program.opts(), process.env);
