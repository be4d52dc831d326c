import type { Metrics } from '@ironlens/core';
import type { RolloutObserver } from './services/rollout.service';

/**
 * The metrics of rollouts (issue 31): workers per image (read from the ledger at scrape time:
 * the master each worker's default disk was cloned from, `none` for an empty disk or none), and
 * the durations of rollouts and of each worker's turn, by outcome. Master names are file names
 * the agent grammar already checked; never a worker id, MAC or hostname in a label.
 */
export class RolloutMetrics {
  readonly observer: RolloutObserver;

  constructor(metrics: Metrics, imageCounts: () => Promise<Map<string, number>>) {
    const rollouts = metrics.histogram({
      name: 'ironlens_rollout_duration_seconds',
      help: 'Rollouts, from their creation to their end (succeeded, aborted), and runs that paused (paused), in seconds.',
      labelNames: ['outcome'],
      buckets: [60, 300, 600, 1800, 3600, 7200, 14_400, 28_800, 86_400],
    });
    const workers = metrics.histogram({
      name: 'ironlens_rollout_worker_duration_seconds',
      help: "One worker's turn in a rollout (drain to re-admit, or its rollback), by outcome (done, rolled_back, rollback_failed).",
      labelNames: ['outcome'],
      buckets: [30, 60, 120, 300, 600, 900, 1800, 3600],
    });
    const total = metrics.counter({ name: 'ironlens_rollout_workers_total', help: 'Workers that ended their turn in a rollout, by outcome (done, rolled_back, rollback_failed).', labelNames: ['outcome'] });
    for (const outcome of ['done', 'rolled_back', 'rollback_failed']) total.inc({ outcome }, 0);
    metrics.gauge({
      name: 'ironlens_workers_by_image',
      help: "Workers by the master image their default system disk was cloned from (the ledger; `none` for an empty disk or no disk).",
      labelNames: ['master'],
      async collect() {
        this.reset();
        const counts = await imageCounts().catch(() => null);
        if (counts) for (const [master, n] of counts) this.set({ master }, n);
      },
    });
    this.observer = {
      worker: (outcome, seconds) => {
        workers.observe({ outcome }, seconds);
        total.inc({ outcome });
      },
      rollout: (outcome, seconds) => rollouts.observe({ outcome }, seconds),
    };
  }
}
