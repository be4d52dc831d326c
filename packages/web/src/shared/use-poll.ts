import { useCallback, useEffect, useRef, useState } from 'react';

export interface Polled<T> {
  data: T | undefined;
  /** The last error's message; cleared by the next success. */
  error: string | null;
  loading: boolean;
  /** Fetches now (the interval keeps running). */
  refresh: () => Promise<void>;
}

/**
 * Calls `load` now, then every `intervalMs` while the tab is visible (a hidden tab polls
 * nothing; it refreshes when shown again). Keeps the last good value and the last error.
 * `deps` restart it (a filter changed).
 */
export function usePoll<T>(load: () => Promise<T>, intervalMs: number, deps: unknown[] = []): Polled<T> {
  const [data, setData] = useState<T>();
  const [error, setError] = useState<string | null>(null);
  const [loading, setLoading] = useState(true);
  const loadRef = useRef(load);
  loadRef.current = load;
  const seq = useRef(0);
  // `deps` restart the poll by design (a new filter is a new poll).
  const refresh = useCallback(async () => {
    const mine = ++seq.current;
    try {
      const v = await loadRef.current();
      if (mine !== seq.current) return;
      setData(v);
      setError(null);
    } catch (err) {
      if (mine !== seq.current) return;
      setError((err as Error).message);
    } finally {
      if (mine === seq.current) setLoading(false);
    }
  }, deps);
  useEffect(() => {
    setLoading(true);
    void refresh();
    if (intervalMs <= 0) return;
    const tick = () => {
      if (document.visibilityState === 'visible') void refresh();
    };
    const t = setInterval(tick, intervalMs);
    const onShow = () => {
      if (document.visibilityState === 'visible') void refresh();
    };
    document.addEventListener('visibilitychange', onShow);
    return () => {
      clearInterval(t);
      document.removeEventListener('visibilitychange', onShow);
    };
  }, [refresh, intervalMs]);
  return { data, error, loading, refresh };
}

/** Runs an action, keeping its pending state and its error message for the form that started it. */
export function useAction() {
  const [pending, setPending] = useState(false);
  const [error, setError] = useState<string | null>(null);
  const run = useCallback(async <T,>(fn: () => Promise<T>): Promise<T | undefined> => {
    setPending(true);
    setError(null);
    try {
      return await fn();
    } catch (err) {
      setError((err as Error).message);
      return undefined;
    } finally {
      setPending(false);
    }
  }, []);
  return { pending, error, setError, run };
}
