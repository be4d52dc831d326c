/**
 * Boot benchmark (issue 30): the same master (`ironlens master build --firmware both`, from the
 * cached root filesystem scripts/build-test-master.sh fills) booted diskless by machines of each
 * firmware, one after the other, each from power-on to its host report, through `ironlens serve`
 * with its own boot services (DHCP, TFTP of Debian's iPXE), `ironlens agent`, tgtd and CHAP. It
 * prints the phases of each boot side by side: BIOS (SeaBIOS, the NIC's iPXE ROM), UEFI (OVMF,
 * iPXE's UEFI ROM) and UEFI with the firmware's own PXE (OVMF fetches snponly.efi by TFTP).
 * Root only (namespace, tgtd); qemu under TCG.
 *
 *   npm run bench:boot      (node --import tsx scripts/bench-boot.ts)
 *
 * Environment (optional): BENCH_BOOT_MACHINES (default `bios,uefi,uefi-pxe`; `uefi-sb` adds a
 * machine with Secure Boot on), BENCH_BOOT_MEMORY
 * (MiB, default 1024), BENCH_BOOT_TIMEOUT_S (per boot, default 600), BENCH_KEEP=1 (keep the work
 * directory with the serial logs).
 *
 * Everything runs in a private namespace; every process is stopped at the end, on failure and
 * on Ctrl-C too.
 */
