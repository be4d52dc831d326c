import { request as httpRequest, type IncomingHttpHeaders } from 'node:http';
import { request as httpsRequest } from 'node:https';
import type { PowerAction, PowerState } from '../domain/power';
import { type Bmc, bmcError, bmcText } from './bmc';

/** Largest answer read from a BMC; more is refused (`bmc_action_failed`). */
const MAX_BODY = 1024 * 1024;

const RESET_TYPE: Record<Exclude<PowerAction, 'cycle'>, string> = { on: 'On', off: 'ForceOff', 'soft-off': 'GracefulShutdown' };

/** Network failures that mean "nobody answers there" (and TLS that does not verify). */
const UNREACHABLE = new Set(['ECONNREFUSED', 'EHOSTUNREACH', 'ENETUNREACH', 'ENOTFOUND', 'EAI_AGAIN', 'ECONNRESET', 'EPIPE', 'EADDRNOTAVAIL']);

interface Answer {
  status: number;
  headers: IncomingHttpHeaders;
  body: string;
}

export interface RedfishOptions {
  url: string;
  username: string;
  password: string;
  verifyTls: boolean;
  /** Deadline of one request. */
  timeoutMs: number;
}

/**
 * A Redfish ComputerSystem (DMTF DSP0266): power through `ComputerSystem.Reset`, one-time
 * network boot through a PATCH of `Boot` (`BootSourceOverrideTarget: Pxe`,
 * `BootSourceOverrideEnabled: Once`) sent with `If-Match` and the ETag the system answered
 * (once more with a fresh ETag on 412). HTTP Basic authentication; `verify_tls: false` accepts
 * a BMC's self-signed certificate. Answers are size-capped and shape-checked: only
 * `PowerState`, the reset action's target (kept under `/redfish/v1/`) and an error's message
 * are read from them.
 */
export class RedfishBmc implements Bmc {
  private readonly url: URL;

  constructor(private readonly o: RedfishOptions) {
    this.url = new URL(o.url);
  }

  private call(method: string, path: string, body?: unknown, headers: Record<string, string> = {}, signal?: AbortSignal): Promise<Answer> {
    const payload = body === undefined ? undefined : JSON.stringify(body);
    const h: Record<string, string> = {
      accept: 'application/json',
      authorization: `Basic ${Buffer.from(`${this.o.username}:${this.o.password}`).toString('base64')}`,
      'odata-version': '4.0',
      ...headers,
    };
    if (payload !== undefined) {
      h['content-type'] = 'application/json';
      h['content-length'] = String(Buffer.byteLength(payload));
    }
    const https = this.url.protocol === 'https:';
    // Without the BMC's address: error texts reach viewers (last_power.detail, the operations log).
    const what = `${method} ${path}`;
    return new Promise<Answer>((resolve, reject) => {
      let done = false;
      const finish = (err: Error | null, a?: Answer) => {
        if (done) return;
        done = true;
        clearTimeout(timer);
        signal?.removeEventListener('abort', onAbort);
        if (err) reject(err);
        else resolve(a as Answer);
      };
      const req = (https ? httpsRequest : httpRequest)(
        {
          protocol: this.url.protocol,
          hostname: this.url.hostname.replace(/^\[|\]$/g, ''),
          port: this.url.port || (https ? 443 : 80),
          method,
          path,
          headers: h,
          rejectUnauthorized: this.o.verifyTls,
          agent: false,
        },
        (res) => {
          const chunks: Buffer[] = [];
          let size = 0;
          res.on('data', (c: Buffer) => {
            size += c.length;
            if (size > MAX_BODY) {
              req.destroy();
              finish(bmcError('bmc_action_failed', `${what}: the BMC's answer is larger than ${MAX_BODY} bytes`));
              return;
            }
            chunks.push(c);
          });
          res.on('end', () => finish(null, { status: res.statusCode ?? 0, headers: res.headers, body: Buffer.concat(chunks).toString('utf8') }));
          res.on('error', (e) => finish(this.netError(what, e)));
        },
      );
      const timer = setTimeout(() => {
        req.destroy();
        finish(bmcError('bmc_timeout', `${what}: no answer within ${this.o.timeoutMs} ms`));
      }, this.o.timeoutMs);
      const onAbort = () => {
        req.destroy();
        finish(bmcError('bmc_timeout', `${what}: cancelled`));
      };
      signal?.addEventListener('abort', onAbort, { once: true });
      req.on('error', (e) => finish(this.netError(what, e)));
      if (payload !== undefined) req.write(payload);
      req.end();
    });
  }

