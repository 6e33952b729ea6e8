import { EXIT_INTERRUPTED } from './client.js';

/**
 * Ctrl-C (SIGINT) or SIGTERM for a command that has something to undo before it exits
 * (`register --heartbeat` cancels its instances): the first signal aborts `signal`, which
 * ends the command's waits at once so it can clean up and exit; a second one exits at once
 * with code 130 (the shell's code for Ctrl-C), leaving the rest undone. Without it, Node's
 * default would end the process on the first Ctrl-C with nothing cancelled.
 */
export class Interrupt {
  private readonly aborter = new AbortController();
  /** Aborted by the first SIGINT or SIGTERM. */
  readonly signal: AbortSignal = this.aborter.signal;

  private readonly onSignal = (name: NodeJS.Signals): void => {
    if (!this.signal.aborted) {
      this.aborter.abort(new Error(`stopped by ${name}`));
      return;
    }
    process.stderr.write(`\nregistry: ${name} again: exiting now, without finishing the clean-up\n`);
    process.exit(EXIT_INTERRUPTED);
  };

  constructor() {
    process.on('SIGINT', this.onSignal);
    process.on('SIGTERM', this.onSignal);
  }

  /** Back to Node's default handling. */
  dispose(): void {
    process.off('SIGINT', this.onSignal);
    process.off('SIGTERM', this.onSignal);
  }
}
