/** The commands about the client itself: login, logout, completion. */
import { createApi } from '../api';
import type { ClientVocabulary, VerbHandler, VerbHandlers } from '../context';
import { UsageError } from '../errors';
import { checkUrl, DEFAULT_URL, forgetLogin, readSaved, saveLogin } from '../login';
import { Transport } from '../transport';

export const login: VerbHandlers<'login'> = {
  '': {
    async run(ctx) {
      const url = ctx.opts.url || ctx.io.env.IRONLENS_URL || readSaved(ctx.io.env).url || DEFAULT_URL;
      const bad = checkUrl(url);
      if (bad) throw new UsageError(bad);
      const token = ctx.io.readStdin().split(/\r?\n/)[0]?.trim();
      if (!token) throw new UsageError('the token is read from standard input (first line)');
      // Checked against the API first (on either listener: /api/auth is on both).
      await createApi(new Transport(url, token, ctx.io.fetch)).whoami();
      const f = saveLogin(ctx.io.env, url, token);
      ctx.out(`logged in to ${url}; saved in ${f} (mode 0600)\n`);
      return 0;
    },
  },
};

export const logout: VerbHandlers<'logout'> = {
  '': {
    run(ctx) {
      ctx.out(`forgot the saved URL and token (${forgetLogin(ctx.io.env)})\n`);
      return 0;
    },
  },
};

const completionOf = (shell: 'bash' | 'zsh'): VerbHandler => ({
  run(ctx) {
    ctx.out(completionScript(shell, ctx.io.vocabulary));
    return 0;
  },
});
export const completion: VerbHandlers<'completion'> = { bash: completionOf('bash'), zsh: completionOf('zsh') };

/** A completion script for bash or zsh, from the command and verb tables. */
export function completionScript(shell: 'bash' | 'zsh', vocabulary: ClientVocabulary): string {
  const groups = Object.entries(vocabulary.client);
  const all = [...new Set([...vocabulary.commands, ...groups.map(([c]) => c)])];
  const cases = groups
    .filter(([, g]) => g.verbs.length)
    .map(([c, g]) => `    ${c}) COMPREPLY=( $(compgen -W "${g.verbs.join(' ')} --help --url -o" -- "$cur") ) ;;`)
    .join('\n');
  const bash = `# bash completion for ironlens: source <(ironlens completion bash)
_ironlens() {
  local cur="\${COMP_WORDS[COMP_CWORD]}"
  if [ "$COMP_CWORD" -eq 1 ]; then
    COMPREPLY=( $(compgen -W "${all.join(' ')} --help" -- "$cur") )
    return
  fi
  case "\${COMP_WORDS[1]}" in
${cases}
    *) COMPREPLY=( $(compgen -W "--help" -- "$cur") ) ;;
  esac
}
complete -F _ironlens ironlens
`;
  if (shell === 'bash') return bash;
  return `#compdef ironlens
# zsh completion for ironlens (bash's, through bashcompinit)
autoload -U +X bashcompinit && bashcompinit
${bash}`;
}
