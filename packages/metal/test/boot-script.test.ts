// biome-ignore-all lint/suspicious/noTemplateCurlyInString: the strings are iPXE script, where ${...} is its own syntax
import { readFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';
import { MENU_ITEMS, OS_VALUES } from '../src/domain/identifiers';

/**
 * The shipped iPXE script against the control plane's rules. The end-to-end test boots
 * it for real; these checks catch drift in a second: a `menu_default` the API accepts
 * but the menu lacks would make iPXE's `choose --default` silently pick the first item.
 */

const script = readFileSync(join(dirname(fileURLToPath(import.meta.url)), '..', 'assets', 'boot.ipxe'), 'utf8');
const lines = script.split('\n').map((l) => l.trim());
const items = lines.filter((l) => l.startsWith('item ') && !l.startsWith('item --')).map((l) => l.split(/\s+/)[1]);
const labels = new Set(lines.filter((l) => l.startsWith(':')).map((l) => l.slice(1)));
const gotos = lines.flatMap((l) => [...l.matchAll(/goto (\S+)/g)].map((m) => m[1])).filter((t) => !t.includes('${'));

describe('boot.ipxe', () => {
  it('is an iPXE script', () => {
    expect(lines[0]).toBe('#!ipxe');
  });

  it('offers exactly the menu items menu_default may name, each with a label', () => {
    const main = items.slice(0, items.indexOf('exit') + 1);
    expect([...main].sort()).toEqual([...MENU_ITEMS].sort());
    for (const id of MENU_ITEMS) expect(labels, `label :${id}`).toContain(id);
  });

  it('sanboots each operating system item from <base-iqn>:<hostname>.<os> with the projected separator', () => {
    for (const os of OS_VALUES) expect(labels).toContain(os);
    expect(script).toContain('set root-path iscsi:${iscsi-server}${iscsi-sep}${base-iqn}:${hostname}.${ironlens-os}');
    expect(script).toMatch(/sanboot \$\{root-path\} \|\| goto san-failed/);
  });

  it('reports the eleven fingerprint fields and the firmware it runs under, then asks for boot vars with the colon-form MAC', () => {
    const report = lines.find((l) => l.startsWith('chain --autofree ${cp-url}/devices/report?'));
    expect(report).toBeDefined();
    const query = report!.slice(report!.indexOf('?') + 1).split(' ')[0];
    const fields = query.split('&').map((kv) => kv.split('=')[0]);
    expect(fields).toEqual(['mac', 'uuid', 'manufacturer', 'product', 'serial', 'cpumodel', 'mem-total', 'mem-type', 'mem-speed', 'chip', 'busid', 'platform']);
    expect(query).toContain('&platform=${platform}');
    const reportAt = lines.indexOf(report!);
    const varsAt = lines.findIndex((l) => l.startsWith('chain --autofree ${cp-url}/boot-vars?mac=${ironlens-mac}&hostname=${hostname} '));
    expect(varsAt).toBeGreaterThan(reportAt);
    expect(script).not.toContain(':hexraw}&hostname');
    expect(lines.find((l) => l.startsWith('set ironlens-mac'))).toBe('set ironlens-mac ${netX/mac}');
  });

  it('jumps only to labels that exist', () => {
    for (const target of gotos) expect(labels, `goto ${target}`).toContain(target);
  });

  it('lets a first stage inject the control plane address', () => {
    expect(lines).toContain('isset ${cp-url} || set cp-url http://${next-server}:4839');
  });
});
