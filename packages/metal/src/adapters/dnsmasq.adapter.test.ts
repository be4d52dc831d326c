import { describe, expect, it } from 'vitest';
import { isFixedIpv4, renderDhcpHosts } from './dnsmasq.adapter';

/**
 * The fixed-address grammar (issue 24) on its own (issue 32: only 224.0.0.1 was ever tested):
 * every reserved range it refuses, at its edges, and the unicast addresses around them that it
 * accepts. Literal tables: what a worker's fixed address may be.
 */
describe('isFixedIpv4', () => {
  const refused = [
    // 0/8: "this network"
    '0.0.0.0', '0.1.2.3', '0.255.255.255',
    // 127/8: loopback
    '127.0.0.1', '127.0.0.0', '127.255.255.254',
    // 169.254/16: link-local (and the metadata service)
    '169.254.0.1', '169.254.169.254', '169.254.255.255',
    // 224/4 multicast, 240/4 reserved, the limited broadcast
    '224.0.0.1', '239.255.255.250', '240.0.0.1', '254.1.1.1', '255.255.255.255',
    // not a dotted quad
    '10.0.0', '10.0.0.256', '010.0.0.1', '10.0.0.1 ', '0x0a.0.0.1', '::ffff:10.0.0.1', '', 167772161,
  ];
  const accepted = ['1.0.0.1', '10.0.0.1', '126.255.255.255', '128.0.0.1', '169.253.255.255', '169.255.0.1', '192.168.80.3', '223.255.255.254'];

  it('refuses 0/8, 127/8, 169.254/16, multicast and above, the broadcast address, and what is not a dotted quad', () => {
    for (const a of refused) expect(isFixedIpv4(a), String(a)).toBe(false);
  });

  it('accepts the unicast addresses next to those ranges', () => {
    for (const a of accepted) expect(isFixedIpv4(a), a).toBe(true);
  });

  it('keeps a record with a reserved fixed address out of dhcp-hosts.conf, naming the field', () => {
    const { text, refused: out } = renderDhcpHosts([
      { mac: '52:54:00:32:01:01', hostname: 'node-a', ipv4: '127.0.0.1' },
      { mac: '52:54:00:32:01:02', hostname: 'node-b', ipv4: '192.168.80.3' },
    ]);
    expect(out).toEqual([{ subject: '52:54:00:32:01:01,node-a', fields: ['ipv4'] }]);
    expect(text).not.toContain('node-a');
    expect(text).toContain('52:54:00:32:01:02');
  });
});
