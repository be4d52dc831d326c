import { checkBmcInput } from '../domain/power';
import { AppError, echo, isAppError, UNSAFE_TEXT_CLASS } from '@ironlens/core';
import YAML from 'yaml';
import {
  isIqn,
  isIscsiServer,
  isPlatform,
  isValidArch,
  isValidId,
  normalizeMac,
  OS_VALUES,
  requireHostname,
  requireMac,
  requireMenuItem,
  requireMenuTimeout,
  requireOs,
  requireWorkerId,
} from '../domain/identifiers';
import { normalizeBaseUrl } from './agent.service';

/** The texts of the old layout's files, as read (null: the file is absent). */
export interface LayoutTexts {
  agents: string | null;
  workers: string | null;
  devices: string | null;
  settings: string | null;
  operations: string | null;
  dhcpHosts: string | null;
}

/** The old deployment's files, relative to its root directory (seed 004 §2), as the export writes them and the import's error messages name them. */
export const LAYOUT = {
  agents: 'config/agents.yml',
  workers: 'state/workers.yml',
  devices: 'state/devices.yml',
  settings: 'state/settings.json',
  operations: 'state/operations.jsonl',
  dhcpHosts: 'dnsmasq/dhcp-hosts.conf',
} as const;

/** The settings `ironlens import` takes from `settings.json`, each with its check. */
export const IMPORTABLE_SETTINGS: Record<string, { expected: string; ok: (v: unknown) => boolean }> = {
  auto_register: { expected: 'true or false', ok: (v) => typeof v === 'boolean' },
  auto_register_until: { expected: 'a timestamp or null', ok: (v) => v === null || (typeof v === 'string' && TIMESTAMP.test(v)) },
  // POST /settings/registration-window (the seed control plane's current WebUI keeps it here too).
  registration_window: {
    expected: '{"opened_at": timestamp, "ttl_minutes": 1-60} or null',
    ok: (v) => {
      if (v === null) return true;
      if (!isObject(v) || Object.keys(v).sort().join() !== 'opened_at,ttl_minutes') return false;
      return typeof v.opened_at === 'string' && TIMESTAMP.test(v.opened_at) && Number.isInteger(v.ttl_minutes) && (v.ttl_minutes as number) >= 1 && (v.ttl_minutes as number) <= 60;
    },
  },
};

const WORKER_STATES = ['registered', 'ready', 'installing'];
const DEVICE_STATES = ['pooled', 'bound', 'revoked'];
const FINGERPRINT_TEXT = ['manufacturer', 'product', 'serial', 'cpumodel', 'mem_type', 'chip', 'busid'];
const FINGERPRINT_INT = ['mem_total', 'mem_speed'];
/** A file name in an agent's image directory: one path component (the agent's own grammar). */
const IMAGE_FILE = /^[A-Za-z0-9_][A-Za-z0-9._-]{0,199}$/;
/** An absolute path an agent reported: printable, no line break, no `..` component. */
const BACKING = /^\/[\x21-\x7e]{0,4095}$/;
const SIZE = /^\d{1,16}\s*([KMGT](iB)?)?$/i;
/** Timestamps as the seed writes them (`2026-07-27T14:20:00+00:00`), or with `Z`/fraction. */
const TIMESTAMP = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}(\.\d{1,9})?(Z|[+-]\d{2}:\d{2})$/;
/** Free text from a machine's firmware (fingerprints, UUIDs): no control or bidirectional formatting character (core's one definition), at most 256. */
const TEXT = new RegExp(`^[^${UNSAFE_TEXT_CLASS}]{0,256}$`, 'u');

type Doc = Record<string, unknown>;

/** Where a violation is: file, record (its key or line), field. */
class Place {
  constructor(
    readonly file: string,
    readonly record: string,
  ) {}

  fail(field: string, why: string): never {
    throw new AppError('import_invalid', `${this.file}: ${this.record}: ${field}: ${why}`, { file: this.file, record: this.record, field });
  }

  /** Runs the API's own check; its refusal becomes this record's violation. */
  check<T>(field: string, f: () => T): T {
    try {
      return f();
    } catch (err) {
      if (isAppError(err)) this.fail(field, err.message);
      throw err;
    }
  }
}

