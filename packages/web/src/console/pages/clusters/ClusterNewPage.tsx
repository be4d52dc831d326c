import { type FormEvent, useEffect, useState } from 'react';
import { useAction, usePoll } from '../../../shared/use-poll';
import { gate, useAccess } from '../../access';
import type { ClusterRecord, CrdApplyResult, GatewayPortCheck, KubernetesVersion, PrepullStatus, ProxyConfig, SoftwareDownloads } from '../../clusters-api';
import { DataTable } from '../../components/tables';
import { Badge, ErrorNote, Meter, PageHeader, ScrollBox } from '../../components/ui';
import { useConsole } from '../../context';
import { navigate, useLocation } from '../../router';

const STEPS = ['Kubeconfig', 'Proxy', 'Gateway', 'Hugging Face token', 'Software and images', 'CRDs'] as const;
const PROVIDERS = ['envoy-ai-gateway', 'istio', 'agentgateway', 'gke'] as const;
const ACCELERATORS = [
  { id: 'nvidia', label: 'NVIDIA (llm-d-cuda)' },
  { id: 'intel', label: 'Intel (llm-d-xpu)' },
];

/**
 * The registration wizard (seed 000's create flow): the cluster is registered as a draft at the
 * first step, each later step saves to it, and "Finish" clears the draft flag. A draft can be
 * resumed from the list (`/clusters/new?draft=<id>`).
 */
export function ClusterNewPage() {
  const { clusters } = useConsole();
  const { search } = useLocation();
  const draftId = search.get('draft');
  const [cluster, setCluster] = useState<ClusterRecord | null>(null);
  const [step, setStep] = useState(0);
  const load = useAction();

  useEffect(() => {
    if (!draftId) return;
    void load.run(async () => {
      const list = await clusters.clusters(true);
      const c = list.items.find((x) => x.id === draftId);
      if (!c) throw new Error(`no draft cluster ${draftId}`);
      setCluster(c);
      setStep(1);
    });
  }, [draftId, clusters, load.run]);

  const saved = (c: ClusterRecord) => setCluster(c);
  const next = () => setStep((s) => Math.min(s + 1, STEPS.length - 1));

  return (
    <>
      <PageHeader title="Register a cluster" lead={cluster ? `Draft ${cluster.name} (${cluster.id}): saved at every step.` : 'Upload a kubeconfig; the cluster is kept as a draft until the last step.'} />
      <ol className="steps" aria-label="Steps">
        {STEPS.map((s, i) => (
          <li key={s} className={i === step ? 'current' : i < step ? 'done' : ''} aria-current={i === step ? 'step' : undefined}>
            {i + 1}. {s}
          </li>
        ))}
      </ol>
      <ErrorNote error={load.error} />
      {step === 0 && (
        <KubeconfigStep
          onRegistered={(c) => {
            saved(c);
            navigate(`/clusters/new?draft=${encodeURIComponent(c.id)}`, { replace: true });
          }}
        />
      )}
      {cluster && step >= 1 && <VersionCheck cluster={cluster} blocking={step === 1} />}
      {cluster && step === 1 && <ProxyStep cluster={cluster} onSaved={saved} onNext={next} />}
      {cluster && step === 2 && <GatewayStep cluster={cluster} onSaved={saved} onNext={next} />}
      {cluster && step === 3 && <HfStep cluster={cluster} onSaved={saved} onNext={next} />}
      {cluster && step === 4 && <SoftwareStep cluster={cluster} onNext={next} />}
      {cluster && step === 5 && <CrdStep cluster={cluster} />}
      {cluster && step > 1 && (
        <div className="form-actions start">
          <button type="button" className="btn" onClick={() => setStep((s) => s - 1)}>
            Back
          </button>
        </div>
      )}
    </>
  );
}

