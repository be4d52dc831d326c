import { AppError, type Exec, ExecError, exec as defaultExec, isChapSecret, isChapUser } from '@ironlens/core';
import { Mutex } from '../util/mutex';
import type { CreateTargetOptions, IscsiTargets, Target } from './iscsi-targets';

export interface TargetcliOptions {
  /** The command runner. Default is core's `exec`. */
  exec?: Exec;
  /** The targetcli executable, looked up on PATH. Default is `targetcli`. */
  command?: string;
}

interface ListedLun {
  lun: number;
  /** `fileio/<name>`: the storage object behind the LUN. */
  storageObject: string;
  backing: string;
}

interface ListedTarget {
  iqn: string;
  luns: ListedLun[];
  /** `ALL` when the TPG is in demo mode (`gen-acls`), then the node ACLs' initiator names. */
  acl: string[];
}

/**
 * Parses `targetcli /iscsi ls`: a target line `o- <wwn> ... [TPGs: 1]`; its TPG line
 * `o- tpg1 ... [gen-acls, no-auth]` (`no-gen-acls` when only node ACLs may log in);
 * under `tpg1/acls` one line per node ACL, `o- <initiator wwn> ... [Mapped LUNs: 1]`
 * (older targetcli-fb: `[1 Mapped LUN]`); under `tpg1/luns` one line per LUN,
 * `o- lun0 ... [fileio/<name> (<path>) ...]` (newer targetcli-fb add the write cache mode
 * and ALUA group after the path). Versions whose TPG line does not say `gen-acls` are
 * read as not in demo mode.
 */
export function parseTargetcliLs(text: string): ListedTarget[] {
  const targets: ListedTarget[] = [];
  let target: ListedTarget | undefined;
  for (const line of text.split('\n')) {
    const t = /o- ((?:iqn|eui|naa)\.\S+) [.\s]*\[TPGs?: \d+\]/.exec(line);
    if (t) {
      target = { iqn: t[1], luns: [], acl: [] };
      targets.push(target);
      continue;
    }
    if (!target) continue;
    const tpg = /o- tpg\d+ [.\s]*\[([^\]]*)\]/.exec(line);
    if (tpg) {
      if (tpg[1].split(/,\s*/).includes('gen-acls')) target.acl.unshift('ALL');
      continue;
    }
    const acl = /o- ((?:iqn|eui|naa)\.\S+) [.\s]*\[[^\]]*Mapped LUN/.exec(line);
    if (acl) {
      target.acl.push(acl[1]);
      continue;
    }
    const l = /o- lun(\d+) [.\s]*\[(\w+\/[^\s\]]+) \(([^)]*)\)/.exec(line);
    if (l) target.luns.push({ lun: Number(l[1]), storageObject: l[2], backing: l[3] });
  }
  return targets;
}

/** The storage object name of a target's backing file: its IQN suffix, `:` made `_`. */
export function storageObjectName(iqn: string): string {
  const colon = iqn.indexOf(':');
  return (colon === -1 ? iqn : iqn.slice(colon + 1)).replace(/[^A-Za-z0-9._-]/g, '_');
}

/**
 * LIO through `targetcli`, one command per call (`targetcli <path> <command> [args]`).
 * Each target gets its own fileio storage object and one LUN. Without an initiator,
 * demo-mode ACLs (`generate_node_acls=1`) let every initiator in, as stgt's
 * `--initiator-address ALL` does, and a CD target is the same with
 * `demo_mode_write_protect=1`. With one, demo mode is off and a node ACL for that
 * initiator maps LUN 0 to it (`write_protect=1` for a CD): nobody else may log in. LIO
 * has no emulated CD-ROM, so a CD is a read-only disk LUN. `saveconfig` after every change makes targets
 * survive a restart (target.service restores them).
 *
 * CHAP (issue 13): the TPG's `authentication=1` and the node ACL's `set auth userid=…
 * password=…`, checked back with `get auth userid`. LIO keeps the secret in configfs, and
 * `saveconfig` writes it to /etc/target/saveconfig.json (root-only), LIO's own store: that is
 * how its targets survive a restart, and the agent cannot keep it out of it.
 */
export class TargetcliTargets implements IscsiTargets {
  readonly backend = 'lio' as const;
  readonly persistent = 'saveconfig (auto-load on start)';
  private readonly exec: Exec;
  private readonly command: string;
  private readonly lock = new Mutex();

  constructor(opts: TargetcliOptions = {}) {
    this.exec = opts.exec ?? defaultExec;
    this.command = opts.command ?? 'targetcli';
  }

  async list(): Promise<Target[]> {
    return (await this.listed()).map((t) => ({
      iqn: t.iqn,
      luns: t.luns.map((l) => ({ lun: l.lun, backing: l.backing, cd: /\.iso$/i.test(l.backing) })),
      acl: t.acl,
    }));
  }

  createDisk(iqn: string, backing: string, opts: CreateTargetOptions = {}): Promise<void> {
    return this.create(iqn, backing, false, opts);
  }

  createCd(iqn: string, backing: string, opts: CreateTargetOptions = {}): Promise<void> {
    return this.create(iqn, backing, true, opts);
  }

