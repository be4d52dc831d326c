import { readFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';

/** The shipped script (`packages/metal/assets/boot.ipxe`), deployed unchanged by TFTP. */
export const BOOT_IPXE_PATH = join(dirname(fileURLToPath(import.meta.url)), '..', '..', 'assets', 'boot.ipxe');

/** The one line of the shipped script that names the control plane when nothing else did. */
// biome-ignore lint/suspicious/noTemplateCurlyInString: iPXE script, where ${...} is its own syntax
export const CP_URL_LINE = 'isset ${cp-url} || set cp-url http://${next-server}:4839';

/**
 * The control plane's URL as machines reach it (`IRONLENS_BOOT_URL`, or the boot services'
 * address on the provisioning interface and the provisioning listener's port): `http(s)://`,
 * an IPv4 address, a bracketed IPv6 address or a host name, an optional port, no path, no
 * user, no query. It is written into an iPXE script and dnsmasq's arguments: nothing else
 * gets through. Returns it without a trailing slash.
 */
export function checkBootUrl(url: string, setting = 'IRONLENS_BOOT_URL'): string {
  const m = /^(https?):\/\/(\[[0-9a-fA-F:.]{2,45}\]|[A-Za-z0-9](?:[A-Za-z0-9.-]{0,251}[A-Za-z0-9])?)(?::(\d{1,5}))?\/?$/.exec(url);
  const port = m?.[3] === undefined ? 1 : Number(m[3]);
  if (!m || port < 1 || port > 65535) throw new Error(`${setting} must be http(s)://host[:port] (an address or a host name, no path), got ${JSON.stringify(url.slice(0, 80))}`);
  return url.replace(/\/$/, '');
}

/**
 * `GET /boot.ipxe`: the shipped script served over HTTP by the provisioning listener, with the
 * control plane's URL filled in (`set cp-url <url>` where the shipped script falls back to the
 * TFTP server's address), so a site whose DHCP server is not ironlens' (proxy-DHCP: the boot
 * server is not the `next-server`) edits nothing. A first stage that set `cp-url` still wins.
 * Without a URL the shipped script is served as it is.
 */
export class BootScriptService {
  private url: string | undefined;

  constructor(
    private readonly template: string = readFileSync(BOOT_IPXE_PATH, 'utf8'),
    url?: string,
  ) {
    if (template.split('\n').filter((l) => l.trim() === CP_URL_LINE).length !== 1) throw new Error(`boot.ipxe must hold the line ${JSON.stringify(CP_URL_LINE)} exactly once`);
    if (url !== undefined) this.useUrl(url);
  }

  /** The URL machines reach the control plane at; checked. */
  useUrl(url: string): void {
    this.url = checkBootUrl(url);
  }

  get controlPlaneUrl(): string | undefined {
    return this.url;
  }

  /** The script; the URL is checked again where it is written. */
  render(): string {
    if (this.url === undefined) return this.template;
    const url = checkBootUrl(this.url);
    return this.template
      .split('\n')
      .map((l) => (l.trim() === CP_URL_LINE ? `isset \${cp-url} || set cp-url ${url}` : l))
      .join('\n');
  }
}
