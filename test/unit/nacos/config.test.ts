import { describe, expect, it } from 'vitest';
import { ConfigError, resolveConfig } from '../../../src/config/load.js';

function refusal(file: Record<string, unknown>): ConfigError {
  try {
    resolveConfig(file, {}, {});
  } catch (error) {
    if (error instanceof ConfigError) return error;
    throw error;
  }
  throw new Error('no ConfigError');
}

describe('nacos settings', () => {
  it('take the port from --nacos-port over REGISTRY_NACOS_PORT over nacos.port, gRPC at port + 1000 unless set', () => {
    expect(resolveConfig({ nacos: { port: 8848 } }, {}, {}).protocols.nacos).toMatchObject({ port: 8848, grpcPort: 9848 });
    expect(resolveConfig({ nacos: { port: 8848 } }, { REGISTRY_NACOS_PORT: '18848' }, {}).protocols.nacos).toMatchObject({ port: 18848, grpcPort: 19848 });
    expect(resolveConfig({}, { REGISTRY_NACOS_PORT: '18848' }, { nacosPort: '28848' }).protocols.nacos.port).toBe(28848);
    expect(resolveConfig({ nacos: { port: 8848, grpcPort: 7000 } }, {}, {}).protocols.nacos.grpcPort).toBe(7000);
    expect(resolveConfig({}, {}, {}).protocols.nacos).toMatchObject({ port: null, grpcPort: null });
  });

  it.each([
    [{ nacos: { port: 65_000 } }, 'nacos.grpcPort', 'past 65535'],
    [{ nacos: { pushRetriesMax: -1 } }, 'nacos.pushRetriesMax', 'from 0 to 100'],
    [{ nacos: { pushTargetsMax: 0 } }, 'nacos.pushTargetsMax', 'from 1'],
    [{ nacos: { grpcPort: 'x' } }, 'nacos.grpcPort', 'integer'],
    [{ nacos: { config: true } }, 'nacos.config', 'not a known setting'],
  ])('refuses %j naming %s', (file, field, problem) => {
    const caught = refusal(file);
    expect(caught.field).toBe(field);
    expect(caught.message).toContain(problem);
  });
});
