import { hostname, networkInterfaces } from 'node:os';

/** Candidate addresses of this host, for the "Lens address" drop-down. */
export interface LensHosts {
  list(): string[];
}

/**
 * `IRONLENS_LENS_HOSTS` (comma-separated) when set; otherwise this host's non-internal IPv4
 * addresses, then its global IPv6 addresses, then its host name.
 */
export class SystemLensHosts implements LensHosts {
  constructor(private readonly configured: string | undefined) {}

  list(): string[] {
    if (this.configured) return [...new Set(this.configured.split(',').map((s) => s.trim()).filter(Boolean))];
    const v4: string[] = [];
    const v6: string[] = [];
    for (const list of Object.values(networkInterfaces())) {
      for (const a of list ?? []) {
        if (a.internal) continue;
        if (a.family === 'IPv4') v4.push(a.address);
        else if (!a.address.toLowerCase().startsWith('fe80')) v6.push(a.address);
      }
    }
    return [...new Set([...v4, ...v6, hostname()])];
  }
}
