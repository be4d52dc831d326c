import { AppError } from '@ironlens/core';
import { describe, expect, it } from 'vitest';
import type { Bmc } from '../adapters/bmc';
import { cleanBmcError, cleanBmcText, cleaningBmcErrors } from './bmc-text';
import type { BmcCredentials } from './power';

const IPMI: BmcCredentials = { driver: 'ipmi', host: 'bmc-29.example.net', port: 6230, username: 'opsadmin', password: 'pw-29-secret', cipherSuite: 3 };
const REDFISH: BmcCredentials = { driver: 'redfish', url: 'https://10.0.0.5:8443/redfish/v1/Systems/1', username: 'root', password: 'pw-29-secret', verifyTls: true };
const REDFISH6: BmcCredentials = { driver: 'redfish', url: 'https://[fd00::5]/redfish/v1/Systems/1', username: 'ops', password: 'pw-29-secret', verifyTls: true };

describe('a BMC text as ironlens stores and shows it (review 1, S5)', () => {
  it("names neither the BMC's host, port nor user, nor any IPv4 address; keeps the rest", () => {
    expect(cleanBmcText('ipmitool chassis power status: Address lookup for bmc-29.example.net failed', IPMI)).toBe('ipmitool chassis power status: Address lookup for [bmc] failed');
    expect(cleanBmcText('Address lookup for BMC-29.Example.NET:6230 failed (resolved 192.0.2.44)', IPMI)).toBe('Address lookup for [bmc] failed (resolved [bmc])');
    expect(cleanBmcText('invalid user name opsadmin; opsadmin2 and xopsadmin are others', IPMI)).toBe('invalid user name [bmc]; opsadmin2 and xopsadmin are others');
    expect(cleanBmcText('password pw-29-secret refused', IPMI)).toBe('password *** refused');
    expect(cleanBmcText('GET /redfish/v1/Systems/1: connect EHOSTDOWN 10.0.0.5:8443', REDFISH)).toBe('GET /redfish/v1/Systems/1: connect EHOSTDOWN [bmc]');
    expect(cleanBmcText('GET /redfish/v1/Systems/1: connect EHOSTDOWN fd00::5:443 ([fd00::5])', REDFISH6)).toBe('GET /redfish/v1/Systems/1: connect EHOSTDOWN [bmc] ([bmc])');
    // The user "root" is masked where it stands alone, not inside other words.
    expect(cleanBmcText('root: login refused; rootfs mounted', REDFISH)).toBe('[bmc]: login refused; rootfs mounted');
    // Names that only contain the host are left alone.
    expect(cleanBmcText('bmc-29.example.network and xbmc-29.example.net', IPMI)).toBe('bmc-29.example.network and xbmc-29.example.net');
  });

  it('turns C0 and C1 controls, line separators and bidi overrides into spaces, and clips', () => {
    expect(cleanBmcText('a\u001b]0;title\u0007b\u009b2Jc\u0085d\u2028e\u202ef\u2066g\r\nh', IPMI)).toBe('a ]0;title b 2Jc d e f g h');
    expect(cleanBmcText('x'.repeat(400), IPMI)).toBe(`${'x'.repeat(300)}…`);
  });

  it('keeps the code, status and fields of a catalog error; anything else is bmc_action_failed', () => {
    const e = cleanBmcError(new AppError('bmc_unreachable', 'ipmitool: Address lookup for bmc-29.example.net failed', { code: 'bmc_unreachable' }), IPMI);
    expect({ code: e.code, status: e.status, extra: e.extra, message: e.message }).toEqual({ code: 'bmc_unreachable', status: 502, extra: { code: 'bmc_unreachable' }, message: 'ipmitool: Address lookup for [bmc] failed' });
    const raw = cleanBmcError(new Error('connect ETIMEDOUT 10.0.0.5:8443'), REDFISH);
    expect({ code: raw.code, status: raw.status, message: raw.message }).toEqual({ code: 'bmc_action_failed', status: 502, message: 'the BMC call failed: connect ETIMEDOUT [bmc]' });
  });

  it('every call of a connected BMC answers its errors cleaned, thrown synchronously or not', async () => {
    const failing: Bmc = {
      powerState: async () => {
        throw new AppError('bmc_unreachable', 'GET /redfish/v1/Systems/1: connect EHOSTDOWN 10.0.0.5:8443', { code: 'bmc_unreachable' });
      },
      power: () => {
        throw new Error('root at 10.0.0.5 refused');
      },
      setOneTimeNetworkBoot: async () => {
        throw new AppError('bmc_action_failed', 'PATCH failed for user root', { code: 'bmc_action_failed' });
      },
    };
    const bmc = cleaningBmcErrors(() => failing)(REDFISH);
    await expect(bmc.powerState()).rejects.toMatchObject({ code: 'bmc_unreachable', message: 'GET /redfish/v1/Systems/1: connect EHOSTDOWN [bmc]' });
    await expect(bmc.power('on')).rejects.toMatchObject({ code: 'bmc_action_failed', message: 'the BMC call failed: [bmc] at [bmc] refused' });
    await expect(bmc.setOneTimeNetworkBoot()).rejects.toMatchObject({ code: 'bmc_action_failed', message: 'PATCH failed for user [bmc]' });
  });
});
