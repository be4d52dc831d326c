import { AppError, type ChapCredential, type Exec, ExecError, exec as defaultExec, isChapSecret, isChapUser } from '@ironlens/core';
import { Mutex } from '../util/mutex';
import type { CreateTargetOptions, IscsiTargets, Target, TargetSession } from './iscsi-targets';

export interface TgtadmOptions {
  /** tgtd's control port (`tgtadm -C`), so several tgtd can run side by side. Default is `0`, tgtd's own default. */
  controlPort?: number;
  /** The command runner. Default is core's `exec`. */
  exec?: Exec;
  /** Runs before every tgtadm argv, e.g. `['ip','netns','exec','ns1']`. Default is none. */
  wrapper?: string[];
}

/**
 * Parses `tgtadm --lld iscsi --op show --mode target`: one block per `Target N: <iqn>`,
 * one `LUN: k` block per LUN with its `Type:` and `Backing store path:`, and the entries
 * under `ACL information:` (`ALL`, initiator names, addresses) and `Account information:`
 * (incoming CHAP users; an outgoing one is marked ` (outgoing)` and left out), and the
 * logged-in sessions under `I_T nexus information:` (`I_T nexus: n`, its `Initiator: <iqn>
 * alias: <alias>` and its first connection's `IP Address:`). LUN 0 (the controller, backing
 * `None`) is left out.
 */
export function parseTgtadmShow(text: string): Target[] {
  const targets: Target[] = [];
  let target: Target | undefined;
  let lun: { lun: number; type?: string; backing?: string } | undefined;
  let section: 'nexus' | 'luns' | 'accounts' | 'acl' = 'luns';
  let nexus: TargetSession | undefined;
  const flush = () => {
    if (target && lun?.backing && lun.backing !== 'None') {
      target.luns.push({ lun: lun.lun, backing: lun.backing, cd: lun.type === 'cd/dvd' });
    }
    lun = undefined;
  };
  for (const raw of text.split('\n')) {
    const line = raw.trim();
    const t = /^Target (\d+): (\S+)$/.exec(raw);
    if (t) {
      flush();
      section = 'luns';
      target = { iqn: t[2], tid: Number(t[1]), luns: [], acl: [], accounts: [] as string[], sessions: [] };
      targets.push(target);
      nexus = undefined;
      continue;
    }
    if (line === 'I_T nexus information:' || line === 'LUN information:') {
      flush();
      section = line === 'LUN information:' ? 'luns' : 'nexus';
      nexus = undefined;
      continue;
    }
    if (section === 'nexus') {
      const n = /^I_T nexus: (\d+)$/.exec(line);
      if (n && target) {
        nexus = { nexus: Number(n[1]), initiator: '', address: null };
        target.sessions?.push(nexus);
        continue;
      }
      if (!nexus) continue;
      // `Initiator: <name> alias: <alias>` (older tgt: no alias); the first connection's address.
      const i = /^Initiator: (\S+)(?: alias: .*)?$/.exec(line);
      if (i) nexus.initiator = i[1];
      else if (nexus.address === null && line.startsWith('IP Address: ')) nexus.address = line.slice(12).trim();
      continue;
    }
    if (line === 'ACL information:' || line === 'Account information:') {
      flush();
      section = line === 'ACL information:' ? 'acl' : 'accounts';
      continue;
    }
    if (section === 'acl') {
      // The section is the last of a target block: one entry per line, until the next target.
      if (line !== '' && target) target.acl.push(line);
      continue;
    }
    if (section === 'accounts') {
      if (line !== '' && target && !line.endsWith(' (outgoing)')) target.accounts?.push(line);
      continue;
    }
    const l = /^LUN: (\d+)$/.exec(line);
    if (l) {
      flush();
      lun = { lun: Number(l[1]) };
      continue;
    }
    if (!lun) continue;
    if (line.startsWith('Type: ')) lun.type = line.slice(6).trim();
    else if (line.startsWith('Backing store path: ')) lun.backing = line.slice(20).trim();
  }
  flush();
  return targets;
}

/** Parses `tgtadm --mode account --op show`: the user names under `Account list:`. */
export function parseTgtadmAccounts(text: string): string[] {
  const out: string[] = [];
  let inList = false;
  for (const raw of text.split('\n')) {
    const line = raw.trim();
    if (line === 'Account list:') inList = true;
    else if (inList && line !== '') out.push(line);
  }
  return out;
}

/**
 * stgt through `tgtadm`. tgtd keeps nothing across restarts, so the agent's scan rebuilds
 * targets from the image files. Mutations are serialized, and a free tid is chosen under
 * that lock; a tid taken meanwhile by another tgtadm client is retried with the next one.
 *
 * CHAP: tgtd's accounts are global and bound to targets; a target with a bound (incoming)
 * account refuses a login that does not prove it. A worker's targets share its account. A
 * new secret for an existing user replaces the account (tgtd has no password update:
 * delete unbinds it everywhere, so it is bound again to every target that had it), and an
 * account no target uses any more is deleted with its last target. The secret reaches
 * tgtadm as an argument (its only interface); it is never in an error or a log line.
 */
export class TgtadmTargets implements IscsiTargets {
  readonly backend = 'stgt' as const;
  readonly persistent = 'auto-scan on startup';
  private readonly exec: Exec;
  private readonly port: string;
  private readonly wrapper: string[];
  private readonly lock = new Mutex();

