// biome-ignore-all lint/suspicious/noTemplateCurlyInString: `${NAME}` in plain strings is what these tests are about.
import { describe, expect, it } from 'vitest';
import { checkTokenEnv, envNameAllowed, envNameReserved, expandToken, refuseReservedEnv, tokenEnvNames } from './agent-token';

const DEFAULT = { allowedEnv: ['IPXE_AGENT_*'] };

describe('agent tokens written ${NAME}', () => {
  it('finds the names a token refers to', () => {
    expect(tokenEnvNames('a${X}b${Y_1}c${bad-name}$Z')).toEqual(['X', 'Y_1']);
  });

  it('allows exact names and prefixes ending in *', () => {
    expect(envNameAllowed('IPXE_AGENT_TOKEN', DEFAULT.allowedEnv)).toBe(true);
    expect(envNameAllowed('IRONLENS_CONSOLE_TOKEN', DEFAULT.allowedEnv)).toBe(false);
    expect(envNameAllowed('LIO_TOKEN', ['LIO_TOKEN'])).toBe(true);
    expect(envNameAllowed('LIO_TOKEN_2', ['LIO_TOKEN'])).toBe(false);
    expect(envNameAllowed('ANY', [])).toBe(false);
  });

  it('expands allowed names (unset ones to nothing) and refuses a token naming any other', () => {
    const env = { IPXE_AGENT_TOKEN: 'secret', IRONLENS_CONSOLE_TOKEN: 'console' };
    expect(expandToken('Bearer-${IPXE_AGENT_TOKEN}-${IPXE_AGENT_UNSET}', env, DEFAULT)).toBe('Bearer-secret-');
    expect(expandToken('plain', env, DEFAULT)).toBe('plain');
    expect(expandToken(null, env, DEFAULT)).toBeNull();
    expect(() => expandToken('${IPXE_AGENT_TOKEN}${IRONLENS_CONSOLE_TOKEN}', env, DEFAULT)).toThrow(/IRONLENS_CONSOLE_TOKEN/);
    expect(() => checkTokenEnv('${HOME}', DEFAULT)).toThrowError(expect.objectContaining({ code: 'agent_token_env_forbidden', status: 400 }));
  });

  it("refuses ironlens' own settings and secrets whatever IPXE_CP_AGENT_TOKEN_ENV allows, by prefix and by the settings list, in any case", () => {
    const anything = { allowedEnv: ['*'], reservedEnv: ['DISK_DIR', 'IPXE_AGENT_BACKEND'] };
    for (const name of ['IPXE_CP_TOKEN', 'IRONLENS_SECRET_KEY', 'IRONLENS_CONSOLE_TOKEN', 'IRONLENS_DATABASE_URL', 'KIND_K8S_TOKEN', 'ironlens_secret_key', 'DISK_DIR', 'IPXE_AGENT_BACKEND', 'ipxe_agent_backend']) {
      expect(() => checkTokenEnv(`Bearer-$\{${name}}`, anything), name).toThrowError(expect.objectContaining({ code: 'agent_token_env_reserved', status: 400, extra: { code: 'agent_token_env_reserved', variable: name } }));
      expect(() => expandToken(`$\{${name}}`, { [name]: 'value' }, anything), name).toThrowError(expect.objectContaining({ code: 'agent_token_env_reserved' }));
    }
    // The agents' own token, and any other name the patterns allow, stay usable.
    expect(expandToken('${IPXE_AGENT_TOKEN}', { IPXE_AGENT_TOKEN: 'agents' }, anything)).toBe('agents');
    expect(expandToken('${LIO_TOKEN}', { LIO_TOKEN: 'lio' }, anything)).toBe('lio');
    expect(envNameReserved('IPXE_AGENT_TOKEN', anything.reservedEnv)).toBe(false);
    expect(envNameReserved('IPXE_CPU', [])).toBe(false);
    // Without a list, the prefixes alone.
    expect(() => refuseReservedEnv('${KIND_K8S_DB}')).toThrowError(expect.objectContaining({ code: 'agent_token_env_reserved' }));
    expect(() => refuseReservedEnv('${DISK_DIR}')).not.toThrow();
    expect(() => refuseReservedEnv(null)).not.toThrow();
  });
});
