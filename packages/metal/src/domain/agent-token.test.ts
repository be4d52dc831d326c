// biome-ignore-all lint/suspicious/noTemplateCurlyInString: `${NAME}` in plain strings is what these tests are about.
import { describe, expect, it } from 'vitest';
import { checkTokenEnv, envNameAllowed, expandToken, tokenEnvNames } from './agent-token';

const DEFAULT = ['IPXE_AGENT_*'];

describe('agent tokens written ${NAME}', () => {
  it('finds the names a token refers to', () => {
    expect(tokenEnvNames('a${X}b${Y_1}c${bad-name}$Z')).toEqual(['X', 'Y_1']);
  });

  it('allows exact names and prefixes ending in *', () => {
    expect(envNameAllowed('IPXE_AGENT_TOKEN', DEFAULT)).toBe(true);
    expect(envNameAllowed('IRONLENS_CONSOLE_TOKEN', DEFAULT)).toBe(false);
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
});
