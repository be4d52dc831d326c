/**
 * The benchmark's fleet, defined once: worker `i` (1-based) has a hostname, a MAC and one
 * ubuntu system disk on a single stgt agent. The seeder, the reference servers and the
 * wrk path list all derive from these functions, so every server answers the same text.
 */
import { renderBootVarsScript, STGT_SEP } from '@ironlens/metal';

export const AGENT = { id: 'stor-1', base_url: 'http://127.0.0.1:4840', iscsi_server: '10.0.0.10', tags: ['storage', 'stgt'] };
export const BASE_IQN = 'iqn.2024-01.io.ironlens';
/** `IPXE_CP_BOOT_MENU_TIMEOUT`'s default: what a worker with a default OS gets. */
export const MENU_TIMEOUT = 5000;

export const hostnameOf = (i: number): string => `worker-${String(i).padStart(5, '0')}`;

/** Locally administered MACs: 02:00:00:00:HH:LL. */
export function macOf(i: number): string {
  const hex = (0x020000000000 + i).toString(16).padStart(12, '0');
  return hex.match(/../g)!.join(':');
}

export const iqnOf = (i: number): string => `${BASE_IQN}:${hostnameOf(i)}.ubuntu`;

/** The exact iPXE text ironlens must answer for worker `i` (also what nginx and bare node serve). */
export function bootScriptOf(i: number): string {
  return renderBootVarsScript({
    subject: hostnameOf(i),
    vars: { base_iqn: BASE_IQN, iscsi_server: AGENT.iscsi_server, iscsi_sep: STGT_SEP, menu_default: 'ubuntu', menu_timeout: MENU_TIMEOUT },
  });
}

export const REPORT_TEXT = '#!ipxe\n';

/** What iPXE's `chain` of menu.ipxe sends: MAC (with colons, as iPXE's ${net0/mac}) and hostname. */
export const bootVarsPath = (i: number): string => `/boot-vars?mac=${macOf(i)}&hostname=${hostnameOf(i)}`;

/** iPXE's device report: the 11 fingerprint fields, URL-encoded as iPXE's `${...:uristring}` does. */
export function reportPath(i: number): string {
  const q = new URLSearchParams({
    mac: macOf(i),
    uuid: `4c4c4544-0000-1000-8000-${String(i).padStart(12, '0')}`,
    manufacturer: 'ASUSTeK COMPUTER INC.',
    product: 'PRIME B650M-A',
    serial: `SN${String(i).padStart(8, '0')}`,
    cpumodel: 'AMD Ryzen 7 7700',
    'mem-total': '0x8000',
    'mem-type': 'DDR5',
    'mem-speed': '5600',
    chip: 'RTL8125',
    busid: '0110ec8125',
  });
  return `/devices/report?${q.toString().replace(/\+/g, '%20')}`;
}
