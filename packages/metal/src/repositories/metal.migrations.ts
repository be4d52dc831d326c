import type { NamedMigration } from '@ironlens/core';

/** The metal ledger: workers, their disks, the device pool, agents, settings. */
export const metalMigrations: NamedMigration[] = [
  {
    name: 'metal-0001-ledger',
    async up(db) {
      await db.schema
        .createTable('workers')
        .addColumn('worker_id', 'text', (c) => c.primaryKey())
        .addColumn('hostname', 'text', (c) => c.notNull().unique())
        .addColumn('arch', 'text', (c) => c.notNull())
        .addColumn('state', 'text', (c) => c.notNull())
        .addColumn('default_os', 'text')
        .addColumn('menu_default', 'text')
        .addColumn('menu_timeout', 'integer')
        .addColumn('cd', 'text')
        .addColumn('created_at', 'text', (c) => c.notNull())
        .execute();
      await db.schema
        .createTable('disks')
        .addColumn('worker_id', 'text', (c) => c.notNull().references('workers.worker_id').onDelete('cascade'))
        .addColumn('os', 'text', (c) => c.notNull())
        .addColumn('seq', 'integer', (c) => c.notNull())
        .addColumn('agent', 'text', (c) => c.notNull())
        .addColumn('iqn', 'text', (c) => c.notNull())
        .addColumn('filename', 'text', (c) => c.notNull())
        .addColumn('backing', 'text', (c) => c.notNull())
        .addColumn('source', 'text', (c) => c.notNull())
        .addPrimaryKeyConstraint('disks_pk', ['worker_id', 'os'])
        .execute();
      await db.schema
        .createTable('devices')
        .addColumn('mac', 'text', (c) => c.primaryKey())
        .addColumn('uuid', 'text')
        .addColumn('state', 'text', (c) => c.notNull())
        .addColumn('bound_worker_id', 'text', (c) => c.references('workers.worker_id'))
        .addColumn('key_hash', 'text')
        .addColumn('source', 'text', (c) => c.notNull())
        .addColumn('fingerprint', 'text', (c) => c.notNull())
        .addColumn('first_seen', 'text')
        .addColumn('last_seen', 'text')
        .execute();
      // One device per worker, enforced by the store itself (NULLs are not compared).
      await db.schema.createIndex('devices_bound_worker').unique().on('devices').column('bound_worker_id').execute();
      await db.schema
        .createTable('agents')
        .addColumn('id', 'text', (c) => c.primaryKey())
        .addColumn('base_url', 'text', (c) => c.notNull())
        .addColumn('token', 'text')
        .addColumn('iscsi_server', 'text')
        .addColumn('role_disk', 'integer', (c) => c.notNull())
        .addColumn('role_cd', 'integer', (c) => c.notNull())
        .addColumn('tags', 'text', (c) => c.notNull())
        .addColumn('enabled', 'integer', (c) => c.notNull())
        .addColumn('seq', 'integer', (c) => c.notNull())
        .execute();
      await db.schema
        .createTable('settings')
        .addColumn('key', 'text', (c) => c.primaryKey())
        .addColumn('value', 'text', (c) => c.notNull())
        .execute();
    },
  },
  {
    // Per-worker iSCSI CHAP (issue 13). Plain text columns and the portable schema builder
    // only, so the same migration runs on SQLite and PostgreSQL. No foreign key: a worker's
    // install CD is made (with its account) before the worker row exists; the worker's
    // delete removes the row.
    name: 'metal-0002-worker-chap',
    async up(db) {
      await db.schema
        .createTable('worker_chap')
        .addColumn('worker_id', 'text', (c) => c.primaryKey())
        .addColumn('chap_user', 'text', (c) => c.notNull())
        // Sealed with the store's SecretBox (`v1:…`), bound to the worker id: never plain text.
        .addColumn('secret_sealed', 'text', (c) => c.notNull())
        .addColumn('created_at', 'text', (c) => c.notNull())
        .execute();
    },
  },
  {
    // What a booted worker reported (issue 24), its last boot's timeline, and the operator's
    // fixed address per worker. No foreign key (as worker_chap): the worker's delete removes them.
    name: 'metal-0004-host-reports',
    async up(db) {
      await db.schema
        .createTable('host_reports')
        .addColumn('worker_id', 'text', (c) => c.primaryKey())
        .addColumn('mac', 'text', (c) => c.notNull())
        // The validated report (JSON), never the raw body.
        .addColumn('report', 'text', (c) => c.notNull())
        .addColumn('reported_at', 'text', (c) => c.notNull())
        // The reporter's X-Ironlens-Timestamp of the last accepted report (replay guard).
        .addColumn('report_ts', 'bigint', (c) => c.notNull())
        .addColumn('boot', 'text', (c) => c.notNull())
        .execute();
      await db.schema
        .createTable('worker_addresses')
        .addColumn('worker_id', 'text', (c) => c.primaryKey())
        .addColumn('ipv4', 'text', (c) => c.notNull().unique())
        .execute();
      // The Kubernetes cluster a bootstrap by worker registered the worker into.
      await db.schema
        .createTable('worker_clusters')
        .addColumn('worker_id', 'text', (c) => c.primaryKey())
        .addColumn('cluster_id', 'text', (c) => c.notNull())
        .addColumn('joined_at', 'text', (c) => c.notNull())
        .execute();
    },
  },
];
