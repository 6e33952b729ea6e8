import type { Clock, TimerHandle } from '../clock/clock.js';
import { linkedAbort } from './abort.js';
import { answerError, type PeerAnswer, type PeerCaller } from './calls.js';
import { closedError, invalidArgument, RegistryClientError } from './errors.js';
import type { ClientLogger } from './logger.js';
import { instanceStatuses, type Instance, type InstanceRegistration, type InstanceStatus } from './types.js';
import { parseInstance, WireError } from './wire.js';

/** What `register()` gives back: the live registration of one instance. */
export interface Registration {
  readonly service: string;
  readonly instanceId: string;
  /** The instance as a peer last answered it (register, heartbeat or status change). */
  readonly instance: Instance;
  /** How often this instance heartbeats: what the peer said in its last answer. */
  readonly heartbeatIntervalMs: number;
  /** Heartbeats sent and answered 200 so far. */
  readonly heartbeats: number;
  /** Times the instance was registered again after a heartbeat answered 404. */
  readonly reRegistrations: number;
  /**
   * Sets the instance's status (`OUT_OF_SERVICE` to drain it before `close()`, for example);
   * later re-registrations keep it.
   */
  setStatus(status: InstanceStatus): Promise<Instance>;
  /** Stops heartbeating and cancels the instance (best effort: a peer that cannot be reached lets the lease run out). */
  close(): Promise<void>;
}

export interface RegistrationInit {
  namespace: string;
  registration: InstanceRegistration;
  /** How long `close()` tries to cancel before giving up. */
  closeTimeoutMs: number;
}

const encode = encodeURIComponent;

/**
 * The registration loop of one instance: register, heartbeat at the interval the peer
 * answered, register again when a heartbeat answers 404 (the peer does not know the instance:
 * it was evicted, or the client failed over to a peer that never heard of it), cancel on
 * close. Every timer is on the injected clock; heartbeats never overlap.
 */
export class RegistrationLoop implements Registration {
  private current: Instance | undefined;
  private intervalMs = 0;
  private status: InstanceStatus;
  private timer: TimerHandle | undefined;
  private closing: Promise<void> | undefined;
  /** Aborts the request in flight when the registration closes. */
  private readonly stop = new AbortController();
  private counts = { heartbeats: 0, reRegistrations: 0 };
  private readonly log: ClientLogger;

  constructor(
    private readonly components: { caller: PeerCaller; clock: Clock; logger: ClientLogger },
    private readonly init: RegistrationInit,
    private readonly onClosed: (registration: RegistrationLoop) => void,
  ) {
    this.status = init.registration.status ?? 'UP';
    this.log = components.logger.child({ component: 'registration', service: init.registration.service });
  }

  get service(): string {
    return this.init.registration.service;
  }

  get instanceId(): string {
    return this.instance.instanceId;
  }

  get instance(): Instance {
    if (!this.current) throw new Error('not registered yet');
    return this.current;
  }

  get heartbeatIntervalMs(): number {
    return this.intervalMs;
  }

  get heartbeats(): number {
    return this.counts.heartbeats;
  }

  get reRegistrations(): number {
    return this.counts.reRegistrations;
  }

  /** The first registration; rejects with the peer's error (4xx) or when no peer answers. */
  async start(): Promise<void> {
    const answer = await this.components.caller.call(this.registerRequest(), { signal: this.stop.signal });
    if (answer.status !== 200 && answer.status !== 201) throw answerError(answer, 'register');
    this.accept(answer, true);
    this.log.info({ instanceId: this.instanceId, peer: answer.peer, heartbeatIntervalMs: this.intervalMs }, 'registered');
    this.schedule();
  }

  async setStatus(status: InstanceStatus): Promise<Instance> {
    if (!instanceStatuses.includes(status)) throw invalidArgument('status', `must be one of ${instanceStatuses.join(', ')}`);
    if (this.closing) throw closedError('this registration');
    this.status = status;
    const answer = await this.components.caller.call(
      { method: 'PUT', path: `${this.instancePath()}/status?namespace=${encode(this.init.namespace)}`, body: { status } },
      { signal: this.stop.signal },
    );
    if (answer.status === 404) {
      await this.reRegister();
      return this.instance;
    }
    if (answer.status !== 200) throw answerError(answer, 'set status');
    this.accept(answer, false);
    return this.instance;
  }

