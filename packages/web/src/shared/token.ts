import { useSyncExternalStore } from 'react';

/** Where the console token is kept: this tab's session only, never localStorage. */
export const TOKEN_STORAGE_KEY = 'ironlens.console.token';

export interface TokenState {
  /** The token sent as `Authorization: Bearer …`, or null. */
  token: string | null;
  /** The API answered 401: the page asks for a token. */
  required: boolean;
  /** The last token tried was refused. */
  rejected: boolean;
}

/**
 * The console token of this tab: read from `sessionStorage`, written there when entered,
 * removed by "forget". The API client asks it for the header and reports 401s to it;
 * React components follow it through `useConsoleToken`.
 */
export class ConsoleToken {
  private state: TokenState;
  private readonly listeners = new Set<() => void>();

  constructor(private readonly storage: Storage | null = safeSessionStorage()) {
    this.state = { token: this.read(), required: false, rejected: false };
  }

  get = (): string | null => this.state.token;

  snapshot = (): TokenState => this.state;

  subscribe = (listener: () => void): (() => void) => {
    this.listeners.add(listener);
    return () => this.listeners.delete(listener);
  };

  set(token: string): void {
    const t = token.trim();
    if (!t) return;
    try {
      this.storage?.setItem(TOKEN_STORAGE_KEY, t);
    } catch {
      // Storage full or disabled: the token still works for this page.
    }
    this.update({ token: t, required: false, rejected: false });
  }

  forget(): void {
    try {
      this.storage?.removeItem(TOKEN_STORAGE_KEY);
    } catch {
      // nothing kept
    }
    this.update({ token: null, required: this.state.required, rejected: false });
  }

  /** A request sent with `sent` got 401. A late answer to a token already replaced is ignored. */
  unauthorized(sent: string | null): void {
    if (sent !== this.state.token) return;
    if (sent !== null) {
      try {
        this.storage?.removeItem(TOKEN_STORAGE_KEY);
      } catch {
        // nothing kept
      }
    }
    const rejected = sent !== null || this.state.rejected;
    if (this.state.token === null && this.state.required && this.state.rejected === rejected) return;
    this.update({ token: null, required: true, rejected });
  }

  private read(): string | null {
    try {
      return this.storage?.getItem(TOKEN_STORAGE_KEY) || null;
    } catch {
      return null;
    }
  }

  private update(next: TokenState): void {
    this.state = next;
    for (const l of this.listeners) l();
  }
}

function safeSessionStorage(): Storage | null {
  try {
    return typeof sessionStorage === 'undefined' ? null : sessionStorage;
  } catch {
    return null;
  }
}

export function useConsoleToken(store: ConsoleToken): TokenState {
  return useSyncExternalStore(store.subscribe, store.snapshot);
}