  constructor(opts: TgtadmOptions = {}) {
    this.exec = opts.exec ?? defaultExec;
    this.port = String(opts.controlPort ?? 0);
    this.wrapper = opts.wrapper ?? [];
  }

  async list(): Promise<Target[]> {
    const { stdout } = await this.tgtadm(['--mode', 'target', '--op', 'show']);
    return parseTgtadmShow(stdout);
  }

  createDisk(iqn: string, backing: string, opts: CreateTargetOptions = {}): Promise<void> {
    return this.create(iqn, backing, false, opts);
  }

  createCd(iqn: string, backing: string, opts: CreateTargetOptions = {}): Promise<void> {
    return this.create(iqn, backing, true, opts);
  }

  delete(iqn: string): Promise<void> {
    return this.lock.run(async () => {
      const all = await this.list();
      const target = all.find((t) => t.iqn === iqn);
      if (!target) throw new AppError('iqn_not_found', 'iqn not found');
      await this.tgtadm(['--mode', 'target', '--op', 'delete', '--force', '--tid', String(target.tid)]);
      // An account no other target uses goes with its last target.
      const stillUsed = new Set(all.filter((t) => t.iqn !== iqn).flatMap((t) => t.accounts ?? []));
      for (const user of target.accounts ?? []) {
        if (!stillUsed.has(user)) await this.tgtadm(['--mode', 'account', '--op', 'delete', '--user', user]).catch(() => {});
      }
    });
  }

  /** The account `chap.user` with the secret `chap.password`, bound to `tid` (and to every target that had that user before). */
  private async bindAccount(tid: number, chap: ChapCredential): Promise<void> {
    const { stdout } = await this.tgtadm(['--mode', 'account', '--op', 'show']);
    const rebind: number[] = [];
    if (parseTgtadmAccounts(stdout).includes(chap.user)) {
      for (const t of await this.list()) if (t.tid !== undefined && t.tid !== tid && t.accounts?.includes(chap.user)) rebind.push(t.tid);
      await this.tgtadm(['--mode', 'account', '--op', 'delete', '--user', chap.user]);
    }
    await this.tgtadm(['--mode', 'account', '--op', 'new', '--user', chap.user, '--password', chap.password]);
    for (const t of [...rebind, tid]) await this.tgtadm(['--mode', 'account', '--op', 'bind', '--tid', String(t), '--user', chap.user]);
  }

  private create(iqn: string, backing: string, cd: boolean, opts: CreateTargetOptions): Promise<void> {
    const { initiator, chap } = opts;
    // The last check before a command line: the service has checked them, a caller may not have.
    if (chap && (!initiator || !isChapUser(chap.user) || !isChapSecret(chap.password))) {
      return Promise.reject(new AppError('chap_invalid', 'CHAP needs an initiator, a user name and a secret of 12-16 letters and digits'));
    }
    return this.lock.run(async () => {
      const targets = await this.list();
      if (targets.some((t) => t.iqn === iqn)) throw new AppError('iqn_exists', `iqn already exists: ${iqn}`);
      const used = new Set(targets.map((t) => t.tid));
      let tid = 1;
      for (let attempt = 0; ; attempt++) {
        while (used.has(tid)) tid++;
        try {
          await this.tgtadm(['--mode', 'target', '--op', 'new', '--tid', String(tid), '--targetname', iqn]);
          break;
        } catch (err) {
          if (attempt >= 5 || !(err instanceof AppError) || !/already exists/.test(err.message)) throw err;
          // Someone else created a target meanwhile: the name (409) or only the tid (retry).
          const now = await this.list();
          if (now.some((t) => t.iqn === iqn)) throw new AppError('iqn_exists', `iqn already exists: ${iqn}`);
          for (const t of now) used.add(t.tid);
          used.add(tid);
        }
      }
      try {
        const lun = ['--mode', 'logicalunit', '--op', 'new', '--tid', String(tid), '--lun', '1', '--backing-store', backing];
        await this.tgtadm(cd ? [...lun, '--device-type', 'cd'] : lun);
        if (cd) await this.tgtadm(['--mode', 'logicalunit', '--op', 'update', '--tid', String(tid), '--lun', '1', '--params', 'readonly=1']);
        // One initiator name, or every initiator. tgtd admits a login that any rule matches,
        // so a restricted target gets no address rule at all.
        const who = initiator ? ['--initiator-name', initiator] : ['--initiator-address', 'ALL'];
        await this.tgtadm(['--mode', 'target', '--op', 'bind', '--tid', String(tid), ...who]);
        if (chap) await this.bindAccount(tid, chap);
      } catch (err) {
        // No half-made target: remove it again, then report the first failure.
        await this.tgtadm(['--mode', 'target', '--op', 'delete', '--force', '--tid', String(tid)]).catch(() => {});
        throw err;
      }
    });
  }

  private async tgtadm(args: string[]) {
    const argv = [...this.wrapper, 'tgtadm', '-C', this.port, '--lld', 'iscsi', ...args];
    try {
      return await this.exec(argv, { timeoutMs: 30_000 });
    } catch (err) {
      if (err instanceof ExecError) {
        const out = (err.result.stderr || err.result.stdout).trim();
        throw new AppError('backend_failed', `tgtadm ${args.slice(0, 4).join(' ')} failed (exit ${err.result.code}): ${out}`);
      }
      throw err;
    }
  }
}
