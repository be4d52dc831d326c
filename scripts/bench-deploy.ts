/**
 * Model deployment benchmark (issue 28): on the deployments suite's lab (the kube-harness with
 * kwok GPU nodes and the real scheduler, the real `inferencepool` chart installed by the real
 * Helm from a local chart mirror, the real Envoy Gateway controller accepting the route, vLLM
 * stand-ins at the pods' IPs answering the smoke request), the time of each stage of one
 * optimized-baseline deployment from the request to `ready`, beside the time of a gateway
 * reconcile in the same run (the registration's first install, and a forced reconcile with
 * nothing changed).
 *
 *   npm run bench:deploy     (node --import tsx scripts/bench-deploy.ts; root: a network namespace)
 *
 * Environment (optional): BENCH_RUNS (deployments, one after another, each deleted after;
 * default 3), BENCH_POLL_MS (the deployment's readiness poll, `IRONLENS_DEPLOYMENT_POLL_MS`;
 * default 100). Stages are seen by reading the job's record every 10 ms: a stage shorter than
 * that may show as 0–10 ms. Everything stays on this machine; the lab is stopped at the end.
 */
import { DEPLOY_STAGES } from '../packages/clusters/src/deployments/deployment.job';
import { startDeploymentLab } from '../packages/clusters/src/testing/deployment-lab';
import { machine } from './bench/machine';

const RUNS = Number(process.env.BENCH_RUNS ?? 3);
const POLL = process.env.BENCH_POLL_MS ?? '100';
const log = (m: string) => process.stderr.write(`[bench:deploy] ${m}\n`);
const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)];

async function main() {
  log('starting the lab (kube-harness, charts, Envoy Gateway, the gateway install)…');
  const lab = await startDeploymentLab({ env: { IRONLENS_DEPLOYMENT_POLL_MS: POLL }, log: () => {} });
  const { t, clusterId } = lab;
  try {
    // A forced reconcile with nothing changed: every step checked again, nothing written.
    const started = await t.app.inject({ method: 'POST', url: `/api/cluster/clusters/${clusterId}/gateway/reconcile` });
    const jobId = started.json().job.id as string;
    let rec = await t.services.runner.repository.get(jobId);
    while (rec && (rec.status === 'queued' || rec.status === 'running')) {
      await new Promise((r) => setTimeout(r, 50));
      rec = await t.services.runner.repository.get(jobId);
    }
    const forcedMs = Date.parse(rec?.finishedAt ?? '') - Date.parse(rec?.startedAt ?? '');

    const runs: Array<Map<string, number>> = [];
    for (let i = 0; i < RUNS; i++) {
      const t0 = performance.now();
      const res = await t.app.inject({ method: 'POST', url: '/api/v1/deployments/standard-vllm-runs', payload: { cluster_id: clusterId, model: `bench/model-${i}`, deployment_name: `bench ${i}`, replicas: 2, tensor_parallel_size: 2 } });
      if (res.statusCode !== 200) throw new Error(`deploy: ${res.statusCode} ${res.body}`);
      const answered = performance.now() - t0;
      const execId = res.json().execution_id as string;
      const job = (await t.services.deployments.get(execId)).job?.id as string;
      const seen = new Map<string, number>([['request answered (placement, record, job started)', answered]]);
      let last = '';
      let lastAt = performance.now();
      for (;;) {
        const j = await t.services.runner.repository.get(job);
        const stage = j?.stage ?? '';
        const now = performance.now();
        if (stage && stage !== last) {
          if (last) seen.set(last, (seen.get(last) ?? 0) + (now - lastAt));
          last = stage;
          lastAt = now;
        }
        if (!j || (j.status !== 'queued' && j.status !== 'running')) {
          if (last) seen.set(last, (seen.get(last) ?? 0) + (now - lastAt));
          if (j?.status !== 'success') throw new Error(`deployment ${execId} ended ${j?.status}: ${j?.error}`);
          break;
        }
        await new Promise((r) => setTimeout(r, 10));
      }
      // Every stage in the job's order; one that began and ended between two reads shows as 0.
      for (const st of DEPLOY_STAGES) if (!seen.has(st)) seen.set(st, 0);
      seen.set('request to ready', performance.now() - t0);
      runs.push(seen);
      const del = await t.app.inject({ method: 'DELETE', url: `/api/v1/deployments/executions/${execId}` });
      if (del.statusCode !== 204) throw new Error(`delete: ${del.statusCode} ${del.body}`);
      log(`run ${i + 1}/${RUNS}: ready in ${Math.round(seen.get('request to ready') ?? 0)} ms`);
    }
    const stages = ['request answered (placement, record, job started)', ...DEPLOY_STAGES, 'request to ready'];
    const out = {
      machine: machine(),
      runs: RUNS,
      readinessPollMs: Number(POLL),
      gatewayReconcile: { firstInstallMs: lab.reconcileMs, forcedUnchangedMs: forcedMs },
      deploymentStagesMedianMs: Object.fromEntries(stages.map((s) => [s, Math.round(median(runs.map((r) => r.get(s) ?? 0)))])),
    };
    process.stdout.write(`${JSON.stringify(out, null, 2)}\n`);
    log(`gateway reconcile: first install ${out.gatewayReconcile.firstInstallMs} ms, forced with nothing changed ${forcedMs} ms`);
    for (const [s, v] of Object.entries(out.deploymentStagesMedianMs)) log(`  ${String(v).padStart(6)} ms  ${s}`);
  } finally {
    await lab.stop();
  }
}

main().catch((e) => {
  process.stderr.write(`${(e as Error).stack ?? e}\n`);
  process.exit(1);
});