import { randomBytes } from 'node:crypto';
import { copyFileSync, existsSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { buildMaster, planMasterBuild } from '@ironlens/agent/master';
import { exec } from '@ironlens/core';
import { waitFor } from '@ironlens/core/testing';
import { BootSite } from '../packages/metal/test/boot-site.harness';
import { bootPhases, type MachineFirmware, OVMF_SECURE_VARS, phaseTable, requireNetbootTools, timedLines } from '../packages/metal/test/netboot.harness';
import { machine } from './bench/machine';

const log = (m: string) => process.stderr.write(`[bench:boot] ${m}\n`);
const FIRMWARES = (process.env.BENCH_BOOT_MACHINES ?? 'bios,uefi,uefi-pxe').split(',').map((s) => s.trim()) as MachineFirmware[];
const MEMORY = Number(process.env.BENCH_BOOT_MEMORY ?? 1024);
const TIMEOUT_MS = Number(process.env.BENCH_BOOT_TIMEOUT_S ?? 600) * 1000;
const NET = 216;
const TOKEN = `bench-${randomBytes(6).toString('hex')}`;
const AGENT_TOKEN = `bench-agent-${randomBytes(6).toString('hex')}`;
const BASE_IQN = 'iqn.2026-07.io.ironlens.benchboot';
const TITLES: Record<MachineFirmware, string> = {
  bios: 'BIOS (SeaBIOS, iPXE ROM)',
  uefi: 'UEFI (OVMF, iPXE UEFI ROM)',
  'uefi-pxe': 'UEFI (OVMF PXE, snponly.efi by TFTP)',
  'uefi-sb': 'UEFI Secure Boot (OVMF, MS keys, iPXE UEFI ROM)',
};

async function main(): Promise<void> {
  for (const f of FIRMWARES) if (!(f in TITLES)) throw new Error(`BENCH_BOOT_MACHINES: ${f} is not one of ${Object.keys(TITLES).join(', ')}`);
  requireNetbootTools({ uefi: true });
  if (!existsSync(join(planMasterBuild({ os: 'debian-12', diskDir: tmpdir() }).rootfsDir, 'done'))) throw new Error('no cached master root filesystem: run scripts/build-test-master.sh first');
  const mc = machine();
  log(`machine: nproc ${mc.nproc}; CPU ${mc.cpu}; Node ${mc.node}; kernel ${mc.kernel}`);
  const work = mkdtempSync(join(tmpdir(), 'ironlens-bench-boot-'));
  let site: BootSite | undefined;
  const stop = () => site?.stopSync();
  process.once('SIGINT', () => {
    stop();
    process.exit(130);
  });
  try {
    const cpUrl = `http://192.168.${NET}.1:4839`;
    site = await BootSite.start({
      name: `ironlens-bench-boot-${process.pid}`,
      net: NET,
      taps: FIRMWARES.length,
      work,
      token: TOKEN,
      agentToken: AGENT_TOKEN,
      baseIqn: BASE_IQN,
      beforeAgent: async (disks) => {
        const key = join(work, 'bench-key');
        await exec(['ssh-keygen', '-q', '-t', 'ed25519', '-N', '', '-C', 'bench-boot', '-f', key]);
        const m = await buildMaster({ os: 'debian-12', diskDir: disks, firmware: 'both', authorizedKeys: [`${key}.pub`], controlPlane: cpUrl, log: () => {} });
        log(`master ${m.path} (${m.firmware}) assembled in ${m.seconds.toFixed(1)} s from the cached root filesystem`);
      },
    });
    await site.startServe('dhcp', { IRONLENS_ISCSI_CHAP: 'true' });
    const api = site.api.bind(site);
    const ok = async (p: Promise<{ status: number; text: string }>, want = 200) => {
      const r = await p;
      if (r.status !== want) throw new Error(`${r.status}: ${r.text.slice(0, 300)}`);
    };
    await ok(api('POST', '/agents', { id: 'storage', base_url: 'http://127.0.0.1:4840', token: AGENT_TOKEN, iscsi_server: site.srv, role: { disk: true, cd: false } }), 201);
    const machines = FIRMWARES.map((firmware, i) => ({ firmware, id: `bench-${firmware}`, mac: `52:54:00:b6:00:0${i + 1}`, tap: `tap${i + 1}`, memory: MEMORY, varsFile: join(work, `vars-${i + 1}.fd`) }));
    for (const m of machines) if (m.firmware === 'uefi-sb') copyFileSync(OVMF_SECURE_VARS, m.varsFile);
    for (const m of machines) {
      await ok(api('POST', '/devices', { mac: m.mac }), 201);
      await ok(api('POST', '/workers', { worker_id: m.id }));
      await ok(api('POST', `/devices/${m.mac}/bind?worker_id=${m.id}`));
      await ok(api('POST', `/workers/${m.id}/luns/disk`, { type: 'master', os: 'debian', name: '_tpl_debian_12.img' }));
      await ok(api('PUT', `/workers/${m.id}/default-os`, { os: 'debian', menu_timeout: 1 }));
    }
    const columns: Array<{ title: string; row: Record<string, number | undefined> }> = [];
    // One machine at a time: each boot has the two cores to itself.
    for (const m of machines) {
      log(`${m.id}: power on (${TITLES[m.firmware]}, ${MEMORY} MiB)`);
      const poweredOn = Date.now();
      const qemu = site.powerOn(m.id, m);
      const w = await waitFor(
        `${m.id}'s host report`,
        async () => {
          if (!qemu.running) throw new Error(`${m.id}'s qemu exited (code ${qemu.code}); see ${join(work, `${m.id}.serial.log`)}`);
          return (await api('GET', `/workers/${m.id}`)).json<{ host?: { reported_at: string } | null }>();
        },
        (x) => !!x.host,
        TIMEOUT_MS,
        500,
      );
      await qemu.kill();
      const bootVars = site
        .requested(`/boot-vars?mac=${encodeURIComponent(m.mac)}`)
        .map((r) => r.time)
        .filter((t) => t >= poweredOn)
        .at(0);
      const row = bootPhases(timedLines(join(work, `${m.id}.serial.log`)), { poweredOn, bootVars, hostReport: Date.parse(w.host!.reported_at) });
      columns.push({ title: TITLES[m.firmware], row });
      log(`${m.id}: host report ${row['host report']?.toFixed(1)} s after power-on`);
    }
    const load = (await import('node:os')).loadavg()[0].toFixed(2);
    process.stdout.write(`boot phases of one master (--firmware both), one machine at a time, ${MEMORY} MiB each, qemu TCG; 1-min load ${load} after:\n${phaseTable(columns)}\n`);
  } finally {
    await site?.stop().catch(() => stop());
    if (process.env.BENCH_KEEP === '1') log(`kept ${work}`);
    else rmSync(work, { recursive: true, force: true });
  }
}

main().catch((err) => {
  process.stderr.write(`[bench:boot] failed: ${(err as Error).stack ?? err}\n`);
  process.exit(1);
});
