import { describe, expect, it } from 'vitest';
import { acceptQueueOf } from '../../../bench/paused-peer.js';

const PROC_NET_TCP = [
  '  sl  local_address rem_address   st tx_queue rx_queue tr tm->when retrnsmt   uid  timeout inode',
  '   0: 0100007F:1BBD 00000000:0000 0A 00000000:00000165 00:00000000 00000000     0        0 1 1 0000000000000000 100 0 0 10 0',
  '   1: 0100007F:1BBD 0100007F:C350 01 00000000:00000000 00:00000000 00000000     0        0 2 1 0000000000000000 20 4 30 10 -1',
  '   2: 0100007F:1BBE 00000000:0000 0A 00000000:00000000 00:00000000 00000000     0        0 3 1 0000000000000000 100 0 0 10 0',
].join('\n');

describe('paused-peer benchmark: the accept queue', () => {
  it('reads the connections waiting on a port\'s listening socket, not those of its accepted ones', () => {
    expect(acceptQueueOf(PROC_NET_TCP, 7101)).toBe(0x165);
    expect(acceptQueueOf(PROC_NET_TCP, 7102)).toBe(0);
  });
  it('says null for a port nothing listens on', () => {
    expect(acceptQueueOf(PROC_NET_TCP, 7103)).toBeNull();
  });
});