function KubeconfigStep({ onRegistered }: { onRegistered: (c: ClusterRecord) => void }) {
  const { clusters } = useConsole();
  const access = useAccess();
  const [name, setName] = useState('');
  const [description, setDescription] = useState('');
  const [file, setFile] = useState<File | null>(null);
  const act = useAction();
  const submit = async (e: FormEvent) => {
    e.preventDefault();
    if (!file) return;
    const r = await act.run(() => clusters.register({ name: name.trim(), description: description.trim() || undefined, file, draft: true }));
    if (r) onRegistered(r.cluster);
  };
  return (
    <section className="card" aria-labelledby="kc-title">
      <h2 id="kc-title">Kubeconfig</h2>
      <form className="form" onSubmit={submit}>
        <div className="grid-2">
          <label className="field">
            <span>Cluster name</span>
            <input value={name} onChange={(e) => setName(e.target.value)} required data-testid="cluster-name" />
          </label>
          <label className="field">
            <span>Description (optional)</span>
            <input value={description} onChange={(e) => setDescription(e.target.value)} />
          </label>
          <label className="field">
            <span>Kubeconfig file (UTF-8 YAML)</span>
            <input type="file" accept=".yaml,.yml,.conf,.config,text/yaml,text/plain" onChange={(e) => setFile(e.target.files?.[0] ?? null)} required data-testid="cluster-kubeconfig" />
          </label>
        </div>
        <p className="muted small">The kubeconfig is stored encrypted by the server and never shown again.</p>
        <div className="form-actions start">
          <button type="submit" className="btn btn-primary" {...gate(access, 'cluster:cluster:create', !file || !name.trim() || act.pending)} data-testid="cluster-upload">
            Upload and check
          </button>
        </div>
      </form>
      <ErrorNote error={act.error} testId="cluster-upload-error" />
    </section>
  );
}

/** The Kubernetes version check: the wizard cannot go on while the cluster is unreachable or too old. */
function VersionCheck({ cluster, blocking }: { cluster: ClusterRecord; blocking: boolean }) {
  const { clusters } = useConsole();
  const v = usePoll(() => clusters.kubernetesVersion(cluster.id), blocking ? 10_000 : 0, [cluster.id, JSON.stringify(cluster.proxy)]);
  return (
    <section className="card" aria-labelledby="kv-title" data-testid="k8s-version">
      <h2 id="kv-title">Kubernetes version</h2>
      <ErrorNote error={v.error} />
      {v.data && <VersionLine v={v.data} />}
      {!v.data && !v.error && <p className="muted">checking…</p>}
    </section>
  );
}

function VersionLine({ v }: { v: KubernetesVersion }) {
  if (!v.reachable)
    return (
      <p className="error-note" role="alert" data-testid="k8s-unreachable">
        The cluster cannot be reached{v.error ? `: ${v.error}` : ''}. Fix the kubeconfig or the proxy before going on.
      </p>
    );
  return (
    <p data-testid="k8s-version-line">
      Kubernetes {v.version} — {v.supported ? <Badge tone="good">supported</Badge> : <Badge tone="bad">too old</Badge>} (llm-d needs at least {v.min_k8s_version})
    </p>
  );
}

function ProxyStep({ cluster, onSaved, onNext }: { cluster: ClusterRecord; onSaved: (c: ClusterRecord) => void; onNext: () => void }) {
  const { clusters } = useConsole();
  const access = useAccess();
  const [p, setP] = useState<ProxyConfig>(cluster.proxy ?? { mode: 'auto', httpProxy: null, httpsProxy: null, noProxy: null });
  const v = usePoll(() => clusters.kubernetesVersion(cluster.id), 0, [cluster.id, JSON.stringify(cluster.proxy)]);
  const act = useAction();
  const save = async (e: FormEvent) => {
    e.preventDefault();
    const r = await act.run(() => clusters.update(cluster.id, { proxy: p.mode === 'custom' ? p : { mode: p.mode, httpProxy: null, httpsProxy: null, noProxy: null } }));
    if (r) onSaved(r.cluster);
  };
  const ok = !!v.data?.reachable && !!v.data?.supported;
  return (
    <section className="card" aria-labelledby="px-title">
      <h2 id="px-title">Proxy</h2>
      <form className="form" onSubmit={save}>
        <label className="field">
          <span>How ironlens reaches this cluster</span>
          <select value={p.mode} onChange={(e) => setP({ ...p, mode: e.target.value as ProxyConfig['mode'] })} data-testid="proxy-mode">
            <option value="auto">automatic: ironlens’ own proxy settings (HTTPS_PROXY, NO_PROXY), if any</option>
            <option value="custom">through this proxy</option>
            <option value="none">directly, even if ironlens has proxy settings</option>
          </select>
        </label>
        {p.mode === 'custom' && (
          <div className="grid-2">
            <label className="field">
              <span>HTTP proxy</span>
              <input value={p.httpProxy ?? ''} onChange={(e) => setP({ ...p, httpProxy: e.target.value })} placeholder="http://proxy:3128" />
            </label>
            <label className="field">
              <span>HTTPS proxy</span>
              <input value={p.httpsProxy ?? ''} onChange={(e) => setP({ ...p, httpsProxy: e.target.value })} placeholder="http://proxy:3128" />
            </label>
            <label className="field">
              <span>No proxy</span>
              <input value={p.noProxy ?? ''} onChange={(e) => setP({ ...p, noProxy: e.target.value })} placeholder="127.0.0.1,localhost,.svc" />
            </label>
          </div>
        )}
        <div className="form-actions start">
          <button type="submit" className="btn" {...gate(access, 'cluster:cluster:update', act.pending)} data-testid="proxy-save">
            Save and check again
          </button>
          <button type="button" className="btn btn-primary" disabled={!ok} onClick={onNext} data-testid="wizard-next-proxy" title={ok ? undefined : 'The cluster must be reachable and recent enough'}>
            Next
          </button>
        </div>
      </form>
      <ErrorNote error={act.error ?? v.error} />
    </section>
  );
}

