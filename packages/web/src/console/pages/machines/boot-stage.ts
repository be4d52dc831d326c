import type { Device, WorkerView } from '../../metal-api';

/** The firmware a device booted with at its last report (iPXE's `${platform}`): `UEFI`, `BIOS`, or `—` before a report said. */
export function firmwareLabel(platform: string | null | undefined): string {
  if (platform === 'efi') return 'UEFI';
  if (platform === 'pcbios') return 'BIOS';
  return '—';
}

export interface BootStage {
  /** Where the last network boot got to, as the control plane saw it. */
  stage: 'none' | 'ipxe' | 'host report';
  /** One line for the table. */
  text: string;
  /** When that stage was seen. */
  at: string | null;
}

/**
 * Where a device's last network boot stopped, from what the control plane recorded (issue 30):
 * iPXE's device report (`last_seen`) and, for a bound device, its worker's boot timeline (kept
 * when the booted host reports: `/boot-vars`, the first iSCSI login, the host report). A report
 * newer than the last host report is a boot that has not (yet) reached the booted system.
 */
export function lastBootStage(d: Pick<Device, 'state' | 'last_seen' | 'bound_worker_id'>, w?: Pick<WorkerView, 'boot_timeline' | 'disks' | 'default_os'> | null): BootStage {
  const t = w?.boot_timeline ?? null;
  const seen = d.last_seen ? Date.parse(d.last_seen) : Number.NaN;
  const reported = t?.host_report_at ? Date.parse(t.host_report_at) : Number.NaN;
  if (!Number.isNaN(reported) && (Number.isNaN(seen) || reported >= seen)) {
    const steps = [t?.boot_vars_at && 'boot vars', t?.iscsi_login_at && 'iSCSI login'].filter(Boolean).join(', ');
    return { stage: 'host report', text: `booted: host report${t?.seconds != null ? ` ${Math.round(t.seconds)} s after iPXE` : ''}${steps ? ` (${steps})` : ''}`, at: t?.host_report_at ?? null };
  }
  if (Number.isNaN(seen)) return { stage: 'none', text: 'no network boot seen', at: null };
  let why: string;
  if (d.state === 'revoked') why = 'revoked: ignored';
  else if (d.state !== 'bound') why = 'in the pool: reboots until bound to a worker';
  else if (w && (w.disks.length === 0 || !w.default_os)) why = 'no system disk or default OS yet: reboot loop';
  else why = `no host report since${t?.host_report_at ? ' (the last one came from an earlier boot)' : ''}: check the console, GRUB and the initramfs`;
  return { stage: 'ipxe', text: `iPXE report; ${why}`, at: d.last_seen };
}
