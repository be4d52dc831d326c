import { type Bmc, type BmcConnector, bmcError } from '../adapters/bmc';
import type { BmcCredentials, PowerAction, PowerState } from '../domain/power';

/** One call a {@link FakeBmc} received, in the order of all calls to every fake of one {@link FakeBmcs}. */
export interface FakeBmcCall {
  /** The machine's key: a Redfish system URL, or `host:port` of an IPMI BMC. */
  machine: string;
  op: 'powerState' | 'power' | 'setOneTimeNetworkBoot';
  action?: PowerAction;
  /** Position among every call of the fleet (0, 1, …): the order calls reached the BMCs. */
  seq: number;
}

/** What a failing fake answers: one of the `Bmc` interface's catalog codes. */
export type FakeBmcFailure = 'bmc_unreachable' | 'bmc_auth_failed' | 'bmc_action_failed' | 'bmc_timeout';

/**
 * A stand-in for one machine's BMC, behind the `Bmc` interface that the Redfish and IPMI
 * adapters implement (their shared contract, `adapters/bmc.contract.test.ts`, runs against this
 * fake too, so it cannot drift from them): it keeps the power state (`on`/`off`) and a pending
 * one-time network boot, refuses a wrong password (`bmc_auth_failed`), and records every call.
 * A power change takes effect at once (a real BMC may take seconds: callers poll).
 *
 * For failure and timing tests: `failWith` makes every call fail with that code; `gate`, when
 * set, is awaited at the start of every call (a test holds calls there and releases them when it
 * chooses: order by events, never by sleeping).
 */
export class FakeBmc {
  state: 'on' | 'off';
  /** True after `setOneTimeNetworkBoot`, false again after the next power-on (the boot used it). */
  networkBootOnce = false;
  /** The password it accepts; `undefined` accepts any. */
  password: string | undefined;
  failWith: FakeBmcFailure | null = null;
  /** Awaited at the start of each call (after it is recorded in `calls`). */
  gate: ((call: FakeBmcCall) => Promise<void>) | null = null;
  /** How many network boots were used by a power-on (`on`, or `cycle`). */
  networkBoots = 0;

  constructor(
    readonly key: string,
    private readonly fleet: FakeBmcs,
    opts: { state?: 'on' | 'off'; password?: string } = {},
  ) {
    this.state = opts.state ?? 'off';
    this.password = opts.password;
  }

  /** The calls this machine received, in order. */
  get calls(): FakeBmcCall[] {
    return this.fleet.calls.filter((c) => c.machine === this.key);
  }

  /** A `Bmc` as an adapter opened with `password` would be. */
  open(password: string): Bmc {
    const call = async (op: FakeBmcCall['op'], action?: PowerAction): Promise<void> => {
      const c: FakeBmcCall = { machine: this.key, op, seq: this.fleet.calls.length, ...(action ? { action } : {}) };
      this.fleet.record(c);
      if (this.gate) await this.gate(c);
      if (this.failWith) throw bmcError(this.failWith, `fake BMC ${this.key}: ${this.failWith}`);
      if (this.password !== undefined && password !== this.password) throw bmcError('bmc_auth_failed', `fake BMC ${this.key}: the BMC refused the credentials`);
    };
    return {
      powerState: async (): Promise<PowerState> => {
        await call('powerState');
        return this.state;
      },
      power: async (action: PowerAction): Promise<void> => {
        await call('power', action);
        const on = action === 'on' || action === 'cycle';
        if (on && this.networkBootOnce) {
          this.networkBootOnce = false;
          this.networkBoots++;
        }
        this.state = on ? 'on' : 'off';
      },
      setOneTimeNetworkBoot: async (): Promise<void> => {
        await call('setOneTimeNetworkBoot');
        this.networkBootOnce = true;
      },
    };
  }
}

/** The key of the machine behind `c`: its Redfish system URL, or the IPMI BMC's `host:port`. */
export function fakeBmcKey(c: BmcCredentials): string {
  return c.driver === 'redfish' ? c.url : `${c.host.toLowerCase()}:${c.port}`;
}

/**
 * A fleet of {@link FakeBmc}s: give `connect` to the metal services (`createMetalServices({ bmc })`,
 * `newMetalFixture(env, { bmc: fakes.connect })`); each device's BMC credentials open the
 * machine of that URL (Redfish) or `host:port` (IPMI), made (off, any password) the first time
 * it is named. `machine()` gets one to set up or inspect.
 */
export class FakeBmcs {
  readonly calls: FakeBmcCall[] = [];
  private readonly machines = new Map<string, FakeBmc>();
  private readonly waiters: Array<{ pred: (c: FakeBmcCall) => boolean; resolve: (c: FakeBmcCall) => void }> = [];

  /** The machine of `key` (a Redfish system URL or IPMI `host:port`), or of credentials. */
  machine(key: string | BmcCredentials, opts: { state?: 'on' | 'off'; password?: string } = {}): FakeBmc {
    const k = typeof key === 'string' ? key : fakeBmcKey(key);
    let m = this.machines.get(k);
    if (!m) {
      m = new FakeBmc(k, this, opts);
      this.machines.set(k, m);
    }
    return m;
  }

  readonly connect: BmcConnector = (c) => this.machine(c).open(c.password);

  /** @internal Records a call and wakes whoever waits for one like it. */
  record(c: FakeBmcCall): void {
    this.calls.push(c);
    for (const w of [...this.waiters]) {
      if (!w.pred(c)) continue;
      this.waiters.splice(this.waiters.indexOf(w), 1);
      w.resolve(c);
    }
  }

  /** Resolves with the first call (already made, or to come) that `pred` accepts. */
  nextCall(pred: (c: FakeBmcCall) => boolean): Promise<FakeBmcCall> {
    const seen = this.calls.find(pred);
    if (seen) return Promise.resolve(seen);
    return new Promise((resolve) => this.waiters.push({ pred, resolve }));
  }
}
