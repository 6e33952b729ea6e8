import { pathIn, type Disk } from './disk.js';
import { LOCK_FILE } from './files.js';
import { FORMAT_VERSION } from './format.js';
import { parseLockHolder, type LockHolder } from './lock.js';
import { recoverDataDir, type FileReport } from './recovery.js';

/** What `data:inspect` reports about a data dir (also its `--json` output). */
export interface DataDirInspection {
  dataDir: string;
  /** The format this reader reads. */
  formatVersion: number;
  lock: (LockHolder & { refreshedAgoMs: number; running: boolean }) | 'unreadable' | null;
  snapshots: FileReport[];
  segments: FileReport[];
  /** Files set aside as damaged at an earlier start, and leftovers of an interrupted snapshot. */
  setAside: string[];
  temporary: string[];
  /** Files in the dir that are not ours. */
  other: string[];
  /** What a start would load now. */
  recovered: { snapshot: string | null; instances: number; tombstones: number };
  /** Files with damage, and a file in a newer format (nothing can be loaded then). */
  damagedFiles: number;
  unsupported: { name: string; format: number } | null;
}

/**
 * Reads a data dir without changing it (no lock is taken: it is safe next to a running peer,
 * though a file being written may then look torn at its end).
 */
export function inspectDataDir(
  disk: Disk,
  dir: string,
  facts: { nowMs: number; isPidAlive: (pid: number) => boolean },
): DataDirInspection {
  const recovery = recoverDataDir(disk, dir, { readAll: true });
  let instances = 0;
  for (const record of recovery.records.values()) if (record.deleted === null) instances += 1;
  const snapshot = recovery.files.find((file) => file.kind === 'snapshot' && file.seq === recovery.snapshotSeq);
  return {
    dataDir: dir,
    formatVersion: FORMAT_VERSION,
    lock: readLock(disk, dir, facts),
    snapshots: recovery.files.filter((file) => file.kind === 'snapshot'),
    segments: recovery.files.filter((file) => file.kind === 'segment'),
    setAside: recovery.setAside,
    temporary: recovery.temps,
    other: recovery.foreign,
    recovered: { snapshot: snapshot?.name ?? null, instances, tombstones: recovery.records.size - instances },
    damagedFiles: recovery.files.filter((file) => file.damage !== null).length,
    unsupported: recovery.unsupported,
  };
}

function readLock(disk: Disk, dir: string, facts: { nowMs: number; isPidAlive: (pid: number) => boolean }): DataDirInspection['lock'] {
  const path = pathIn(dir, LOCK_FILE);
  const stat = disk.stat(path);
  if (!stat) return null;
  const holder = parseLockHolder(disk.readFile(path).toString('utf8'));
  if (holder === 'unreadable') return holder;
  return { ...holder, refreshedAgoMs: Math.max(0, facts.nowMs - stat.mtimeMs), running: facts.isPidAlive(holder.pid) };
}

/** The human-readable report. */
export function renderInspection(report: DataDirInspection): string {
  const lines = [`data dir ${report.dataDir}`, `format version ${report.formatVersion}`];
  const { lock } = report;
  if (lock === null) lines.push('lock: none (no peer is using it)');
  else if (lock === 'unreadable') lines.push('lock: unreadable lock file');
  else {
    lines.push(
      `lock: pid ${lock.pid} on ${lock.hostname}, refreshed ${Math.round(lock.refreshedAgoMs / 1000)} s ago` +
        (lock.running ? ' (a process with that pid is running)' : ' (no process with that pid here)'),
    );
  }
  for (const [title, files] of [['snapshots', report.snapshots], ['log segments', report.segments]] as const) {
    lines.push(`${title}: ${files.length === 0 ? 'none' : ''}`.trimEnd());
    for (const file of files) lines.push(`  ${describeFile(file)}`);
  }
  if (report.setAside.length > 0) lines.push(`set aside (damaged earlier): ${report.setAside.join(', ')}`);
  if (report.temporary.length > 0) lines.push(`temporary (removed at the next start): ${report.temporary.join(', ')}`);
  if (report.other.length > 0) lines.push(`not ours (left alone): ${report.other.join(', ')}`);
  if (report.unsupported) {
    lines.push(`UNSUPPORTED: ${report.unsupported.name} has format ${report.unsupported.format}; this reader reads ${report.formatVersion}`);
  }
  const { recovered } = report;
  lines.push(
    `a start would load: ${recovered.instances} instances, ${recovered.tombstones} tombstones` +
      (recovered.snapshot ? ` (from ${recovered.snapshot} and the log after it)` : ' (from the log alone)'),
  );
  lines.push(report.damagedFiles === 0 ? 'damage: none' : `damage: ${report.damagedFiles} file(s) damaged`);
  return `${lines.join('\n')}\n`;
}

function describeFile(file: FileReport): string {
  const created = file.header ? ` created ${new Date(file.header.createdAtMs).toISOString()}` : '';
  const role = { used: 'loaded', salvaged: 'loaded up to the damage', skipped: 'not needed' }[file.role];
  const state = file.damage
    ? `DAMAGED at offset ${file.damage.offset}: ${file.damage.reason} (${file.damage.droppedBytes} bytes dropped)`
    : 'ok';
  return `${file.name}  ${file.records} records  ${file.sizeBytes} bytes${created}  ${state}  [${role}]`;
}
