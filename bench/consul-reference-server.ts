/**
 * The reference of the Consul blocking-query benchmark (bench/consul.ts): a bare node:http
 * server that holds long polls and answers every one a change wakes with the same bytes. Per
 * service it keeps its entries, an index, the answer's body and headers (built once per
 * change) and the held responses; `PUT /v1/agent/service/register` adds an entry (a copy of
 * `TEMPLATE_FILE`, the peer's own health entry captured by the benchmark, with the new ID and
 * port), moves the index and writes the one body to every held response. `GET
 * /v1/health/service/NAME?index=N` is held while N is the current index and answered at once
 * otherwise. No routing library, no hooks, no access check, no filter, no metrics: the least
 * any server does per woken query, so the benchmark can say how close the peer comes to it.
 *
 *   node --import tsx bench/consul-reference-server.ts PORT TEMPLATE_FILE    (127.0.0.1 only)
 */
import { readFileSync } from 'node:fs';
import { createServer, type IncomingMessage, type OutgoingHttpHeaders, type ServerResponse } from 'node:http';

interface HealthEntry {
  Service: { ID: string; Service: string; Port: number };
  Checks: { CheckID: string; ServiceID: string; ServiceName: string }[];
}

interface Watched {
  entries: Map<string, string>;
  index: number;
  body: Buffer;
  headers: OutgoingHttpHeaders;
  held: Set<ServerResponse>;
}

const port = Number(process.argv[2]);
const template = JSON.parse(readFileSync(process.argv[3]!, 'utf8')) as HealthEntry;
const services = new Map<string, Watched>();
let lastIndex = 1;

function answer(response: ServerResponse, watched: Watched): void {
  response.writeHead(200, watched.headers);
  response.end(watched.body);
}

function encode(watched: Watched): void {
  watched.body = Buffer.from(`[${[...watched.entries.values()].join(',')}]`);
  watched.headers = {
    'x-consul-index': String(watched.index),
    'x-consul-knownleader': 'true',
    'x-consul-lastcontact': '0',
    'content-type': 'application/json; charset=utf-8',
    'content-length': watched.body.length,
  };
}

function watchedOf(name: string): Watched {
  let watched = services.get(name);
  if (!watched) {
    watched = { entries: new Map(), index: lastIndex, body: Buffer.alloc(0), headers: {}, held: new Set() };
    encode(watched);
    services.set(name, watched);
  }
  return watched;
}

function register(text: string): void {
  const body = JSON.parse(text) as { Name: string; ID: string; Port: number };
  const entry = structuredClone(template);
  entry.Service = { ...entry.Service, ID: body.ID, Service: body.Name, Port: body.Port };
  entry.Checks = entry.Checks.map((check) => ({ ...check, CheckID: `service:${body.ID}`, ServiceID: body.ID, ServiceName: body.Name }));
  const watched = watchedOf(body.Name);
  watched.entries.set(body.ID, JSON.stringify(entry));
  watched.index = ++lastIndex;
  encode(watched);
  const woken = [...watched.held];
  watched.held.clear();
  for (const response of woken) answer(response, watched);
}

function health(request: IncomingMessage, response: ServerResponse): void {
  const url = request.url!;
  const question = url.indexOf('?');
  const name = decodeURIComponent(url.slice('/v1/health/service/'.length, question < 0 ? undefined : question));
  const watched = watchedOf(name);
  const index = question < 0 ? null : new URLSearchParams(url.slice(question + 1)).get('index');
  if (index === null || Number(index) !== watched.index) return answer(response, watched);
  watched.held.add(response);
  response.once('close', () => watched.held.delete(response));
}

createServer((request, response) => {
  const url = request.url ?? '/';
  if (request.method === 'GET' && url.startsWith('/v1/health/service/')) return health(request, response);
  if (request.method === 'PUT' && url === '/v1/agent/service/register') {
    let text = '';
    request.setEncoding('utf8');
    request.on('data', (chunk: string) => (text += chunk));
    request.on('end', () => {
      register(text);
      response.end();
    });
    return;
  }
  response.end('ok');
}).listen(port, '127.0.0.1');
