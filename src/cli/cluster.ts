#!/usr/bin/env node
import { Command } from 'commander';
import { ConfigError } from '../config/load.js';
import { runLocalCluster } from './local-cluster.js';

/** `npm run cluster`: the local multi-peer launcher (also `registry cluster`). */
const program = new Command()
  .name('registry-cluster')
  .description('Start every peer of a cluster file on this machine.')
  .option('--config <file>', 'cluster file', 'cluster.example.json')
  .allowUnknownOption(true)
  .argument('[peerArgs...]', 'extra flags passed to every peer (after --)');

program.parse(process.argv);
try {
  await runLocalCluster(program.opts<{ config: string }>().config, program.args);
} catch (error) {
  process.stderr.write(`registry: ${(error as Error).message}\n`);
  process.exit(error instanceof ConfigError ? 2 : 1);
}
