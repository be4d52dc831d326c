import type { NamedMigration } from '@ironlens/core';
import { sql } from 'kysely';

/**
 * The cluster manager's tables. Written with Kysely's schema builder only, so PostgreSQL takes
 * them as SQLite does: text ids (8 hex characters for clusters, UUIDs for sessions), no
 * autoincrement keys, booleans as integers, timestamps as ISO 8601 text.
 */
export const clustersMigrations: NamedMigration[] = [
  {
    name: 'clusters-0001-clusters',
    async up(db) {
      await db.schema
        .createTable('clusters')
        .addColumn('id', 'text', (c) => c.primaryKey())
        .addColumn('name', 'text', (c) => c.notNull())
        .addColumn('active_name', 'text', (c) => c.unique())
        .addColumn('description', 'text', (c) => c.notNull().defaultTo(''))
        .addColumn('created_at', 'text', (c) => c.notNull())
        .addColumn('updated_at', 'text', (c) => c.notNull())
        .addColumn('draft', 'integer', (c) => c.notNull().defaultTo(0))
        .addColumn('proxy', 'text', (c) => c.notNull())
        .addColumn('kubeconfig_sealed', 'text', (c) => c.notNull())
        .addColumn('gateway_provider', 'text')
        .addColumn('gateway_namespace', 'text', (c) => c.notNull())
        .addColumn('gateway_name', 'text', (c) => c.notNull())
        .addColumn('gateway_public_url', 'text')
        .addColumn('gateway_port', 'integer')
        .addColumn('gateway_authz_host', 'text')
        .addColumn('inotify_max_user_instances', 'integer', (c) => c.notNull())
        .addColumn('hf_secret_namespace', 'text')
        .addColumn('hf_secret_name', 'text')
        .execute();
      await db.schema.createIndex('clusters_created_at').on('clusters').column('created_at').execute();
    },
  },
  {
    name: 'clusters-0002-sessions',
    async up(db) {
      await db.schema
        .createTable('cluster_sessions')
        .addColumn('id', 'text', (c) => c.primaryKey())
        .addColumn('cluster_id', 'text', (c) => c.notNull().references('clusters.id').onDelete('cascade'))
        .addColumn('created_at', 'text', (c) => c.notNull())
        .addColumn('active', 'integer', (c) => c.notNull())
        .execute();
      await db.schema.createIndex('cluster_sessions_cluster').on('cluster_sessions').columns(['cluster_id', 'active']).execute();
    },
  },
  {
    name: 'clusters-0003-downloads-prepulls',
    async up(db) {
      await db.schema
        .createTable('cluster_downloads')
        .addColumn('cluster_id', 'text', (c) => c.notNull().references('clusters.id').onDelete('cascade'))
        .addColumn('component', 'text', (c) => c.notNull())
        .addColumn('ref', 'text', (c) => c.notNull())
        .addColumn('state', 'text', (c) => c.notNull())
        .addColumn('path', 'text')
        .addColumn('error', 'text')
        .addColumn('job_id', 'text')
        .addColumn('updated_at', 'text', (c) => c.notNull())
        .addPrimaryKeyConstraint('cluster_downloads_pk', ['cluster_id', 'component'])
        .execute();
      await db.schema
        .createTable('cluster_prepulls')
        .addColumn('cluster_id', 'text', (c) => c.primaryKey().references('clusters.id').onDelete('cascade'))
        .addColumn('accelerators', 'text', (c) => c.notNull())
        .addColumn('images', 'text', (c) => c.notNull())
        .addColumn('job_id', 'text')
        .addColumn('requested_at', 'text', (c) => c.notNull())
        .execute();
    },
  },
  {
    // issue 22: the gateway's access keys (hashes only) and its reconcile state.
    name: 'clusters-0004-gateway',
    async up(db) {
      await db.schema
        .createTable('cluster_gateway_keys')
        .addColumn('cluster_id', 'text', (c) => c.notNull().references('clusters.id').onDelete('cascade'))
        .addColumn('name', 'text', (c) => c.notNull())
        .addColumn('key_hash', 'text', (c) => c.notNull().unique())
        .addColumn('created_at', 'text', (c) => c.notNull())
        .addColumn('last_used_at', 'text')
        .addPrimaryKeyConstraint('cluster_gateway_keys_pk', ['cluster_id', 'name'])
        .execute();
      await db.schema
        .createTable('cluster_gateway_state')
        .addColumn('cluster_id', 'text', (c) => c.primaryKey().references('clusters.id').onDelete('cascade'))
        .addColumn('applied_hash', 'text')
        .addColumn('applied_provider', 'text')
        .addColumn('applied_objects', 'text')
        .addColumn('job_id', 'text')
        .addColumn('state', 'text', (c) => c.notNull())
        .addColumn('error', 'text')
        .addColumn('hook_error', 'text')
        .addColumn('started_at', 'text')
        .addColumn('finished_at', 'text')
        .execute();
    },
  },
  {
    // Issue 33: the proxy mode Lens calls `auto` (ironlens' `system` until now); and when a write
    // first reached the cluster's API server (null: never, so a draft's delete has nothing to clean
    // there). Records made before are taken as reached: their delete keeps the seed's rule.
    name: 'clusters-0033-seed-clients',
    async up(db) {
      await db.schema.alterTable('clusters').addColumn('reached_at', 'text').execute();
      await db.updateTable('clusters').set({ reached_at: sql`created_at` }).execute();
      const rows = (await db.selectFrom('clusters').select(['id', 'proxy']).execute()) as Array<{ id: string; proxy: string }>;
      for (const r of rows) {
        const p = JSON.parse(r.proxy) as { mode?: string };
        if (p.mode === 'system') await db.updateTable('clusters').set({ proxy: JSON.stringify({ ...p, mode: 'auto' }) }).where('id', '=', r.id).execute();
      }
    },
  },
  {
    // issue 28: model deployments.
    name: 'clusters-0005-deployments',
    async up(db) {
      await db.schema
        .createTable('cluster_deployments')
        .addColumn('id', 'text', (c) => c.primaryKey())
        .addColumn('run_id', 'text', (c) => c.notNull().unique())
        .addColumn('cluster_id', 'text', (c) => c.notNull().references('clusters.id').onDelete('cascade'))
        .addColumn('session_id', 'text')
        .addColumn('name', 'text', (c) => c.notNull())
        .addColumn('display_name', 'text', (c) => c.notNull())
        .addColumn('description', 'text', (c) => c.notNull().defaultTo(''))
        .addColumn('status', 'text', (c) => c.notNull())
        .addColumn('revision', 'integer', (c) => c.notNull().defaultTo(1))
        .addColumn('spec', 'text', (c) => c.notNull())
        .addColumn('ready_spec', 'text')
        .addColumn('placement', 'text')
        .addColumn('applied', 'text')
        .addColumn('readiness', 'text')
        .addColumn('reason', 'text')
        .addColumn('logs', 'text')
        .addColumn('failure', 'text')
        .addColumn('smoke', 'text')
        .addColumn('endpoint', 'text')
        .addColumn('job_id', 'text')
        .addColumn('stage', 'text')
        .addColumn('created_by', 'text')
        .addColumn('created_at', 'text', (c) => c.notNull())
        .addColumn('updated_at', 'text', (c) => c.notNull())
        .execute();
      await db.schema.createIndex('cluster_deployments_cluster').on('cluster_deployments').column('cluster_id').execute();
    },
  },
];
