import { type Exec, ExecError, exec as realExec, sleep } from '@ironlens/core';
import type { PowerAction, PowerState } from '../domain/power';
import { type Bmc, bmcError, bmcText } from './bmc';

export interface IpmitoolOptions {
  host: string;
  port: number;
  username: string;
  password: string;
  cipherSuite: number;
  /** Deadline of one `ipmitool` run. */
  timeoutMs: number;
  /** Runs `ipmitool` (an argument array, never a shell). Default is the real `execFile` runner. */
  exec?: Exec;
  /** How long `cycle` waits for the machine to report off before powering it on. Default is `timeoutMs`. */
  cycleOffWaitMs?: number;
}

/** What ipmitool prints when the session's authentication failed (RAKP 2 / 4). */
const AUTH = /RAKP 2 HMAC is invalid|RAKP 4 (?:HMAC|message)|unauthorized name|invalid user ?name|Invalid user|Authentication type .* not supported|insufficient privilege/i;
const UNREACHABLE = /Unable to establish|No response from remote controller|Get Auth Capabilities error|Get Session Challenge command failed|Address lookup for .* failed|Connection refused|Unable to Get Channel Cipher Suites|Error: .*session/i;

/**
 * An IPMI BMC driven by `ipmitool -I lanplus` (issue 21). The password never reaches the
 * argument list: it goes in the `IPMI_PASSWORD` environment variable of the one `ipmitool`
 * process, read with `-E` (a process' environment is readable by its own user alone, its
 * command line by everyone).
 * `-v` makes it name an authentication failure (`RAKP 2 HMAC is invalid`), which it otherwise
 * reports as an unreachable BMC. One-time network boot follows Ironic's ipmitool driver:
 * `raw 0x00 0x08 0x03 0x08` first (Set System Boot Options, parameter 3: stop the BMC from
 * clearing the boot flags' valid bit after 60 s, which would drop the request if the reset
 * came later), then `chassis bootdev pxe` (next boot only). `cycle` is an off, a wait for
 * the off state, then an on (as Ironic's reboot), so a machine that was off comes on too.
 */
export class IpmitoolBmc implements Bmc {
  private readonly exec: Exec;

  constructor(private readonly o: IpmitoolOptions) {
    this.exec = o.exec ?? realExec;
  }

  private async run(args: string[], signal?: AbortSignal): Promise<string> {
    const argv = ['ipmitool', '-I', 'lanplus', '-H', this.o.host, '-p', String(this.o.port), '-U', this.o.username, '-E', '-C', String(this.o.cipherSuite), '-N', '1', '-R', '2', '-v', ...args];
    const deadline = AbortSignal.timeout(this.o.timeoutMs);
    const both = signal ? AbortSignal.any([deadline, signal]) : deadline;
    // Without the BMC's address: error texts reach viewers (last_power.detail, the operations log).
    const what = `ipmitool ${args.join(' ')}`;
    try {
      const r = await this.exec(argv, { env: { PATH: process.env.PATH ?? '/usr/bin:/bin', IPMI_PASSWORD: this.o.password }, timeoutMs: this.o.timeoutMs + 2_000, signal: both });
      return `${r.stdout}\n${r.stderr}`;
    } catch (err) {
      if (both.aborted) throw bmcError('bmc_timeout', `${what}: no answer within ${this.o.timeoutMs} ms`);
      if ((err as { notFound?: boolean }).notFound) throw bmcError('bmc_action_failed', 'ipmitool is not installed on the control plane (Debian package ipmitool)');
      const out = err instanceof ExecError ? `${err.result.stderr}\n${err.result.stdout}` : String((err as Error).message);
      const clean = out.split(this.o.password).join('***');
      if (AUTH.test(clean)) throw bmcError('bmc_auth_failed', `${what}: the BMC refused the credentials`);
      if (UNREACHABLE.test(clean)) throw bmcError('bmc_unreachable', `${what}: ${bmcText(lastLine(clean))}`);
      throw bmcError('bmc_action_failed', `${what}: ${bmcText(lastLine(clean)) || 'failed'}`);
    }
  }

  async powerState(signal?: AbortSignal): Promise<PowerState> {
    const out = await this.run(['chassis', 'power', 'status'], signal);
    const m = /Chassis Power is (on|off)/i.exec(out);
    return m ? (m[1].toLowerCase() as PowerState) : 'unknown';
  }

  private async control(verb: 'on' | 'off' | 'soft' | 'cycle', signal?: AbortSignal): Promise<void> {
    const out = await this.run(['chassis', 'power', verb], signal);
    if (!/Chassis Power Control:/i.test(out)) throw bmcError('bmc_action_failed', `ipmitool chassis power ${verb}: ${bmcText(lastLine(out)) || 'no confirmation from the BMC'}`);
  }

  async power(action: PowerAction, signal?: AbortSignal): Promise<void> {
    if (action === 'on') return this.control('on', signal);
    if (action === 'off') return this.control('off', signal);
    if (action === 'soft-off') return this.control('soft', signal);
    // cycle: off (when on), wait for off, on.
    if ((await this.powerState(signal)) !== 'off') {
      await this.control('off', signal);
      const until = Date.now() + (this.o.cycleOffWaitMs ?? this.o.timeoutMs);
      while ((await this.powerState(signal)) !== 'off') {
        if (Date.now() > until) throw bmcError('bmc_action_failed', 'cycle: the BMC accepted the power off, but the machine still reports on');
        await sleep(500);
      }
    }
    await this.control('on', signal);
  }

  async setOneTimeNetworkBoot(signal?: AbortSignal): Promise<void> {
    // ipmitool prints a failed Set System Boot Options and still exits 0: read what it says.
    const raw = await this.run(['raw', '0x00', '0x08', '0x03', '0x08'], signal);
    if (/failed|Unable to send/i.test(raw)) throw bmcError('bmc_action_failed', `disabling the boot flags' 60 s timeout: ${bmcText(lastLine(raw))}`);
    const out = await this.run(['chassis', 'bootdev', 'pxe'], signal);
    if (/failed|error/i.test(out) || !/Set Boot Device to pxe/i.test(out)) throw bmcError('bmc_action_failed', `ipmitool chassis bootdev pxe: ${bmcText(lastLine(out)) || 'no confirmation from the BMC'}`);
  }
}

function lastLine(text: string): string {
  const lines = text
    .split('\n')
    .map((l) => l.trim())
    .filter(Boolean);
  return lines[lines.length - 1] ?? '';
}