  delete(iqn: string): Promise<void> {
    return this.lock.run(async () => {
      const targets = await this.listed();
      const target = targets.find((t) => t.iqn === iqn);
      if (!target) throw new AppError('iqn_not_found', 'iqn not found');
      await this.targetcli(['/iscsi', 'delete', iqn]);
      const stillUsed = new Set(targets.filter((t) => t.iqn !== iqn).flatMap((t) => t.luns.map((l) => l.storageObject)));
      for (const so of new Set(target.luns.map((l) => l.storageObject))) {
        if (stillUsed.has(so)) continue;
        const slash = so.indexOf('/');
        await this.targetcli([`/backstores/${so.slice(0, slash)}`, 'delete', so.slice(slash + 1)]);
      }
      await this.targetcli(['saveconfig']);
    });
  }

  private create(iqn: string, backing: string, cd: boolean, opts: CreateTargetOptions): Promise<void> {
    const { initiator, chap } = opts;
    // The last check before a command line: the service has checked them, a caller may not have.
    if (chap && (!initiator || !isChapUser(chap.user) || !isChapSecret(chap.password))) {
      return Promise.reject(new AppError('chap_invalid', 'CHAP needs an initiator, a user name and a secret of 12-16 letters and digits'));
    }
    return this.lock.run(async () => {
      if ((await this.listed()).some((t) => t.iqn === iqn)) throw new AppError('iqn_exists', `iqn already exists: ${iqn}`);
      const name = storageObjectName(iqn);
      const tpg = `/iscsi/${iqn}/tpg1`;
      await this.targetcli(['/backstores/fileio', 'create', `name=${name}`, `file_or_dev=${backing}`]);
      let targetMade = false;
      try {
        await this.targetcli(['/iscsi', 'create', iqn]);
        targetMade = true;
        await this.targetcli([`${tpg}/luns`, 'create', `/backstores/fileio/${name}`]);
        if (initiator) {
          await this.targetcli([tpg, 'set', 'attribute', `authentication=${chap ? 1 : 0}`, 'generate_node_acls=0']);
          // The mapping is made explicitly rather than by the `auto_add_mapped_luns` preference,
          // so a CD can be write-protected for its initiator. `create <mapped_lun> <tpg_lun>`
          // positionally: the second parameter is `tpg_lun_or_backstore` in current
          // targetcli-fb, `tpg_lun` in older ones. `write_protect` is left out for a disk
          // (targetcli passes the string on, and any non-empty string protects).
          await this.targetcli([`${tpg}/acls`, 'create', initiator, 'add_mapped_luns=false']);
          await this.targetcli([`${tpg}/acls/${initiator}`, 'create', '0', '0', ...(cd ? ['write_protect=1'] : [])]);
          if (chap) {
            await this.targetcli([`${tpg}/acls/${initiator}`, 'set', 'auth', `userid=${chap.user}`, `password=${chap.password}`]);
            const { stdout } = await this.targetcli([`${tpg}/acls/${initiator}`, 'get', 'auth', 'userid']);
            if (!stdout.split('\n').some((l) => l.trim() === `userid=${chap.user}`)) {
              throw new AppError('backend_failed', `targetcli reported success but the node ACL ${initiator} of ${iqn} has no CHAP user ${chap.user}`);
            }
          }
        } else {
          await this.targetcli([
            tpg,
            'set',
            'attribute',
            'authentication=0',
            'generate_node_acls=1',
            'cache_dynamic_acls=1',
            `demo_mode_write_protect=${cd ? 1 : 0}`,
          ]);
        }
        const made = (await this.listed()).find((t) => t.iqn === iqn);
        if (!made?.luns.some((l) => l.backing === backing)) {
          throw new AppError('backend_failed', `targetcli reported success but ${iqn} has no LUN backed by ${backing}`);
        }
        if (initiator && (!made.acl.includes(initiator) || made.acl.includes('ALL'))) {
          throw new AppError('backend_failed', `targetcli reported success but ${iqn} admits ${made.acl.join(', ') || 'nobody'} instead of ${initiator} only`);
        }
        await this.targetcli(['saveconfig']);
      } catch (err) {
        // No half-made target or stray storage object.
        if (targetMade) await this.targetcli(['/iscsi', 'delete', iqn]).catch(() => {});
        await this.targetcli(['/backstores/fileio', 'delete', name]).catch(() => {});
        throw err;
      }
    });
  }

  private async listed(): Promise<ListedTarget[]> {
    const { stdout } = await this.targetcli(['/iscsi', 'ls']);
    return parseTargetcliLs(stdout);
  }

  private async targetcli(args: string[]) {
    try {
      return await this.exec([this.command, ...args], { timeoutMs: 60_000 });
    } catch (err) {
      if (err instanceof ExecError) {
        // A secret the command carried never reaches an error message, even if targetcli echoes it.
        const out = (err.result.stderr || err.result.stdout).trim().replace(/password=\S*/g, 'password=<redacted>');
        if (/already exists/i.test(out) && args[0] === '/iscsi' && args[1] === 'create') {
          throw new AppError('iqn_exists', `iqn already exists: ${args[2]}`);
        }
        throw new AppError('backend_failed', `targetcli ${args.slice(0, 2).join(' ')} failed (exit ${err.result.code}): ${out}`);
      }
      throw err;
    }
  }
}