const isObject = (v: unknown): v is Doc => typeof v === 'object' && v !== null && !Array.isArray(v);
const absent = (v: unknown) => v === undefined || v === null;

function parseYaml(file: string, text: string | null, key: string): Record<string, unknown> {
  if (text === null) return {};
  let doc: unknown;
  try {
    doc = YAML.parse(text);
  } catch (err) {
    throw new AppError('import_invalid', `${file}: not YAML: ${(err as Error).message.split('\n')[0]}`, { file, record: null, field: null });
  }
  if (absent(doc)) return {};
  const place: Place = new Place(file, 'document');
  if (!isObject(doc)) place.fail(key, 'expected a mapping at the top level');
  const inner = doc[key];
  if (absent(inner)) return {};
  if (!isObject(inner)) place.fail(key, `expected a mapping of ${key} by id`);
  return inner;
}

/** For the parts kept whole as JSON (a CD, a disk's source, a fingerprint): no field the API would not write. Elsewhere an unknown field is not imported, so it is left alone. */
function onlyKeys(place: Place, doc: Doc, allowed: string[]): void {
  for (const k of Object.keys(doc)) if (!allowed.includes(k)) place.fail(k, 'unknown field');
}

function text(place: Place, field: string, v: unknown, re: RegExp = TEXT): void {
  if (typeof v !== 'string' || !re.test(v)) place.fail(field, `invalid value ${echo(v)}`);
}

function agentsOf(texts: LayoutTexts): Set<string> {
  const ids = new Set<string>();
  for (const [key, a] of Object.entries(parseYaml(LAYOUT.agents, texts.agents, 'agents'))) {
    const place: Place = new Place(LAYOUT.agents, `agent ${echo(key)}`);
    const id = key.toLowerCase();
    if (!isValidId(id)) place.fail('id', `invalid agent id ${echo(key)} (letters, digits, dot, underscore, hyphen)`);
    if (ids.has(id)) place.fail('id', 'duplicate agent id');
    ids.add(id);
    if (!isObject(a)) place.fail('agent', 'expected a mapping');
    place.check('base_url', () => normalizeBaseUrl(a.base_url));
    if (!absent(a.token)) text(place, 'token', a.token, /^[^\p{Cc}\p{Zl}\p{Zp}]{1,4096}$/u);
    if (!absent(a.iscsi_server) && !isIscsiServer(a.iscsi_server)) place.fail('iscsi_server', `invalid iSCSI server ${echo(a.iscsi_server)}`);
    if (!absent(a.role)) {
      if (!isObject(a.role)) place.fail('role', 'expected {disk: bool, cd: bool}');
      for (const r of ['disk', 'cd']) if (!absent(a.role[r]) && typeof a.role[r] !== 'boolean') place.fail(`role.${r}`, `expected true or false, got ${echo(a.role[r])}`);
    }
    if (!absent(a.tags)) {
      if (!Array.isArray(a.tags)) place.fail('tags', 'expected a list of strings');
      for (const [i, t] of a.tags.entries()) text(place, `tags[${i}]`, t, /^[^\p{Cc}\p{Zl}\p{Zp},]{1,64}$/u);
    }
    if (!absent(a.enabled) && typeof a.enabled !== 'boolean') place.fail('enabled', `expected true or false, got ${echo(a.enabled)}`);
  }
  return ids;
}

