#!/usr/bin/env node
import { Command } from 'commander';
import { addPeerOptions } from './cli/peer-options.js';
import { startPeer } from './peer.js';

/** `npm start`: one registry peer. Flags as in CONTRACT.md; each has an environment twin. */
const program = addPeerOptions(new Command().name('registry-peer').description('Start one registry peer.')).showHelpAfterError();

program.parse(process.argv);
await startPeer(program.opts(), process.env);
