import { type FormEvent, useEffect, useMemo, useState } from 'react';
import { useAction, usePoll } from '../../../shared/use-poll';
import { gate, useAccess } from '../../access';
import type { PlacementPreview, StandardVllmRunRequest } from '../../clusters-api';
import { DataTable } from '../../components/tables';
import { Badge, ErrorNote, PageHeader, ScrollBox } from '../../components/ui';
import { useConsole } from '../../context';
import { Link, navigate } from '../../router';

const PATHS = [
  { value: 'optimized-baseline', label: 'Optimized baseline (vLLM + endpoint picker, on the gateway)' },
  { value: 'pd-disaggregation', label: 'P/D disaggregation (prefill and decode roles)' },
  { value: 'wide-ep', label: 'Wide expert parallelism (LeaderWorkerSet)' },
  { value: 'baseline', label: 'Baseline (vLLM only, not on the gateway)' },
] as const;

type Path = (typeof PATHS)[number]['value'];

/**
 * "Deploy a model" from a cluster (issue 28): the model, llm-d's path, the accelerator and where
 * the request fits (the server's placement, asked again as the form changes), replicas and
 * tensor parallelism; submitting starts the deployment and opens its page.
 */
export function DeployWizardPage({ clusterId }: { clusterId: string }) {
  const { clusters } = useConsole();
  const access = useAccess();
  const inv = usePoll(() => clusters.accelerators(clusterId), 0, [clusterId]);
  const [model, setModel] = useState('');
  const [name, setName] = useState('');
  const [path, setPath] = useState<Path>('optimized-baseline');
  const [accelerator, setAccelerator] = useState('nvidia');
  const [product, setProduct] = useState('');
  const [node, setNode] = useState('');
  const [replicas, setReplicas] = useState(1);
  const [tp, setTp] = useState(1);
  const [prefill, setPrefill] = useState({ replicas: 1, tp: 1 });
  const [wide, setWide] = useState({ group: 2, ranks: 1 });
  const [fit, setFit] = useState<PlacementPreview | null>(null);
  const [fitError, setFitError] = useState<string | null>(null);
  const act = useAction();

  const choice = inv.data?.accelerators.find((a) => a.accelerator === accelerator);
  const body = useMemo<StandardVllmRunRequest>(
    () => ({
      cluster_id: clusterId,
      model: model.trim(),
      deployment_name: name.trim() || model.trim().split('/').pop() || 'model',
      replicas,
      tensor_parallel_size: tp,
      path,
      accelerator: accelerator as StandardVllmRunRequest['accelerator'],
      ...(product ? { gpu_product: product } : {}),
      ...(node ? { node } : {}),
      ...(path === 'pd-disaggregation' ? { prefill: { replicas: prefill.replicas, tensor_parallel_size: prefill.tp } } : {}),
      ...(path === 'wide-ep' ? { wide_ep: { group_size: wide.group, data_parallel_local: wide.ranks } } : {}),
    }),
    [clusterId, model, name, replicas, tp, path, accelerator, product, node, prefill, wide],
  );

  // Where it fits, asked again (debounced) whenever the shape of the request changes.
  useEffect(() => {
    if (!model.trim()) return;
    let live = true;
    const t = setTimeout(() => {
      clusters.placement(body).then(
        (r) => {
          if (!live) return;
          setFit(r);
          setFitError(null);
        },
        (e) => {
          if (!live) return;
          setFit(null);
          setFitError((e as Error).message);
        },
      );
    }, 300);
    return () => {
      live = false;
      clearTimeout(t);
    };
  }, [body, clusters, model]);

  const submit = async (e: FormEvent) => {
    e.preventDefault();
    const run = await act.run(() => clusters.deploy(body));
    if (run) navigate(`/deployments/${run.execution_id}`);
  };

  return (
    <>
      <PageHeader title="Deploy a model" lead={<Link to={`/clusters/${clusterId}`}>← the cluster</Link>} />
      <form className="card form" onSubmit={submit} aria-labelledby="deploy-title" data-testid="deploy-form">
        <h2 id="deploy-title">Model and path</h2>
        <div className="grid-2">
          <label className="field">
            <span>Model (Hugging Face id)</span>
            <input value={model} onChange={(e) => setModel(e.target.value)} required placeholder="Qwen/Qwen3-0.6B" pattern="[A-Za-z0-9][A-Za-z0-9._\-]*(/[A-Za-z0-9][A-Za-z0-9._\-]*)?" data-testid="deploy-model" />
          </label>
          <label className="field">
            <span>Deployment name</span>
            <input value={name} onChange={(e) => setName(e.target.value)} maxLength={120} placeholder="qwen small" data-testid="deploy-name" />
          </label>
        </div>
        <fieldset className="field">
          <legend>llm-d path</legend>
          {PATHS.map((p) => (
            <label key={p.value} className="small">
              <input type="radio" name="path" value={p.value} checked={path === p.value} onChange={() => setPath(p.value)} disabled={p.value === 'wide-ep' && inv.data?.lws === false} data-testid={`deploy-path-${p.value}`} /> {p.label}
              {p.value === 'wide-ep' && inv.data?.lws === false && <span className="muted"> — the cluster does not serve LeaderWorkerSet</span>}
            </label>
          ))}
        </fieldset>
        <h2>Accelerators</h2>
        <div className="grid-4">
          <label className="field">
            <span>Accelerator</span>
            <select value={accelerator} onChange={(e) => {
                setAccelerator(e.target.value);
                setProduct('');
              }} data-testid="deploy-accelerator">
              <option value="nvidia">NVIDIA (CUDA)</option>
              <option value="intel">Intel (XPU)</option>
              <option value="cpu">CPU</option>
            </select>
          </label>
          <label className="field">
            <span>GPU product</span>
            <select value={product} onChange={(e) => setProduct(e.target.value)} disabled={accelerator === 'cpu'} data-testid="deploy-product">
              <option value="">any</option>
              {(choice?.products ?? []).map((p) => (
                <option key={p} value={p}>
                  {p}
                </option>
              ))}
            </select>
          </label>
          <label className="field">
            <span>Replicas{path === 'pd-disaggregation' || path === 'wide-ep' ? ' (decode)' : ''}</span>
            <input type="number" min={1} max={32} value={replicas} onChange={(e) => setReplicas(Number(e.target.value))} data-testid="deploy-replicas" />
          </label>
          <label className="field">
            <span>Tensor parallelism</span>
            <input type="number" min={1} max={16} value={tp} onChange={(e) => setTp(Number(e.target.value))} data-testid="deploy-tp" />
          </label>
        </div>
        {path === 'pd-disaggregation' && (
          <div className="grid-4">
            <label className="field">
              <span>Prefill replicas</span>
              <input type="number" min={1} max={32} value={prefill.replicas} onChange={(e) => setPrefill({ ...prefill, replicas: Number(e.target.value) })} data-testid="deploy-prefill-replicas" />
            </label>
            <label className="field">
              <span>Prefill tensor parallelism</span>
              <input type="number" min={1} max={16} value={prefill.tp} onChange={(e) => setPrefill({ ...prefill, tp: Number(e.target.value) })} />
            </label>
          </div>
        )}
        {path === 'wide-ep' && (
          <div className="grid-4">
            <label className="field">
              <span>Pods per group</span>
              <input type="number" min={1} max={16} value={wide.group} onChange={(e) => setWide({ ...wide, group: Number(e.target.value) })} />
            </label>
            <label className="field">
              <span>Data-parallel ranks per pod</span>
              <input type="number" min={1} max={8} value={wide.ranks} onChange={(e) => setWide({ ...wide, ranks: Number(e.target.value) })} />
            </label>
          </div>
        )}
        <label className="field">
          <span>Node (optional pin)</span>
          <select value={node} onChange={(e) => setNode(e.target.value)} data-testid="deploy-node">
            <option value="">any node where it fits</option>
            {(choice?.nodes ?? []).map((n) => (
              <option key={n.node} value={n.node}>
                {n.node} ({n.free} of {n.allocatable} free)
              </option>
            ))}
          </select>
        </label>
        <section aria-live="polite" aria-labelledby="fit-title" data-testid="deploy-fit">
          <h3 id="fit-title">Where it fits</h3>
          {!model.trim() && <p className="small muted">Name a model to see where it fits.</p>}
          {fit && (
            <p className="small">
              <Badge tone={fit.fits ? 'good' : 'bad'} testId="deploy-fit-verdict">
                {fit.fits ? 'fits' : 'does not fit'}
              </Badge>{' '}
              {fit.fits ? `${fit.placement.needed} accelerator(s): ${fit.placement.assignments.map((a) => `${a.role} ${a.replica} on ${a.node}`).join(', ')}` : fit.detail}
            </p>
          )}
          <ErrorNote error={fitError} testId="deploy-fit-error" />
          {fit && fit.placement.nodes.length > 0 && (
            <ScrollBox label="Free accelerators per node">
              <DataTable
                caption="Free accelerators per node"
                testId="deploy-fit-nodes"
                columns={['Node', 'Product', 'Free', 'Allocatable', 'Host report']}
                rows={fit.placement.nodes.map((r) => ({
                  key: r.node,
                  cells: [r.node, r.product ?? '—', r.free, r.allocatable, r.reported ? `${r.reported.accelerators} × ${r.reported.product ?? '?'}${r.mismatch ? ` — ${r.mismatch}` : ''}` : '—'],
                }))}
              />
            </ScrollBox>
          )}
        </section>
        <ErrorNote error={act.error ?? inv.error} testId="deploy-error" />
        <div>
          <button type="submit" className="btn btn-primary" {...gate(access, 'deployment:run:create', act.pending || !model.trim() || fit?.fits === false)} data-testid="deploy-submit">
            Deploy
          </button>
        </div>
      </form>
    </>
  );
}