function GatewayStep({ cluster, onSaved, onNext }: { cluster: ClusterRecord; onSaved: (c: ClusterRecord) => void; onNext: () => void }) {
  const { clusters } = useConsole();
  const access = useAccess();
  const hosts = usePoll(() => clusters.lensHosts(), 0);
  const mayCheck = access.can('cluster:gateway:check');
  const [f, setF] = useState({
    provider: cluster.gatewayProvider ?? 'envoy-ai-gateway',
    port: cluster.gatewayPort ? String(cluster.gatewayPort) : '',
    publicUrl: cluster.gatewayPublicUrl ?? '',
    authz: cluster.gatewayAuthzHost ?? '',
  });
  const [check, setCheck] = useState<GatewayPortCheck | null>(null);
  const [checkError, setCheckError] = useState<string | null>(null);
  const act = useAction();
  // The port is checked live (debounced) against the cluster's Services.
  useEffect(() => {
    setCheck(null);
    setCheckError(null);
    const n = Number(f.port);
    if (!f.port || !Number.isInteger(n)) return;
    // The live check reaches the cluster (cluster:gateway:check): not asked for a token without it.
    if (!mayCheck) return;
    const t = setTimeout(() => {
      clusters.gatewayPortCheck(cluster.id, n).then(setCheck, (err: Error) => setCheckError(err.message));
    }, 400);
    return () => clearTimeout(t);
  }, [f.port, cluster.id, clusters, mayCheck]);
  const save = async (e: FormEvent) => {
    e.preventDefault();
    const r = await act.run(() =>
      clusters.update(cluster.id, { gatewayProvider: f.provider, gatewayPort: f.port ? Number(f.port) : null, gatewayPublicUrl: f.publicUrl.trim() || null, gatewayAuthzHost: f.authz }),
    );
    if (r) {
      onSaved(r.cluster);
      onNext();
    }
  };
  return (
    <section className="card" aria-labelledby="gw-title">
      <h2 id="gw-title">Gateway</h2>
      <form className="form" onSubmit={save}>
        <div className="grid-2">
          <label className="field">
            <span>Provider</span>
            <select value={f.provider} onChange={(e) => setF({ ...f, provider: e.target.value })} data-testid="gw-provider">
              {PROVIDERS.map((p) => (
                <option key={p} value={p}>
                  {p}
                </option>
              ))}
            </select>
          </label>
          <label className="field">
            <span>NodePort (30000–32767)</span>
            <input type="number" min={30000} max={32767} value={f.port} onChange={(e) => setF({ ...f, port: e.target.value })} data-testid="gw-port" />
          </label>
          <label className="field">
            <span>Public URL host (empty: derived from the nodes)</span>
            <input value={f.publicUrl} onChange={(e) => setF({ ...f, publicUrl: e.target.value })} />
          </label>
          <label className="field">
            <span>Lens address the cluster calls back</span>
            <select value={f.authz} onChange={(e) => setF({ ...f, authz: e.target.value })} data-testid="gw-authz">
              <option value="">the first address (default)</option>
              {(hosts.data?.items ?? []).map((h) => (
                <option key={h} value={h}>
                  {h}
                </option>
              ))}
            </select>
          </label>
        </div>
        <p aria-live="polite" data-testid="gw-port-check">
          {check && (check.available ? <Badge tone="good">port free</Badge> : <Badge tone="bad">{check.owner ? `taken by ${check.owner}` : (check.reason ?? 'not available')}</Badge>)}
        </p>
        <ErrorNote error={checkError ?? hosts.error} />
        <div className="form-actions start">
          <button type="submit" className="btn btn-primary" {...gate(access, 'cluster:cluster:update', act.pending || (check !== null && !check.available))} data-testid="wizard-next-gateway">
            Save and continue
          </button>
        </div>
      </form>
      <ErrorNote error={act.error} />
    </section>
  );
}