function checkDisk(place: Place, field: string, d: unknown, agents: Set<string>): void {
  if (!isObject(d)) place.fail(field, 'expected a mapping');
  if (typeof d.agent !== 'string' || !agents.has(d.agent)) place.fail(`${field}.agent`, `not an agent of config/agents.yml: ${echo(d.agent)}`);
  if (!isIqn(d.iqn)) place.fail(`${field}.iqn`, `invalid IQN ${echo(d.iqn)}`);
  text(place, `${field}.filename`, d.filename, IMAGE_FILE);
  if (!absent(d.backing) && d.backing !== '') {
    text(place, `${field}.backing`, d.backing, BACKING);
    if ((d.backing as string).split('/').includes('..')) place.fail(`${field}.backing`, `invalid path ${echo(d.backing)}`);
  }
  const os = place.check(`${field}.os`, () => requireOs(d.os));
  if (os !== d.os) place.fail(`${field}.os`, `expected one of ${OS_VALUES.join(', ')} as written, got ${echo(d.os)}`);
  if (!absent(d.source)) {
    const s = d.source;
    if (!isObject(s)) place.fail(`${field}.source`, 'expected {type, name | size}');
    onlyKeys(place, s, ['type', 'name', 'size']);
    if (s.type !== 'master' && s.type !== 'empty') place.fail(`${field}.source.type`, `expected master or empty, got ${echo(s.type)}`);
    if (!absent(s.name)) text(place, `${field}.source.name`, s.name, IMAGE_FILE);
    if (!absent(s.size) && !SIZE.test(String(s.size))) place.fail(`${field}.source.size`, `invalid size ${echo(s.size)}`);
  }
}

function checkCd(place: Place, cd: unknown, agents: Set<string>): void {
  if (!isObject(cd)) place.fail('cd', 'expected a mapping or null');
  onlyKeys(place, cd, ['agent', 'iqn', 'iso', 'backing']);
  if (typeof cd.agent !== 'string' || !agents.has(cd.agent)) place.fail('cd.agent', `not an agent of config/agents.yml: ${echo(cd.agent)}`);
  if (!isIqn(cd.iqn)) place.fail('cd.iqn', `invalid IQN ${echo(cd.iqn)}`);
  text(place, 'cd.iso', cd.iso, IMAGE_FILE);
  if (!/\.iso$/i.test(cd.iso as string)) place.fail('cd.iso', `not an .iso file name: ${echo(cd.iso)}`);
  if (!absent(cd.backing) && cd.backing !== '') text(place, 'cd.backing', cd.backing, BACKING);
}

/** Worker records; returns worker id → hostname. */
function workersOf(texts: LayoutTexts, agents: Set<string>): Map<string, string> {
  const workers = new Map<string, string>();
  /** hostname → worker id. */
  const names = new Map<string, string>();
  for (const [key, w] of Object.entries(parseYaml(LAYOUT.workers, texts.workers, 'workers'))) {
    const place: Place = new Place(LAYOUT.workers, `worker ${echo(key)}`);
    const id = place.check('worker_id', () => requireWorkerId(key));
    if (id !== key.toLowerCase()) place.fail('worker_id', `invalid worker id ${echo(key)}`);
    if (workers.has(id)) place.fail('worker_id', 'duplicate worker id');
    if (!isObject(w)) place.fail('worker', 'expected a mapping');
    if (!absent(w.worker_id) && String(w.worker_id).toLowerCase() !== id) place.fail('worker_id', `differs from its key: ${echo(w.worker_id)}`);
    const hostname = absent(w.hostname) ? id : place.check('hostname', () => requireHostname(w.hostname));
    if (!absent(w.hostname) && hostname !== String(w.hostname).toLowerCase()) place.fail('hostname', `invalid hostname ${echo(w.hostname)}`);
    const clash = names.get(hostname) ?? (workers.has(hostname) ? hostname : undefined) ?? names.get(id);
    if (clash !== undefined) place.fail('hostname', `${echo(hostname)} clashes with worker ${echo(clash)}'s id or hostname`);
    if (!absent(w.arch) && !isValidArch(w.arch)) place.fail('arch', `invalid arch ${echo(w.arch)} (lower-case letters, digits, '_' and '-', at most 32)`);
    if (!absent(w.state) && !WORKER_STATES.includes(w.state as string)) place.fail('state', `expected one of ${WORKER_STATES.join(', ')}, got ${echo(w.state)}`);
    if (!absent(w.default_os)) place.check('default_os', () => requireOs(w.default_os));
    if (!absent(w.boot)) {
      if (!isObject(w.boot)) place.fail('boot', 'expected {menu_default, menu_timeout}');
      if (!absent(w.boot.menu_default)) {
        const item = place.check('boot.menu_default', () => requireMenuItem(w.boot && (w.boot as Doc).menu_default));
        if (item !== w.boot.menu_default) place.fail('boot.menu_default', `invalid menu_default ${echo(w.boot.menu_default)}`);
      }
      if (!absent(w.boot.menu_timeout)) place.check('boot.menu_timeout', () => requireMenuTimeout((w.boot as Doc).menu_timeout));
    }
    if (!absent(w.disks)) {
      if (!Array.isArray(w.disks)) place.fail('disks', 'expected a list');
      for (const [i, d] of w.disks.entries()) checkDisk(place, `disks[${i}]`, d, agents);
    }
    if (!absent(w.cd)) checkCd(place, w.cd, agents);
    workers.set(id, hostname);
    names.set(hostname, id);
  }
  return workers;
}

