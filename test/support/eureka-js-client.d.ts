// The parts of eureka-js-client 4.5.0 (a CommonJS package without types) the end-to-end tests use.
declare module 'eureka-js-client' {
  import { EventEmitter } from 'node:events';

  export interface EurekaLogger {
    debug(...args: unknown[]): void;
    info(...args: unknown[]): void;
    warn(...args: unknown[]): void;
    error(...args: unknown[]): void;
  }

  export interface EurekaClientConfig {
    instance: Record<string, unknown>;
    eureka: Record<string, unknown>;
    logger?: EurekaLogger;
  }

  /** An instance as the client caches it: the Eureka JSON of the registry it fetched. */
  export type CachedInstance = Record<string, any>;

  export class Eureka extends EventEmitter {
    constructor(config: EurekaClientConfig);
    start(callback?: (error?: Error | null) => void): void;
    stop(callback?: (error?: Error | null) => void): void;
    getInstancesByAppId(appId: string): CachedInstance[];
    getInstancesByVipAddress(vipAddress: string): CachedInstance[];
  }
}
