import { AppError, type Exec, ExecError, exec as defaultExec } from '@ironlens/core';
import { Mutex } from '../util/mutex';
import type { IscsiTargets, Target } from './iscsi-targets';

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
}

/**
 * Parses `targetcli /iscsi ls`: a target line `o- <wwn> ... [TPGs: 1]`, and under its
 * `tpg1/luns` one line per LUN, `o- lun0 ... [fileio/<name> (<path>) ...]` (newer
 * targetcli-fb add the write cache mode and ALUA group after the path).
 */
export function parseTargetcliLs(text: string): ListedTarget[] {
  const targets: ListedTarget[] = [];
  let target: ListedTarget | undefined;
  for (const line of text.split('\n')) {
    const t = /o- ((?:iqn|eui|naa)\.\S+) [.\s]*\[TPGs?: \d+\]/.exec(line);
    if (t) {
      target = { iqn: t[1], luns: [] };
      targets.push(target);
      continue;
    }
    const l = /o- lun(\d+) [.\s]*\[(\w+\/[^\s\]]+) \(([^)]*)\)/.exec(line);
    if (l && target) target.luns.push({ lun: Number(l[1]), storageObject: l[2], backing: l[3] });
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
 * Each target gets its own fileio storage object and one LUN; demo-mode ACLs
 * (`generate_node_acls=1`) let every initiator in, as stgt's `--initiator-address ALL`
 * does. CD targets are the same with `demo_mode_write_protect=1`: LIO has no emulated
 * CD-ROM, so a CD is a read-only disk LUN. `saveconfig` after every change makes targets
 * survive a restart (target.service restores them).
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
    }));
  }

  createDisk(iqn: string, backing: string): Promise<void> {
    return this.create(iqn, backing, false);
  }

  createCd(iqn: string, backing: string): Promise<void> {
    return this.create(iqn, backing, true);
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

  private create(iqn: string, backing: string, cd: boolean): Promise<void> {
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
        await this.targetcli([
          tpg,
          'set',
          'attribute',
          'authentication=0',
          'generate_node_acls=1',
          'cache_dynamic_acls=1',
          `demo_mode_write_protect=${cd ? 1 : 0}`,
        ]);
        const made = (await this.listed()).find((t) => t.iqn === iqn);
        if (!made?.luns.some((l) => l.backing === backing)) {
          throw new AppError('backend_failed', `targetcli reported success but ${iqn} has no LUN backed by ${backing}`);
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
        const out = (err.result.stderr || err.result.stdout).trim();
        if (/already exists/i.test(out) && args[0] === '/iscsi' && args[1] === 'create') {
          throw new AppError('iqn_exists', `iqn already exists: ${args[2]}`);
        }
        throw new AppError('backend_failed', `targetcli ${args.slice(0, 2).join(' ')} failed (exit ${err.result.code}): ${out}`);
      }
      throw err;
    }
  }
}