function devicesOf(texts: LayoutTexts, workers: Map<string, string>, bmcAllowLinkLocal: boolean): Set<string> {
  const macs = new Set<string>();
  const boundTo = new Map<string, string>();
  for (const [key, d] of Object.entries(parseYaml(LAYOUT.devices, texts.devices, 'devices'))) {
    const place: Place = new Place(LAYOUT.devices, `device ${echo(key)}`);
    if (!isObject(d)) place.fail('device', 'expected a mapping');
    const mac = place.check('mac', () => requireMac(absent(d.mac) ? key : d.mac));
    if (!absent(d.mac) && normalizeMac(key) !== mac) place.fail('mac', `differs from its key: ${echo(d.mac)}`);
    if (macs.has(mac)) place.fail('mac', 'duplicate MAC');
    macs.add(mac);
    const state = absent(d.state) ? 'pooled' : d.state;
    if (!DEVICE_STATES.includes(state as string)) place.fail('state', `expected one of ${DEVICE_STATES.join(', ')}, got ${echo(d.state)}`);
    if (state === 'bound') {
      if (typeof d.bound_worker_id !== 'string' || !workers.has(d.bound_worker_id)) place.fail('bound_worker_id', `not a worker of state/workers.yml: ${echo(d.bound_worker_id)}`);
      const other = boundTo.get(d.bound_worker_id);
      if (other) place.fail('bound_worker_id', `worker ${d.bound_worker_id} is already bound to ${other}`);
      boundTo.set(d.bound_worker_id, mac);
    } else if (!absent(d.bound_worker_id)) {
      place.fail('bound_worker_id', `a ${String(state)} device is bound to no worker`);
    }
    if (!absent(d.uuid)) text(place, 'uuid', d.uuid);
    if (!absent(d.key_hash)) text(place, 'key_hash', d.key_hash);
    if (!absent(d.source) && d.source !== 'ipxe' && d.source !== 'manual') place.fail('source', `expected ipxe or manual, got ${echo(d.source)}`);
    for (const t of ['first_seen', 'last_seen']) if (!absent(d[t])) text(place, t, d[t] instanceof Date ? d[t].toISOString() : d[t], TIMESTAMP);
    if (!absent(d.bmc)) {
      // The API's own check (issue 21); a sealed password is opened (and refused) by the import itself.
      const b = d.bmc;
      if (!isObject(b)) place.fail('bmc', 'expected a mapping');
      onlyKeys(place, b, ['driver', 'url', 'verify_tls', 'host', 'port', 'cipher_suite', 'username', 'password', 'password_sealed']);
      if (!absent(b.password_sealed) && (typeof b.password_sealed !== 'string' || !b.password_sealed.startsWith('v1:'))) place.fail('bmc.password_sealed', 'expected a sealed value (v1:…)');
      const { password_sealed: _sealed, ...plain } = b;
      place.check('bmc', () => checkBmcInput(plain, null, { allowNoPassword: true, allowLinkLocal: bmcAllowLinkLocal }));
    }
    if (!absent(d.fingerprint)) {
      const fp = d.fingerprint;
      if (!isObject(fp)) place.fail('fingerprint', 'expected a mapping');
      onlyKeys(place, fp, [...FINGERPRINT_TEXT, ...FINGERPRINT_INT, 'platform']);
      if (!absent(fp.platform) && !isPlatform(fp.platform)) place.fail('fingerprint.platform', `expected pcbios or efi, got ${echo(fp.platform)}`);
      for (const k of FINGERPRINT_TEXT) if (!absent(fp[k])) text(place, `fingerprint.${k}`, fp[k]);
      for (const k of FINGERPRINT_INT) if (!absent(fp[k]) && !Number.isSafeInteger(fp[k])) place.fail(`fingerprint.${k}`, `expected an integer, got ${echo(fp[k])}`);
    }
  }
  return macs;
}

