import { checkBootUrl } from '../services/boot-script.service';
import { BIOS_FILE, type BootServicesConfig, checkDnsmasqPath, checkInterfaceName, checkIpv4, checkLeaseTime, checkNetmask, EFI_FILES } from './boot-services.config';

/**
 * dnsmasq's argument array for ironlens' boot services: no configuration file, no DNS
 * (`--port=0`), logging to stderr (ironlens' log), bound to the one interface, the hosts file
 * ironlens renders, TFTP of the iPXE binaries, and the boot file by client:
 *
 * - iPXE (user class `iPXE`: a NIC's iPXE ROM, or the iPXE that TFTP just handed out) gets
 *   `<url>/boot.ipxe`, the script ironlens serves with its own address filled in;
 * - a BIOS PXE firmware (client architecture 0) gets `undionly.kpxe`, a UEFI x86-64 one
 *   (architectures 7 and 9) the configured EFI binary; anything else gets no boot file.
 *
 * `proxy` does this with proxy-DHCP `--pxe-service` lines, one per client architecture (Debian's
 * iPXE of 2019 ignores a proxy's `--dhcp-boot` and says "Nothing to boot"); `dhcp` hands out
 * addresses from the range and names the boot file in the offer. Every value is checked again
 * here, whatever the caller checked.
 */
export function dnsmasqArgv(cfg: BootServicesConfig, at: { url: string; network?: string }): string[] {
  const iface = checkInterfaceName(cfg.interface);
  const url = `${checkBootUrl(at.url)}/boot.ipxe`;
  const efi = cfg.efiFile;
  if (!(EFI_FILES as readonly string[]).includes(efi)) throw new Error(`not an iPXE EFI binary: ${efi}`);
  const argv = [
    cfg.dnsmasq === 'dnsmasq' ? 'dnsmasq' : checkDnsmasqPath(cfg.dnsmasq, 'IRONLENS_BOOT_DNSMASQ'),
    '--keep-in-foreground',
    '--conf-file=/dev/null',
    '--port=0',
    '--log-facility=-',
    `--interface=${iface}`,
    '--bind-interfaces',
    `--dhcp-hostsfile=${checkDnsmasqPath(cfg.hostsFile, 'IPXE_CP_DNSMASQ_HOSTS_FILE')}`,
    `--dhcp-leasefile=${checkDnsmasqPath(cfg.leaseFile, 'lease file')}`,
    `--pid-file=${checkDnsmasqPath(cfg.pidFile, 'pid file')}`,
    '--enable-tftp',
    `--tftp-root=${checkDnsmasqPath(cfg.ipxeDir, 'IRONLENS_BOOT_IPXE_DIR')}`,
    '--dhcp-userclass=set:ipxe,iPXE',
  ];
  if (cfg.mode === 'dhcp') {
    const r = cfg.range;
    if (!r) throw new Error('dhcp mode without a range');
    argv.push(`--dhcp-range=${[checkIpv4(r.start, 'range'), checkIpv4(r.end, 'range'), ...(r.netmask ? [checkNetmask(r.netmask, 'range')] : []), checkLeaseTime(cfg.leaseTime, 'lease')].join(',')}`);
    if (cfg.router === 'none') argv.push('--dhcp-option=option:router');
    else if (cfg.router) argv.push(`--dhcp-option=option:router,${checkIpv4(cfg.router, 'router')}`);
    if (cfg.dns.length) argv.push(`--dhcp-option=option:dns-server,${cfg.dns.map((d) => checkIpv4(d, 'dns')).join(',')}`);
    argv.push(
      '--dhcp-match=set:bios,option:client-arch,0',
      '--dhcp-match=set:efi64,option:client-arch,7',
      '--dhcp-match=set:efi64,option:client-arch,9',
      `--dhcp-boot=tag:ipxe,${url}`,
      `--dhcp-boot=tag:!ipxe,tag:efi64,${efi}`,
      `--dhcp-boot=tag:!ipxe,tag:bios,${BIOS_FILE}`,
    );
  } else {
    if (!at.network) throw new Error(`proxy mode needs the network of ${iface}`);
    argv.push(`--dhcp-range=${checkIpv4OrNetwork(at.network)},proxy`);
    for (const csa of ['x86PC', 'BC_EFI', 'x86-64_EFI']) argv.push(`--pxe-service=tag:ipxe,${csa},ironlens,${url}`);
    argv.push(`--pxe-service=tag:!ipxe,x86PC,ironlens,${BIOS_FILE}`, `--pxe-service=tag:!ipxe,BC_EFI,ironlens,${efi}`, `--pxe-service=tag:!ipxe,x86-64_EFI,ironlens,${efi}`);
  }
  // Router advertisements: iPXE skips its ~13 s wait for IPv6 autoconfiguration.
  if (cfg.ra) argv.push('--enable-ra', `--dhcp-range=::,constructor:${iface},ra-only`);
  return argv;
}

/** A network address (`192.168.1.0`): dotted quad, each octet 0-255. */
function checkIpv4OrNetwork(value: string): string {
  if (!/^(25[0-5]|2[0-4]\d|1\d\d|[1-9]?\d)(\.(25[0-5]|2[0-4]\d|1\d\d|[1-9]?\d)){3}$/.test(value)) throw new Error(`not an IPv4 network: ${value}`);
  return value;
}