  private netError(what: string, e: Error): Error {
    const code = (e as NodeJS.ErrnoException).code ?? '';
    if (/CERT|SELF_SIGNED|UNABLE_TO_VERIFY|ERR_TLS|ERR_SSL|HOSTNAME_MISMATCH/.test(code)) {
      return bmcError('bmc_unreachable', `${what}: the BMC's TLS certificate does not verify (${code}); give verify_tls: false for a self-signed one`);
    }
    if (UNREACHABLE.has(code)) return bmcError('bmc_unreachable', `${what}: ${code}`);
    return bmcError('bmc_unreachable', `${what}: ${bmcText(e.message, 120)}`);
  }

  /** The BMC's own message of an error answer (Redfish `error.message` / `@Message.ExtendedInfo`). */
  private static message(a: Answer): string {
    try {
      const j = JSON.parse(a.body) as { error?: { message?: unknown; '@Message.ExtendedInfo'?: Array<{ Message?: unknown }> } };
      const ext = j?.error?.['@Message.ExtendedInfo'];
      const m = Array.isArray(ext) && ext[0]?.Message ? ext[0].Message : j?.error?.message;
      if (typeof m === 'string' && m.trim()) return bmcText(m);
    } catch {
      // not JSON: the text itself
    }
    return bmcText(a.body) || `HTTP ${a.status}`;
  }

  private check(a: Answer, what: string): Answer {
    if (a.status === 401 || a.status === 403) throw bmcError('bmc_auth_failed', `${what}: the BMC refused the credentials (HTTP ${a.status})`);
    if (a.status < 200 || a.status >= 300) throw bmcError('bmc_action_failed', `${what}: HTTP ${a.status}: ${RedfishBmc.message(a)}`);
    return a;
  }

  private async system(signal?: AbortSignal): Promise<{ json: Record<string, unknown>; etag: string | undefined }> {
    const a = this.check(await this.call('GET', this.url.pathname, undefined, {}, signal), 'reading the system');
    let json: unknown;
    try {
      json = JSON.parse(a.body);
    } catch {
      throw bmcError('bmc_action_failed', 'reading the system: the answer is not JSON');
    }
    if (!json || typeof json !== 'object' || Array.isArray(json)) throw bmcError('bmc_action_failed', 'reading the system: the answer is not a ComputerSystem');
    const j = json as Record<string, unknown>;
    const header = a.headers.etag;
    const etag = typeof header === 'string' && header.length <= 256 ? header : typeof j['@odata.etag'] === 'string' && (j['@odata.etag'] as string).length <= 256 ? (j['@odata.etag'] as string) : undefined;
    return { json: j, etag };
  }

  async powerState(signal?: AbortSignal): Promise<PowerState> {
    const { json } = await this.system(signal);
    const s = json.PowerState;
    if (s === 'On' || s === 'PoweringOn') return 'on';
    if (s === 'Off' || s === 'PoweringOff') return 'off';
    return 'unknown';
  }

  /** The reset action's target, as the system names it (kept on this BMC, under /redfish/v1/). */
  private resetTarget(json: Record<string, unknown>): string {
    const actions = json.Actions as Record<string, { target?: unknown }> | undefined;
    const t = actions?.['#ComputerSystem.Reset']?.target;
    if (typeof t === 'string' && /^\/redfish\/v1\/[A-Za-z0-9/_.%#-]+$/.test(t) && t.length <= 512) return t;
    return `${this.url.pathname}/Actions/ComputerSystem.Reset`;
  }

  async power(action: PowerAction, signal?: AbortSignal): Promise<void> {
    const { json } = await this.system(signal);
    let type: string;
    if (action === 'cycle') type = json.PowerState === 'Off' ? 'On' : 'ForceRestart';
    else type = RESET_TYPE[action];
    this.check(await this.call('POST', this.resetTarget(json), { ResetType: type }, {}, signal), `${action} (ResetType ${type})`);
  }

  async setOneTimeNetworkBoot(signal?: AbortSignal): Promise<void> {
    const body = { Boot: { BootSourceOverrideTarget: 'Pxe', BootSourceOverrideEnabled: 'Once' } };
    for (let attempt = 0; ; attempt++) {
      const { etag } = await this.system(signal);
      const a = await this.call('PATCH', this.url.pathname, body, etag ? { 'if-match': etag } : {}, signal);
      // 412: the system changed since we read its ETag; read it again, once.
      if (a.status === 412 && attempt === 0) continue;
      this.check(a, 'setting a one-time network boot (Boot.BootSourceOverrideTarget=Pxe, Once)');
      return;
    }
  }
}
