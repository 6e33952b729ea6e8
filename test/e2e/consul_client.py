"""Debian's python3-consul (0.7) against a registry peer's Consul API: register a service with a
TTL check, pass it, read it back with passing=True, then a blocking query that must wake when
a second instance registers. Run with /usr/bin/python3 (Debian's, where python3-consul lives).
Prints one JSON line with what it saw; exits non-zero on any failure."""
import json
import sys
import threading
import time

import consul

host, port = sys.argv[1], int(sys.argv[2])
c = consul.Consul(host=host, port=port)

c.agent.service.register('pyweb', service_id='py-1', address='127.0.0.1', port=9001,
                         tags=['py'], check=consul.Check.ttl('10s'))
c.agent.check.ttl_pass('service:py-1', notes='ok')
index, nodes = c.health.service('pyweb', passing=True)
first = [(n['Service']['ID'], n['Service']['Port'], n['Service']['Tags']) for n in nodes]


def second():
    time.sleep(0.3)
    c.agent.service.register('pyweb', service_id='py-2', address='127.0.0.1', port=9002,
                             check=consul.Check.ttl('10s'))
    c.agent.check.ttl_pass('service:py-2')


started = time.time()
threading.Thread(target=second).start()
woke_index, nodes = c.health.service('pyweb', index=index, wait='20s', passing=True)
# The first wake-up may be the register (py-2 still critical); wait on until it passes.
while len(nodes) < 2 and time.time() - started < 15:
    woke_index, nodes = c.health.service('pyweb', index=woke_index, wait='20s', passing=True)
elapsed = time.time() - started
services = c.agent.services()
c.agent.service.deregister('py-1')
c.agent.service.deregister('py-2')
print(json.dumps({
    'first': first,
    'index': index,
    'wokeIndex': woke_index,
    'afterWake': sorted(n['Service']['ID'] for n in nodes),
    'elapsedS': elapsed,
    'agentServices': sorted(services.keys()),
    'leader': c.status.leader(),
}))
