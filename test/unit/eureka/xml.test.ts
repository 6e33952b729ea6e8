import { describe, expect, it } from 'vitest';
import { decodeMetadataName, encodeMetadataName, fromXml, toXml } from '../../../src/eureka/xml.js';
import { expectRegistryError } from '../../support/errors.js';

describe('toXml', () => {
  it('writes attributes, text, repeated elements, self-closing empties and Eureka names', () => {
    const xml = toXml({
      applications: {
        versions__delta: '1',
        application: [
          { name: 'A', instance: [{ port: { $: 80, '@enabled': 'true' }, overriddenStatus: 'UNKNOWN' }, { status: 'UP' }] },
          { name: 'B', instance: [] },
        ],
      },
    });
    expect(xml).toBe(
      '<applications><versions__delta>1</versions__delta>' +
        '<application><name>A</name>' +
        '<instance><port enabled="true">80</port><overriddenstatus>UNKNOWN</overriddenstatus></instance>' +
        '<instance><status>UP</status></instance></application>' +
        '<application><name>B</name></application></applications>',
    );
  });

  it('escapes text and attributes', () => {
    expect(toXml({ a: { '@x': '"<&>\'', b: 'a<b&c' } })).toBe('<a x="&quot;&lt;&amp;&gt;&apos;"><b>a&lt;b&amp;c</b></a>');
  });

  it('codes metadata keys as XStream does and leaves out keys that cannot be element names', () => {
    const xml = toXml({ metadata: { my_key: 'a', 'cost$': 'b', 'with space': 'c', '1st': 'd', 'management.port': '8080' } });
    expect(xml).toBe('<metadata><my__key>a</my__key><cost_->b</cost_-><management.port>8080</management.port></metadata>');
  });

  it('writes an empty metadata map with its Java class and nothing else', () => {
    expect(toXml({ metadata: { '@class': 'java.util.Collections$EmptyMap' } })).toBe(
      '<metadata class="java.util.Collections$EmptyMap"/>',
    );
  });
});

describe('fromXml', () => {
  it('reads a Java client register body into the JSON shape', () => {
    const body = fromXml(`<?xml version="1.0" encoding="UTF-8"?>
      <instance>
        <instanceId>svc:1</instanceId>
        <hostName>h &amp; co</hostName>
        <port enabled="true">8083</port>
        <securePort enabled="false">443</securePort>
        <dataCenterInfo class="com.netflix.appinfo.InstanceInfo$DefaultDataCenterInfo"><name>MyOwn</name></dataCenterInfo>
        <metadata><my__key>v</my__key><a_-b>w</a_-b></metadata>
        <vipAddress/>
      </instance>`);
    expect(body).toEqual({
      instance: {
        instanceId: 'svc:1',
        hostName: 'h & co',
        port: { $: '8083', '@enabled': 'true' },
        securePort: { $: '443', '@enabled': 'false' },
        dataCenterInfo: { '@class': 'com.netflix.appinfo.InstanceInfo$DefaultDataCenterInfo', name: 'MyOwn' },
        metadata: { my_key: 'v', a$b: 'w' },
        vipAddress: '',
      },
    });
  });

  it.each([
    ['<instance><a></instance>'],
    ['<instance>'],
    ['<!DOCTYPE x [<!ENTITY a "aaaa">]><instance>&a;</instance>'],
    ['<instance><__proto__><x>1</x></__proto__></instance>'],
  ])('refuses %s with REG_ERR_INVALID_XML', (text) => {
    expectRegistryError(() => fromXml(text), 'REG_ERR_INVALID_XML');
    expect(({} as Record<string, unknown>).x).toBeUndefined();
  });

  it('round-trips metadata names', () => {
    for (const name of ['a_b', 'a$b', 'a__b', '_x$_']) expect(decodeMetadataName(encodeMetadataName(name))).toBe(name);
  });
});
