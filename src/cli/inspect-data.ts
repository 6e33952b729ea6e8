#!/usr/bin/env node
import { Command } from 'commander';
import { describeDiskError, nodeDisk } from '../persistence/disk.js';
import { inspectDataDir, renderInspection } from '../persistence/inspect.js';
import { isPidAlive } from '../persistence/lock.js';

/**
 * `npm run data:inspect -- DIR` (or `node dist/cli/inspect-data.js DIR`): what a data dir
 * holds, whether it is damaged, and what a start would load. Reads only.
 * Exit code: 0 no damage, 1 damage (or a format this version does not read), 2 unreadable dir.
 */
const program = new Command()
  .name('inspect-data')
  .description("Report on a registry peer's data dir: format, snapshots, log segments, record counts, damage.")
  .argument('<dir>', 'the data dir')
  .option('--json', 'print the report as JSON')
  .showHelpAfterError();

program.parse(process.argv);
const [dir] = program.args as [string];
const { json } = program.opts<{ json?: boolean }>();
try {
  const report = inspectDataDir(nodeDisk, dir, { nowMs: Date.now(), isPidAlive });
  process.stdout.write(json ? `${JSON.stringify(report, null, 2)}\n` : renderInspection(report));
  process.exitCode = report.damagedFiles > 0 || report.unsupported ? 1 : 0;
} catch (error) {
  process.stderr.write(`inspect-data: cannot read ${dir}: ${describeDiskError(error)}\n`);
  process.exitCode = 2;
}