function settingsOf(texts: LayoutTexts): void {
  if (texts.settings === null) return;
  let doc: unknown;
  try {
    doc = JSON.parse(texts.settings);
  } catch {
    throw new AppError('import_invalid', `${LAYOUT.settings}: not JSON`, { file: LAYOUT.settings, record: null, field: null });
  }
  const place: Place = new Place(LAYOUT.settings, 'document');
  if (!isObject(doc)) place.fail('settings', 'expected an object');
  for (const [k, v] of Object.entries(doc)) {
    const check = IMPORTABLE_SETTINGS[k];
    if (!check) place.fail(k, `unknown setting (known: ${Object.keys(IMPORTABLE_SETTINGS).join(', ')})`);
    if (!check.ok(v)) place.fail(k, `expected ${check.expected}, got ${echo(v)}`);
  }
}

function operationsOf(texts: LayoutTexts): void {
  const ids = new Set<number>();
  (texts.operations ?? '').split('\n').forEach((line, i) => {
    if (!line.trim()) return;
    const place: Place = new Place(LAYOUT.operations, `line ${i + 1}`);
    let e: unknown;
    try {
      e = JSON.parse(line);
    } catch {
      place.fail('entry', 'not JSON');
    }
    if (!isObject(e)) place.fail('entry', 'expected a JSON object');
    if (!Number.isSafeInteger(e.id) || (e.id as number) < 1) place.fail('id', `expected a positive integer, got ${echo(e.id)}`);
    if (ids.has(e.id as number)) place.fail('id', `duplicate id ${e.id}`);
    ids.add(e.id as number);
    text(place, 'ts', e.ts, TIMESTAMP);
    text(place, 'op', e.op, /^[a-z][a-z0-9_.-]{0,63}$/);
    if (!absent(e.status)) text(place, 'status', e.status, /^[a-z][a-z0-9_-]{0,31}$/);
    if (!absent(e.mac)) place.check('mac', () => requireMac(e.mac));
    if (!absent(e.worker_id)) place.check('worker_id', () => requireWorkerId(e.worker_id));
  });
}

function dhcpHostsOf(texts: LayoutTexts): void {
  (texts.dhcpHosts ?? '').split('\n').forEach((raw, i) => {
    const line = raw.trim();
    if (!line || line.startsWith('#')) return;
    const place: Place = new Place(LAYOUT.dhcpHosts, `line ${i + 1}`);
    const fields = line.split(',');
    if (fields.length !== 2) place.fail('line', `expected mac,hostname, got ${echo(line)}`);
    place.check('mac', () => requireMac(fields[0].trim()));
    const h = place.check('hostname', () => requireHostname(fields[1].trim()));
    if (h !== fields[1].trim().toLowerCase()) place.fail('hostname', `invalid hostname ${echo(fields[1])}`);
  });
}

/**
 * Checks every record of the old file layout with the API's own grammars before
 * `ironlens import` writes anything: the first violation refuses the whole import with
 * 400 `import_invalid`, naming the file, the record and the field (`extra`: `file`,
 * `record`, `field`). Values the import would otherwise store and later render
 * (hostnames, arch, IQNs, menu settings, MACs) can then never carry a line break, a
 * dnsmasq tag or an iPXE command. `bmcAllowLinkLocal`: `IRONLENS_BMC_ALLOW_LINK_LOCAL`; default is `false`.
 */
export function validateImportLayout(texts: LayoutTexts, opts: { bmcAllowLinkLocal?: boolean } = {}): void {
  const agents = agentsOf(texts);
  const workers = workersOf(texts, agents);
  devicesOf(texts, workers, opts.bmcAllowLinkLocal === true);
  settingsOf(texts);
  operationsOf(texts);
  dhcpHostsOf(texts);
}
