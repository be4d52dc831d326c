/**
 * How a listener's bound address is printed: `127.0.0.1:8080`, `[::1]:8080`, and for the
 * wildcard addresses `0.0.0.0:4839 — every interface` (the URL one connects to says
 * 127.0.0.1, which is not where the listener is reachable from).
 */
export function describeAddress(address: string, port: number): string {
  const host = address.includes(':') ? `[${address}]` : address;
  const wildcard = address === '0.0.0.0' || address === '::' || address === '';
  return `${wildcard && address === '' ? '0.0.0.0' : host}:${port}${wildcard ? ' — every interface' : ''}`;
}

/** 127.0.0.0/8, ::1 and ::ffff:127.x: reachable from this machine only. */
export function isLoopback(address: string): boolean {
  return /^127\./.test(address) || address === '::1' || /^::ffff:127\./i.test(address);
}
