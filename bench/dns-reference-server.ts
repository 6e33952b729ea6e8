/**
 * The reference of the DNS benchmark: a bare UDP server that answers every datagram with one
 * pre-encoded answer (the peer's own answer for the benchmark's question, captured by
 * bench/dns.ts), with the query's id copied in: the least any DNS server does per query. No
 * decode, no lookup, no access check. A /healthz on the same port number (TCP) tells when it is up.
 *
 *   node --import tsx bench/dns-reference-server.ts PORT ANSWER_FILE    (127.0.0.1 only)
 */
import { createSocket } from 'node:dgram';
import { readFileSync } from 'node:fs';
import { createServer } from 'node:http';

const port = Number(process.argv[2]);
const answer = readFileSync(process.argv[3]!);
const socket = createSocket('udp4');
socket.on('message', (query, from) => {
  const out = Buffer.allocUnsafe(answer.length);
  answer.copy(out);
  out[0] = query[0]!;
  out[1] = query[1]!;
  socket.send(out, from.port, from.address);
});
socket.bind(port, '127.0.0.1');
createServer((_request, response) => response.end('ok')).listen(port, '127.0.0.1');
