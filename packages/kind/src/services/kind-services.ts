import type { ClustersService } from './clusters.service';
import type { EnvironmentService } from './environment.service';
import type { KindJobsService } from './kind-jobs.service';

/** What the kind plugin's routes call. */
export interface KindServices {
  environment: EnvironmentService;
  clusters: ClustersService;
  jobs: KindJobsService;
}
