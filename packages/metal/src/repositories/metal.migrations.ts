import { autoIncrementId, type NamedMigration } from '@ironlens/core';

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
  {
    // A BMC per device and the last power action with its proof of boot (issue 21). No foreign
    // key (the device may be declared in the same import); a device's BMC goes with `DELETE
    // /devices/{mac}/bmc` and `ironlens import --replace`.
    name: 'metal-0003-bmc',
    async up(db) {
      await db.schema
        .createTable('device_bmc')
        .addColumn('mac', 'text', (c) => c.primaryKey())
        .addColumn('driver', 'text', (c) => c.notNull())
        // Redfish: the system's URL; IPMI: the host name or address.
        .addColumn('address', 'text', (c) => c.notNull())
        .addColumn('port', 'integer')
        .addColumn('username', 'text', (c) => c.notNull())
        // Sealed with the store's SecretBox (`v1:…`), bound to the MAC: never plain text.
        .addColumn('password_sealed', 'text', (c) => c.notNull())
        .addColumn('verify_tls', 'integer', (c) => c.notNull())
        .addColumn('cipher_suite', 'integer')
        .addColumn('updated_at', 'text', (c) => c.notNull())
        .execute();
      await db.schema
        .createTable('device_power')
        .addColumn('mac', 'text', (c) => c.primaryKey())
        .addColumn('action', 'text', (c) => c.notNull())
        .addColumn('boot', 'text')
        .addColumn('requested_at', 'text', (c) => c.notNull())
        .addColumn('bmc_ok', 'integer', (c) => c.notNull())
        .addColumn('report_seen_at', 'text')
        .addColumn('boot_vars_seen_at', 'text')
        .addColumn('network_boot_seen_at', 'text')
        .addColumn('result', 'text')
        .addColumn('detail', 'text')
        // Epoch milliseconds after which a pending proof of boot becomes no_network_boot.
        .addColumn('deadline_ms', 'bigint')
        .execute();
      await db.schema.createIndex('device_power_result').on('device_power').column('result').execute();
    },
  },
  {
    // Rollouts (issue 31): one row per rollout, one per worker in it (its phase and what it
    // made, so a resumed rollout goes on where it stopped), and each worker's image history.
    name: 'metal-0031-rollouts',
    async up(db) {
      await db.schema
        .createTable('rollouts')
        .addColumn('seq', 'integer', autoIncrementId(db))
        .addColumn('id', 'text', (c) => c.notNull().unique())
        .addColumn('state', 'text', (c) => c.notNull())
        .addColumn('reason', 'text')
        .addColumn('master', 'text', (c) => c.notNull())
        .addColumn('max_unavailable', 'text', (c) => c.notNull())
        .addColumn('batch_size', 'integer', (c) => c.notNull())
        .addColumn('options', 'text', (c) => c.notNull())
        .addColumn('current_batch', 'integer')
        // 'pause' or 'abort' while asked and not yet done (read by whichever replica runs it).
        .addColumn('requested', 'text')
        .addColumn('job_id', 'text')
        .addColumn('actor', 'text')
        .addColumn('created_at', 'text', (c) => c.notNull())
        .addColumn('updated_at', 'text', (c) => c.notNull())
        .addColumn('finished_at', 'text')
        .execute();
      await db.schema
        .createTable('rollout_workers')
        .addColumn('rollout_id', 'text', (c) => c.notNull())
        .addColumn('worker_id', 'text', (c) => c.notNull())
        .addColumn('batch', 'integer', (c) => c.notNull())
        .addColumn('position', 'integer', (c) => c.notNull())
        .addColumn('phase', 'text', (c) => c.notNull())
        .addColumn('reason', 'text')
        .addColumn('state', 'text', (c) => c.notNull())
        .addColumn('steps', 'text', (c) => c.notNull())
        .addColumn('started_at', 'text')
        .addColumn('finished_at', 'text')
        .addPrimaryKeyConstraint('rollout_workers_pk', ['rollout_id', 'worker_id'])
        .execute();
      await db.schema.createIndex('rollout_workers_worker').on('rollout_workers').columns(['worker_id', 'phase']).execute();
      await db.schema
        .createTable('worker_images')
        .addColumn('id', 'integer', autoIncrementId(db))
        .addColumn('worker_id', 'text', (c) => c.notNull())
        .addColumn('at', 'text', (c) => c.notNull())
        .addColumn('actor', 'text')
        .addColumn('master', 'text')
        .addColumn('os', 'text', (c) => c.notNull())
        .addColumn('agent', 'text', (c) => c.notNull())
        .addColumn('iqn', 'text', (c) => c.notNull())
        .addColumn('rollout_id', 'text')
        .addColumn('outcome', 'text', (c) => c.notNull())
        .addColumn('detail', 'text')
        .execute();
      await db.schema.createIndex('worker_images_worker').on('worker_images').columns(['worker_id', 'id']).execute();
    },
  },
  {
    // Master tags (issue 33): os / os_version / remark annotations of a master image on an agent,
    // merged into GET /masters. They go with their agent (DELETE /agents/{id}, import --replace).
    name: 'metal-0033-master-tags',
    async up(db) {
      await db.schema
        .createTable('master_tags')
        .addColumn('agent_id', 'text', (c) => c.notNull().references('agents.id').onDelete('cascade'))
        .addColumn('name', 'text', (c) => c.notNull())
        .addColumn('os', 'text', (c) => c.notNull())
        .addColumn('os_version', 'text', (c) => c.notNull())
        .addColumn('remark', 'text', (c) => c.notNull())
        .addColumn('updated_at', 'text', (c) => c.notNull())
        .addPrimaryKeyConstraint('master_tags_pk', ['agent_id', 'name'])
        .execute();
    },
  },
];