  close(): Promise<void> {
    this.closing ??= this.cancel();
    return this.closing;
  }

  private async cancel(): Promise<void> {
    this.timer?.cancel();
    this.stop.abort(closedError('this registration'));
    this.onClosed(this);
    // Closed while the first register was in flight: it may have landed all the same, so
    // cancel the id it asked for (the peer's default is host:port); a 404 is fine.
    const { registration } = this.init;
    const instanceId = this.current?.instanceId ?? registration.instanceId ?? `${registration.host}:${registration.port}`;
    try {
      const answer = await this.components.caller.call(
        { method: 'DELETE', path: `${this.instancePathOf(instanceId)}?namespace=${encode(this.init.namespace)}` },
        { budgetMs: this.init.closeTimeoutMs },
      );
      if (answer.status === 200 || answer.status === 404) this.log.info({ instanceId, peer: answer.peer }, 'cancelled');
      else this.log.warn({ instanceId, status: answer.status }, 'cancel refused; the lease will run out');
    } catch (error) {
      this.log.warn({ instanceId, err: error }, 'cancel failed; the lease will run out');
    }
  }

  private schedule(): void {
    if (this.closing) return;
    this.timer = this.components.clock.setTimeout(() => void this.beat(), this.intervalMs);
  }

  private async beat(): Promise<void> {
    const { caller } = this.components;
    try {
      // A heartbeat that cannot get through within one interval gives way to the next one.
      const answer = await caller.call(
        { method: 'PUT', path: `${this.instancePath()}/heartbeat?namespace=${encode(this.init.namespace)}` },
        { budgetMs: Math.min(caller.init.failoverBudgetMs, this.intervalMs), signal: this.stop.signal },
      );
      if (answer.status === 200) {
        this.counts.heartbeats += 1;
        this.accept(answer, false);
      } else if (answer.status === 404) {
        this.log.info({ instanceId: this.instanceId, peer: answer.peer }, 'the peer does not know the instance; registering again');
        await this.reRegister();
      } else {
        this.log.error({ instanceId: this.instanceId, error: answerError(answer, 'heartbeat').message }, 'heartbeat refused');
      }
    } catch (error) {
      if (!this.closing) this.log.warn({ instanceId: this.instanceId, err: error }, 'heartbeat failed');
    } finally {
      this.schedule();
    }
  }

  private async reRegister(): Promise<void> {
    const answer = await this.components.caller.call(this.registerRequest(), { signal: this.stop.signal });
    if (answer.status !== 200 && answer.status !== 201) {
      this.log.error({ instanceId: this.instanceId, error: answerError(answer, 'register').message }, 'registering again refused');
      return;
    }
    this.counts.reRegistrations += 1;
    this.accept(answer, true);
  }

  private registerRequest() {
    // After the first answer the id is fixed (the peer may have defaulted it to host:port).
    const body = { ...this.init.registration, status: this.status, namespace: this.init.namespace };
    if (this.current) body.instanceId = this.current.instanceId;
    return { method: 'POST' as const, path: '/v1/instances', body };
  }

  private instancePath(): string {
    return this.instancePathOf(this.instanceId);
  }

  private instancePathOf(instanceId: string): string {
    return `/v1/services/${encode(this.service)}/instances/${encode(instanceId)}`;
  }

  /** Takes a peer's answer: the instance, and the interval to heartbeat at (if it says one). */
  private accept(answer: PeerAnswer, intervalRequired: boolean): void {
    let instance: Instance;
    try {
      instance = parseInstance(answer.body);
    } catch (error) {
      throw new RegistryClientError('REG_CLIENT_ERR_BAD_RESPONSE', `${answer.peer}: ${(error as WireError).message}`, { peer: answer.peer });
    }
    const intervalMs = (answer.body as { heartbeatIntervalMs?: unknown }).heartbeatIntervalMs;
    if (typeof intervalMs === 'number' && Number.isFinite(intervalMs) && intervalMs > 0) this.intervalMs = intervalMs;
    else if (intervalRequired && this.intervalMs === 0) {
      throw new RegistryClientError('REG_CLIENT_ERR_BAD_RESPONSE', `${answer.peer}: the register answer has no heartbeatIntervalMs`, {
        peer: answer.peer,
      });
    }
    this.current = instance;
  }
}