function HfStep({ cluster, onSaved, onNext }: { cluster: ClusterRecord; onSaved: (c: ClusterRecord) => void; onNext: () => void }) {
  const { clusters } = useConsole();
  const access = useAccess();
  const [ns, setNs] = useState(cluster.hfTokenSecret?.namespace ?? `llm-d-bench-storage-${cluster.id}`);
  const [name, setName] = useState(cluster.hfTokenSecret?.name ?? `hf-token-${cluster.id}`);
  const [token, setToken] = useState('');
  const act = useAction();
  const save = async (e: FormEvent) => {
    e.preventDefault();
    const ref = await act.run(() =>
      cluster.hfTokenSecret ? clusters.rotateHfSecret(cluster.id, { namespace: ns, name, token }) : clusters.createHfSecret(cluster.id, { namespace: ns, name, token }),
    );
    if (ref) {
      setToken('');
      onSaved({ ...cluster, hfTokenSecret: ref });
      onNext();
    }
  };
  return (
    <section className="card" aria-labelledby="hf-title">
      <h2 id="hf-title">Hugging Face token</h2>
      <p className="muted small">Written only to a Secret on the cluster (key HF_TOKEN); ironlens keeps its namespace and name, never the value.</p>
      <form className="form" onSubmit={save}>
        <div className="grid-2">
          <label className="field">
            <span>Namespace</span>
            <input value={ns} onChange={(e) => setNs(e.target.value)} required />
          </label>
          <label className="field">
            <span>Secret name</span>
            <input value={name} onChange={(e) => setName(e.target.value)} required />
          </label>
          <label className="field">
            <span>Token (write-only)</span>
            <input type="password" autoComplete="new-password" value={token} onChange={(e) => setToken(e.target.value)} required data-testid="hf-token" />
          </label>
        </div>
        <div className="form-actions start">
          <button type="submit" className="btn btn-primary" {...gate(access, cluster.hfTokenSecret ? 'cluster:hf-token:update' : 'cluster:hf-token:create', !token || act.pending)} data-testid="hf-save">
            {cluster.hfTokenSecret ? 'Replace the token and continue' : 'Create the secret and continue'}
          </button>
          <button type="button" className="btn" onClick={onNext} data-testid="hf-skip">
            Skip for now
          </button>
        </div>
      </form>
      <ErrorNote error={act.error} />
    </section>
  );
}

