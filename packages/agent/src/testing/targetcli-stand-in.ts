import { chmodSync, existsSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';

/**
 * A stand-in for `targetcli` (LIO cannot run here: no configfs). It answers the commands
 * the agent uses as targetcli-fb does (same paths, arguments, `ls` tree and error
 * messages, non-zero exit on error; node ACLs with `add_mapped_luns` and the
 * `auto_add_mapped_luns` default, mapped LUNs with targetcli's reading of
 * `write_protect`), keeps its state in a JSON file, and records every
 * argv as one JSON line. Setting TARGETCLI_STANDIN_FAIL to a substring of a command line
 * makes that command fail, to test rollbacks.
 */
const SCRIPT = String.raw`#!/usr/bin/env node
const fs = require('node:fs');
const dir = process.env.TARGETCLI_STANDIN_DIR;
const stateFile = dir + '/state.json';
const args = process.argv.slice(2);
fs.appendFileSync(dir + '/calls.jsonl', JSON.stringify(args) + '\n');
const state = fs.existsSync(stateFile) ? JSON.parse(fs.readFileSync(stateFile, 'utf8')) : { backstores: {}, targets: {} };
const save = () => fs.writeFileSync(stateFile, JSON.stringify(state, null, 2));
const fail = (msg) => { process.stdout.write(msg + '\n'); process.exit(255); };
const line = args.join(' ');
if (process.env.TARGETCLI_STANDIN_FAIL && line.includes(process.env.TARGETCLI_STANDIN_FAIL)) fail('Injected failure for: ' + line);
const kv = (list) => { const o = {}; const pos = []; for (const a of list) { const i = a.indexOf('='); if (i > 0) o[a.slice(0, i)] = a.slice(i + 1); else pos.push(a); } return [o, pos]; };
const dots = (left, right) => left + ' ' + '.'.repeat(Math.max(1, 100 - left.length - right.length)) + ' ' + right;
function ls() {
  const out = [];
  const iqns = Object.keys(state.targets).sort();
  out.push(dots('o- iscsi', '[Targets: ' + iqns.length + ']'));
  for (const iqn of iqns) {
    const t = state.targets[iqn];
    out.push(dots('  o- ' + iqn, '[TPGs: 1]'));
    const gen = t.attributes.generate_node_acls === '1' ? 'gen-acls' : 'no-gen-acls';
    out.push(dots('  | o- tpg1', '[' + gen + ', ' + (t.attributes.authentication === '1' ? 'auth per-acl' : 'no-auth') + ']'));
    const acls = Object.keys(t.acls).sort();
    out.push(dots('  |   o- acls', '[ACLs: ' + acls.length + ']'));
    for (const wwn of acls) {
      const mapped = t.acls[wwn];
      out.push(dots('  |   | o- ' + wwn, '[Mapped LUNs: ' + mapped.length + ']'));
      for (const m of mapped) {
        const l = t.luns.find((x) => x.lun === m.tpg_lun);
        out.push(dots('  |   |   o- mapped_lun' + m.mapped_lun, '[lun' + m.tpg_lun + ' fileio/' + (l ? l.so : '?') + ' (' + (m.write_protect ? 'ro' : 'rw') + ')]'));
      }
    }
    out.push(dots('  |   o- luns', '[LUNs: ' + t.luns.length + ']'));
    for (const l of t.luns) {
      const so = state.backstores[l.so];
      const desc = so ? 'fileio/' + l.so + ' (' + so.path + ') write-back (default_tg_pt_gp)' : 'BROKEN STORAGE LINK';
      out.push(dots('  |   | o- lun' + l.lun, '[' + desc + ']'));
    }
    out.push(dots('  |   o- portals', '[Portals: 1]'));
    out.push(dots('  |     o- 0.0.0.0:3260', '[OK]'));
  }
  process.stdout.write(out.join('\n') + '\n');
}
const [path, cmd, ...rest] = args;
if (path === 'saveconfig' && args.length === 1) { process.stdout.write('Configuration saved to /etc/target/saveconfig.json\n'); process.exit(0); }
if ((path === '/iscsi' && cmd === 'ls' && rest.length === 0) || (path === 'ls' && cmd === '/iscsi')) { ls(); process.exit(0); }
if (path === '/backstores/fileio' && cmd === 'create') {
  const [o, pos] = kv(rest);
  const name = o.name ?? pos[0];
  const file = o.file_or_dev ?? pos[1];
  if (!name || !file) fail('Missing required parameters');
  if (state.backstores[name]) fail('Storage object fileio/' + name + ' exists');
  if (!fs.existsSync(file) && !(o.size ?? pos[2])) fail('Attempting to create file for new fileio backstore, need a size');
  state.backstores[name] = { path: file };
  save();
  process.stdout.write('Created fileio ' + name + ' with size ' + fs.statSync(file).size + '\n');
  process.exit(0);
}
if (path === '/backstores/fileio' && cmd === 'delete' && rest.length === 1) {
  if (!state.backstores[rest[0]]) fail('No storage object named ' + rest[0] + '.');
  delete state.backstores[rest[0]];
  for (const t of Object.values(state.targets)) {
    const gone = t.luns.filter((l) => l.so === rest[0]).map((l) => l.lun);
    t.luns = t.luns.filter((l) => l.so !== rest[0]);
    for (const wwn of Object.keys(t.acls)) t.acls[wwn] = t.acls[wwn].filter((m) => !gone.includes(m.tpg_lun));
  }
  save();
  process.stdout.write('Deleted storage object ' + rest[0] + '.\n');
  process.exit(0);
}
if (path === '/iscsi' && cmd === 'create' && rest.length === 1) {
  if (state.targets[rest[0]]) fail('This Target already exists in configFS');
  state.targets[rest[0]] = { luns: [], attributes: {}, acls: {} };
  save();
  process.stdout.write('Created target ' + rest[0] + '.\nCreated TPG 1.\nGlobal pref auto_add_default_portal=true\nCreated default portal listening on all IPs (0.0.0.0), port 3260.\n');
  process.exit(0);
}
if (path === '/iscsi' && cmd === 'delete' && rest.length === 1) {
  if (!state.targets[rest[0]]) fail('No such Target in configfs: /sys/kernel/config/target/iscsi/' + rest[0]);
  delete state.targets[rest[0]];
  save();
  process.stdout.write('Deleted Target ' + rest[0] + '.\n');
  process.exit(0);
}
let m = /^\/iscsi\/([^/]+)\/tpg1\/luns$/.exec(path || '');
if (m && cmd === 'create' && rest.length === 1) {
  const t = state.targets[m[1]];
  if (!t) fail('No such path /iscsi/' + m[1]);
  const so = /^\/backstores\/fileio\/(.+)$/.exec(rest[0]);
  if (!so || !state.backstores[so[1]]) fail('Invalid storage object ' + rest[0] + '.');
  const lun = t.luns.length ? Math.max(...t.luns.map((l) => l.lun)) + 1 : 0;
  t.luns.push({ lun, so: so[1] });
  process.stdout.write('Created LUN ' + lun + '.\n');
  // The auto_add_mapped_luns preference (default true) maps a new LUN into every node ACL.
  for (const [wwn, mapped] of Object.entries(t.acls)) {
    const taken = (n) => mapped.some((x) => x.mapped_lun === n);
    let ml = lun;
    if (taken(ml)) for (ml = 0; taken(ml); ml++);
    mapped.push({ mapped_lun: ml, tpg_lun: lun, write_protect: false });
    process.stdout.write('Created LUN ' + lun + '->' + ml + ' mapping in node ACL ' + wwn + '\n');
  }
  save();
  process.exit(0);
}
m = /^\/iscsi\/([^/]+)\/tpg1\/acls$/.exec(path || '');
if (m && cmd === 'create' && rest.length >= 1) {
  const t = state.targets[m[1]];
  if (!t) fail('No such path /iscsi/' + m[1] + '/tpg1/acls');
  const [o, pos] = kv(rest);
  const wwn = o.wwn ?? pos[0];
  if (!wwn || !/^iqn\.\d{4}-[01]\d\.[^\s_]+$/.test(wwn)) fail('WWN not valid as: iqn');
  if (t.acls[wwn]) fail('This NodeACL already exists in configFS');
  const add = o.add_mapped_luns ?? pos[1] ?? 'true';
  t.acls[wwn] = [];
  process.stdout.write('Created Node ACL for ' + wwn + '\n');
  if (add === 'true') {
    for (const l of t.luns) {
      t.acls[wwn].push({ mapped_lun: l.lun, tpg_lun: l.lun, write_protect: false });
      process.stdout.write('Created mapped LUN ' + l.lun + '.\n');
    }
  }
  save();
  process.exit(0);
}
m = /^\/iscsi\/([^/]+)\/tpg1\/acls\/([^/]+)$/.exec(path || '');
if (m && cmd === 'create' && rest.length >= 2) {
  const t = state.targets[m[1]];
  if (!t || !t.acls[m[2]]) fail('No such path ' + path);
  const [o, pos] = kv(rest);
  const mapped = Number(o.mapped_lun ?? pos[0]);
  const tpgLun = Number(String(o.tpg_lun_or_backstore ?? o.tpg_lun ?? pos[1]).replace(/^lun/, ''));
  if (!Number.isInteger(mapped) || !Number.isInteger(tpgLun)) fail('mapped_lun must be an integer');
  if (!t.luns.some((l) => l.lun === tpgLun)) fail('LUN, storage object, or path not valid');
  if (t.acls[m[2]].some((x) => x.mapped_lun === mapped)) fail('This MappedLUN already exists in configFS');
  // Like targetcli: write_protect is handed on as given, and any non-empty value protects.
  const wp = o.write_protect ?? pos[2];
  t.acls[m[2]].push({ mapped_lun: mapped, tpg_lun: tpgLun, write_protect: Boolean(wp) });
  save();
  process.stdout.write('Created Mapped LUN ' + mapped + '.\n');
  process.exit(0);
}
m = /^\/iscsi\/([^/]+)\/tpg1\/acls\/([^/]+)$/.exec(path || '');
if (m && (cmd === 'set' || cmd === 'get') && rest[0] === 'auth') {
  const t = state.targets[m[1]];
  if (!t || !t.acls[m[2]]) fail('No such path ' + path);
  t.auth = t.auth || {};
  const a = (t.auth[m[2]] = t.auth[m[2]] || { userid: '', password: '' });
  if (cmd === 'get') { for (const k of rest.slice(1)) process.stdout.write(k + '=' + (a[k] ?? '') + '\n'); process.exit(0); }
  const [o, pos] = kv(rest.slice(1));
  if (pos.length) fail('Invalid parameter ' + pos[0]);
  for (const [k, v] of Object.entries(o)) { if (!(k in a)) fail('Unknown auth parameter ' + k); a[k] = v; process.stdout.write('Parameter ' + k + ' is now \'' + v + '\'.\n'); }
  save();
  process.exit(0);
}
m = /^\/iscsi\/([^/]+)\/tpg1$/.exec(path || '');
if (m && cmd === 'set' && rest[0] === 'attribute' && rest.length > 1) {
  const t = state.targets[m[1]];
  if (!t) fail('No such path /iscsi/' + m[1] + '/tpg1');
  const [o, pos] = kv(rest.slice(1));
  if (pos.length) fail('Invalid parameter ' + pos[0]);
  for (const [k, v] of Object.entries(o)) { t.attributes[k] = v; process.stdout.write('Parameter ' + k + ' is now \'' + v + '\'.\n'); }
  save();
  process.exit(0);
}
fail('Command not found ' + line);
`;

export interface TargetcliStandIn {
  /** Directory to put first on PATH. */
  binDir: string;
  /** Every argv the agent passed, in order. */
  calls(): string[][];
  /** The stand-in's configuration: storage objects and targets. */
  state(): {
    backstores: Record<string, { path: string }>;
    targets: Record<
      string,
      {
        luns: { lun: number; so: string }[];
        attributes: Record<string, string>;
        /** Node ACLs by initiator name, with their mapped LUNs. */
        acls: Record<string, { mapped_lun: number; tpg_lun: number; write_protect: boolean }[]>;
        /** CHAP settings of node ACLs, by initiator name (`set auth`). */
        auth?: Record<string, { userid: string; password: string }>;
      }
    >;
  };
  /** Forgets recorded calls (state stays). */
  clearCalls(): void;
}

/** Writes the stand-in into `dir/bin/targetcli` and returns accessors for what it recorded. */
export function installTargetcliStandIn(dir: string): TargetcliStandIn {
  const binDir = join(dir, 'bin');
  mkdirSync(binDir, { recursive: true });
  const bin = join(binDir, 'targetcli');
  writeFileSync(bin, SCRIPT.replace('process.env.TARGETCLI_STANDIN_DIR', JSON.stringify(dir)));
  chmodSync(bin, 0o755);
  const callsFile = join(dir, 'calls.jsonl');
  const stateFile = join(dir, 'state.json');
  return {
    binDir,
    calls: () =>
      existsSync(callsFile)
        ? readFileSync(callsFile, 'utf8')
            .split('\n')
            .filter(Boolean)
            .map((l) => JSON.parse(l) as string[])
        : [],
    state: () => (existsSync(stateFile) ? JSON.parse(readFileSync(stateFile, 'utf8')) : { backstores: {}, targets: {} }),
    clearCalls: () => writeFileSync(callsFile, ''),
  };
}
