import { type FormEvent, useEffect, useState } from 'react';
import { useAction } from '../../../shared/use-poll';
import { DataTable } from '../../components/tables';
import { bytes, ErrorNote, ScrollBox, when } from '../../components/ui';
import { gate, useAccess } from '../../access';
import { useConsole } from '../../context';
import type { WorkerView } from '../../metal-api';
import { Link } from '../../router';

/** Issue 24: "booted N s ago" from the last boot's host report, refreshed every second. */
export function bootedAgo(w: Pick<WorkerView, 'boot_timeline' | 'host'>, now: number): string {
  const at = w.boot_timeline?.host_report_at ?? w.host?.reported_at ?? null;
  if (!at) return '—';
  const s = Math.max(0, Math.round((now - Date.parse(at)) / 1000));
  if (s < 120) return `booted ${s} s ago`;
  if (s < 7200) return `booted ${Math.round(s / 60)} min ago`;
  if (s < 172_800) return `booted ${Math.round(s / 3600)} h ago`;
  return `booted ${Math.round(s / 86_400)} d ago`;
}

export function useNow(everyMs = 1000): number {
  const [now, setNow] = useState(() => Date.now());
  useEffect(() => {
    const t = setInterval(() => setNow(Date.now()), everyMs);
    return () => clearInterval(t);
  }, [everyMs]);
  return now;
}

/** The worker page's host report, accelerators and boot timeline (issue 24). */
export function HostReport({ w }: { w: WorkerView }) {
  const now = useNow();
  const h = w.host;
  const t = w.boot_timeline;
  if (!h) {
    return (
      <section className="card" aria-labelledby="host-title" data-testid="worker-host">
        <h2 id="host-title">Host report</h2>
        <p className="muted">Not reported yet: the host reporter of the master image reports when the machine has booted.</p>
      </section>
    );
  }
  const hw = h.hardware;
  return (
    <>
      <section className="card" aria-labelledby="host-title" data-testid="worker-host">
        <h2 id="host-title">Host report</h2>
        <dl className="facts">
          <dt>Address</dt>
          <dd className="mono" data-testid="worker-address">
            {w.address ?? '—'}
            {w.fixed_address ? ` (fixed ${w.fixed_address})` : ''}
          </dd>
          <dt>Booted</dt>
          <dd data-testid="worker-booted">{bootedAgo(w, now)}</dd>
          <dt>Operating system</dt>
          <dd data-testid="worker-os">{h.os.pretty_name || `${h.os.id} ${h.os.version_id}`}</dd>
          <dt>Kernel</dt>
          <dd className="mono">{h.kernel}</dd>
          <dt>CPU</dt>
          <dd>
            {hw.cpus} × {hw.cpu_model || 'unknown model'}
          </dd>
          <dt>Memory</dt>
          <dd>{bytes(hw.memory_bytes)}</dd>
          <dt>Cluster</dt>
          <dd>{w.cluster_id ? <Link to={`/clusters/${encodeURIComponent(w.cluster_id)}`}>{w.cluster_id}</Link> : '—'}</dd>
          <dt>Reported</dt>
          <dd>{when(h.reported_at)}</dd>
        </dl>
        <h3>SSH host keys</h3>
        <ul className="plain" data-testid="worker-host-keys">
          {h.ssh_host_keys.map((k) => (
            <li key={k.fingerprint}>
              {k.algorithm} <span className="mono">{k.fingerprint}</span>
            </li>
          ))}
        </ul>
        <ScrollBox label="Network interfaces">
          <DataTable
            caption="Network interfaces"
            showCaption
            testId="worker-nics"
            columns={['Interface', 'MAC', 'Speed', 'IPv4', 'IPv6']}
            rows={h.addresses.map((a) => {
              const nic = hw.nics.find((n) => n.name === a.interface);
              return {
                key: a.interface,
                cellClass: [undefined, 'mono', undefined, 'mono', 'mono'],
                cells: [a.interface, a.mac, nic?.speed_mbps ? `${nic.speed_mbps} Mb/s` : '—', a.ipv4.join(', ') || '—', a.ipv6.join(', ') || '—'],
              };
            })}
          />
        </ScrollBox>
        <h3>Disks</h3>
        <ul className="plain">
          {hw.disks.map((d) => (
            <li key={d.name}>
              {d.name}: {bytes(d.size_bytes)} {d.model ? `(${d.model})` : ''}
            </li>
          ))}
          {hw.disks.length === 0 && <li className="muted">none reported</li>}
        </ul>
      </section>
      <section className="card" aria-labelledby="acc-title" data-testid="worker-accelerators">
        <h2 id="acc-title">Accelerators</h2>
        {hw.accelerators.length === 0 ? (
          <p className="muted">No GPU or accelerator on the PCI bus.</p>
        ) : (
          <ul className="plain">
            {hw.accelerators.map((x) => (
              <li key={`${x.vendor}/${x.model}`}>
                {x.count} × {x.model} <span className="muted small">({x.vendor}{x.pci_id ? `, ${x.pci_id}` : ''})</span>
                {x.memory_bytes ? `, ${bytes(x.memory_bytes)} each` : ''}
              </li>
            ))}
          </ul>
        )}
      </section>
      {t && (
        <section className="card" aria-labelledby="tl-title" data-testid="worker-boot-timeline">
          <h2 id="tl-title">Last boot</h2>
          <ol className="plain">
            <li>iPXE device report: {t.report_at ? when(t.report_at) : '—'}</li>
            <li>/boot-vars answered: {t.boot_vars_at ? when(t.boot_vars_at) : '—'}</li>
            <li>First iSCSI login: {t.iscsi_login_at ? when(t.iscsi_login_at) : 'not known'}</li>
            <li>Host report: {t.host_report_at ? when(t.host_report_at) : '—'}</li>
          </ol>
          <p data-testid="worker-boot-seconds">{t.seconds !== null ? `${t.seconds} s from the first event to the host report` : 'one event only'}</p>
        </section>
      )}
    </>
  );
}

/** The worker's fixed IPv4 (issue 24): dnsmasq gives it to the bound MAC, with a lease that never runs out. */
export function FixedAddressForm({ id, current, onDone }: { id: string; current: string | null; onDone: () => void }) {
  const { metal } = useConsole();
  const access = useAccess();
  const [value, setValue] = useState(current ?? '');
  const act = useAction();
  useEffect(() => setValue(current ?? ''), [current]);
  const submit = async (e: FormEvent) => {
    e.preventDefault();
    const ok = await act.run(() => metal.setWorkerAddress(id, value.trim() || null));
    if (ok) onDone();
  };
  return (
    <section className="card" aria-labelledby="fixed-title">
      <h2 id="fixed-title">Fixed address</h2>
      <form className="form" onSubmit={submit}>
        <label className="field">
          <span>IPv4 address the hosts file gives this worker (empty: from the DHCP range)</span>
          <input value={value} onChange={(e) => setValue(e.target.value)} placeholder="192.168.81.11" inputMode="decimal" data-testid="worker-fixed-address" />
        </label>
        <div className="form-actions start">
          <button type="submit" className="btn" {...gate(access, 'metal:worker:write', act.pending || value.trim() === (current ?? ''))} data-testid="worker-fixed-address-save">
            Save address
          </button>
        </div>
      </form>
      <ErrorNote error={act.error} testId="worker-fixed-address-error" />
    </section>
  );
}