function SoftwareStep({ cluster, onNext }: { cluster: ClusterRecord; onNext: () => void }) {
  const { clusters } = useConsole();
  const access = useAccess();
  const [started, setStarted] = useState(false);
  const [accels, setAccels] = useState<string[]>([]);
  const downloads = usePoll<SoftwareDownloads>(() => clusters.downloads(cluster.id), 3000, [cluster.id]);
  const prepull = usePoll<PrepullStatus>(() => clusters.prepull(cluster.id), started ? 3000 : 0, [cluster.id, started]);
  const act = useAction();
  const start = async () => {
    await act.run(async () => {
      await clusters.startDownloads(cluster.id);
      await clusters.startPrepull(cluster.id, accels);
    });
    setStarted(true);
    await Promise.all([downloads.refresh(), prepull.refresh()]);
  };
  const dl = downloads.data;
  return (
    <section className="card" aria-labelledby="sw-title">
      <h2 id="sw-title">Software downloads and image pre-pull</h2>
      <fieldset className="field">
        <legend>Accelerators whose model-server image is pulled</legend>
        {ACCELERATORS.map((a) => (
          <label key={a.id} className="check-field">
            <input type="checkbox" checked={accels.includes(a.id)} onChange={(e) => setAccels((s) => (e.target.checked ? [...s, a.id] : s.filter((x) => x !== a.id)))} />
            <span>{a.label}</span>
          </label>
        ))}
      </fieldset>
      <div className="form-actions start">
        <button type="button" className="btn btn-primary" onClick={() => void start()} {...gate(access, ['cluster:software:download', 'cluster:image:prepull'], act.pending)} data-testid="sw-start">
          Download and pre-pull
        </button>
        <button type="button" className="btn" onClick={onNext} data-testid="wizard-next-software">
          Continue
        </button>
      </div>
      <ErrorNote error={act.error ?? downloads.error} />
      {dl && (
        <ul className="plain" data-testid="sw-downloads">
          {(['llmD', 'llmDBenchmark'] as const).map((k) => (
            <li key={k}>
              {k === 'llmD' ? 'llm-d' : 'llm-d-benchmark'} {dl[k].ref}: <Badge tone={dl[k].state === 'ready' ? 'good' : dl[k].state === 'failed' ? 'bad' : 'info'}>{dl[k].state}</Badge>
              {dl[k].error && <span className="error-text"> {dl[k].error}</span>}
            </li>
          ))}
        </ul>
      )}
      {started && <ErrorNote error={prepull.error} />}
      {prepull.data && (
        <div data-testid="sw-prepull">
          <Meter label={`Image pre-pull: ${prepull.data.state}`} value={prepull.data.ready} max={prepull.data.desired} detail={`${prepull.data.ready} of ${prepull.data.desired} nodes`} />
          <ScrollBox label="Pre-pull per node">
            <DataTable
              caption="Pre-pull per image and node"
              columns={['Image or node', 'State', 'Ready']}
              rows={[
                ...prepull.data.images.map((i) => ({ key: `image ${i.name}`, cellClass: ['mono small'], cells: [i.name, i.state, `${i.ready}/${i.desired}`] })),
                ...prepull.data.nodes.map((n) => ({ key: `node ${n.node}`, cells: [`node ${n.node}`, `${n.phase}${n.restarts ? ` (${n.restarts} restarts)` : ''}`, n.ready ? 'yes' : 'no'] })),
              ]}
            />
          </ScrollBox>
        </div>
      )}
    </section>
  );
}

function CrdStep({ cluster }: { cluster: ClusterRecord }) {
  const { clusters } = useConsole();
  const access = useAccess();
  const status = usePoll(() => clusters.crds(cluster.id), 0, [cluster.id]);
  const [applied, setApplied] = useState<CrdApplyResult | null>(null);
  const act = useAction();
  const apply = async () => {
    const r = await act.run(() => clusters.applyCrds(cluster.id));
    if (r) setApplied(r);
    await status.refresh();
  };
  const finish = async () => {
    const r = await act.run(() => clusters.update(cluster.id, { draft: false }));
    if (r) navigate(`/clusters/${encodeURIComponent(cluster.id)}`);
  };
  return (
    <section className="card" aria-labelledby="crd-title">
      <h2 id="crd-title">Gateway API and Inference Extension CRDs</h2>
      {status.data && (
        <ul className="plain" data-testid="crd-status">
          <li>
            Gateway API: <Badge tone={status.data.gateway_api === 'ready' ? 'good' : 'warn'}>{status.data.gateway_api}</Badge>
          </li>
          <li>
            Inference Extension: <Badge tone={status.data.gateway_api_inference_extension === 'ready' ? 'good' : 'warn'}>{status.data.gateway_api_inference_extension}</Badge>
          </li>
        </ul>
      )}
      {applied && (
        <p className="small">
          {applied.gateway_api.ok ? 'Gateway API applied.' : `Gateway API failed: ${applied.gateway_api.message}`}{' '}
          {applied.gateway_api_inference_extension.ok ? 'Inference Extension applied.' : `Inference Extension failed: ${applied.gateway_api_inference_extension.message}`}
        </p>
      )}
      <div className="form-actions start">
        <button type="button" className="btn" onClick={() => void apply()} {...gate(access, 'cluster:crd:install', act.pending)} data-testid="crd-apply">
          Apply CRDs
        </button>
        <button type="button" className="btn btn-primary" onClick={() => void finish()} {...gate(access, 'cluster:cluster:update', act.pending)} data-testid="wizard-finish">
          Finish registration
        </button>
      </div>
      <ErrorNote error={act.error ?? status.error} />
    </section>
  );
}
