import type { ChapCredential } from '@ironlens/core';

/** One LUN of a target, as the backend reports it. */
export interface TargetLun {
  /** LUN number: 1 on stgt (LUN 0 is its controller), 0 on LIO. */
  lun: number;
  /** Absolute path of the backing file. */
  backing: string;
  /** True for a read-only CD/DVD LUN. */
  cd: boolean;
}

/** One logged-in session (stgt's I_T nexus) of a target. */
export interface TargetSession {
  /** stgt's I_T nexus id: a new login gets a new one. */
  nexus: number;
  /** The initiator's name (IQN) as it logged in. */
  initiator: string;
  /** The address of its first connection, as the backend shows it; null when it shows none. */
  address: string | null;
}

export interface Target {
  iqn: string;
  /** stgt's target id; LIO has none. */
  tid?: number;
  luns: TargetLun[];
  /**
   * Who may log in, as the backend lists it: `ALL` (every initiator: stgt's
   * `--initiator-address ALL`, LIO's demo mode `generate_node_acls=1`), initiator names
   * (IQNs), and on stgt any address rule added by hand. Empty: nobody.
   */
  acl: string[];
  /**
   * The CHAP accounts a login must prove (user names only; the secrets stay in the backend):
   * stgt's incoming accounts bound to the target. Empty: no CHAP. Absent on LIO, whose
   * `targetcli ls` does not show a node ACL's `userid` (the adapter checks it after setting it).
   */
  accounts?: string[];
  /** The sessions logged in now (stgt's I_T nexus list). Absent on LIO, whose `targetcli ls` shows none. */
  sessions?: TargetSession[];
}

/** Options of a new target. */
export interface CreateTargetOptions {
  /**
   * The only initiator name (IQN) that may log in. Absent: every initiator may. The
   * caller has validated it (`isIqn`).
   */
  initiator?: string;
  /**
   * The CHAP account an initiator must log in with (issue 13): stgt binds a tgtd account to the
   * target, LIO sets the node ACL's `auth` and turns the TPG's authentication on. Only with
   * `initiator`. The caller has validated both fields (`isChapUser`, `isChapSecret`); the
   * secret is never logged nor echoed in an error.
   */
  chap?: ChapCredential;
}

/**
 * The iSCSI target backends behind one interface: `TgtadmTargets` (stgt) and
 * `TargetcliTargets` (LIO). Implementations translate failures into catalog errors:
 * `iqn_exists` (409), `iqn_not_found` (404), `backend_failed` (500).
 */
export interface IscsiTargets {
  readonly backend: 'stgt' | 'lio';
  /** How targets survive a restart, as `/capabilities` reports it. */
  readonly persistent: string;
  list(): Promise<Target[]>;
  /** Exports `backing` (an existing file) as a read-write disk LUN of a new target `iqn`, open to every initiator unless `opts.initiator` names the only one. */
  createDisk(iqn: string, backing: string, opts?: CreateTargetOptions): Promise<void>;
  /** Exports `backing` (an ISO) as a read-only CD LUN of a new target `iqn`, with the same access rule. */
  createCd(iqn: string, backing: string, opts?: CreateTargetOptions): Promise<void>;
  /** Removes target `iqn` and its LUNs; the backing files stay. */
  delete(iqn: string): Promise<void>;
}
