/**
 * The error catalog: every failure a client can cause has a stable snake_case code
 * `<noun>_<condition>`, an HTTP status and a default message. Codes are never renamed
 * once shipped; docs/errors.md lists them all (a test keeps the two in step).
 */
export const errorCatalog = {
  // generic
  request_invalid: { status: 400, message: 'request is invalid' },
  request_unprocessable: { status: 422, message: 'request body failed validation' },
  auth_required: { status: 401, message: 'missing or invalid bearer token' },
  route_not_found: { status: 404, message: 'not found' },
  internal_error: { status: 500, message: 'internal error' },
  store_not_empty: { status: 409, message: 'the store already holds a ledger' },
  path_outside_root: { status: 400, message: 'path resolves outside its directory' },

  // metal: devices
  mac_invalid: { status: 400, message: 'invalid MAC address' },
  device_not_found: { status: 404, message: 'device not found' },
  device_exists: { status: 409, message: 'device already exists' },
  device_revoked: { status: 409, message: 'device is revoked' },
  device_bound: { status: 409, message: 'device is already bound' },
  device_not_bound: { status: 409, message: 'device is not bound' },
  device_not_pooled: { status: 409, message: 'device is not in the pool' },

  // metal: workers
  worker_id_invalid: { status: 400, message: 'invalid worker id' },
  hostname_invalid: { status: 400, message: 'invalid hostname' },
  worker_not_found: { status: 404, message: 'worker not found' },
  worker_exists: { status: 409, message: 'worker already exists' },
  hostname_taken: { status: 409, message: 'hostname already exists' },
  worker_bound: { status: 409, message: 'worker is already bound to a device' },
  worker_binding_missing: { status: 404, message: 'worker has no MAC binding' },
  menu_item_invalid: { status: 400, message: 'menu_default is not a menu item' },
  menu_timeout_invalid: { status: 400, message: 'menu_timeout must be a non-negative integer' },
  os_invalid: { status: 400, message: 'os must be one of windows, ubuntu, debian, centos, esxi' },
  default_os_nothing_to_set: { status: 400, message: 'at least one of os, menu_default, menu_timeout is required' },
  default_os_no_disk: { status: 400, message: 'worker has no system disk for that os' },
  worker_has_no_disks: { status: 409, message: 'worker has no system disk yet' },
  disk_exists: { status: 409, message: 'worker already has a system disk for that os' },
  disk_not_found: { status: 404, message: 'worker has no system disk for that os' },
  batch_invalid: { status: 400, message: 'batch request is invalid' },

  // metal: dnsmasq
  dnsmasq_reload_failed: { status: 500, message: 'dnsmasq reload failed (dhcp-hosts.conf was written)' },
  dnsmasq_write_failed: { status: 500, message: 'writing dhcp-hosts.conf failed' },

  // metal: agents
  agent_id_invalid: { status: 400, message: 'invalid agent id' },
  agent_url_invalid: { status: 400, message: 'base_url must start with http:// or https://' },
  agent_not_found: { status: 404, message: 'agent not found' },
  agent_exists: { status: 409, message: 'agent already exists' },
  agent_unreachable: { status: 503, message: 'agent unreachable' },
  agent_bad_gateway: { status: 502, message: 'agent answered with an error' },
  agent_role_missing: { status: 400, message: 'agent is not configured for that role' },
  agent_error: { status: 502, message: 'agent error' },
  agent_none_available: { status: 503, message: 'no enabled disk agent available' },
  masters_all_failed: { status: 502, message: 'every disk agent failed to list masters' },

  // agent daemon
  iqn_invalid: { status: 400, message: 'invalid IQN' },
  iqn_base_mismatch: { status: 400, message: 'iqn base mismatch' },
  iqn_exists: { status: 409, message: 'iqn already exists' },
  iqn_not_found: { status: 404, message: 'iqn not found' },
  size_invalid: { status: 400, message: 'invalid size' },
  file_exists: { status: 409, message: 'backing file already exists' },
  file_not_found: { status: 404, message: 'file not found' },
  filename_invalid: { status: 400, message: 'invalid file name' },
  master_or_size_required: { status: 400, message: 'exactly one of master and size is required' },
  cd_role_disabled: { status: 400, message: 'agent is not configured for cd role' },
  backend_failed: { status: 500, message: 'iSCSI backend command failed' },

  // jobs
  job_not_found: { status: 404, message: 'job not found' },
  job_finished: { status: 400, message: 'job already finished' },

  // ---- kind panel (packages/kind) and shared jobs (issue 5) ----
  job_conflict: { status: 409, message: 'a job for the same subject is already running' },
  kind_cluster_name_invalid: { status: 400, message: 'invalid cluster name' },
  kind_version_invalid: { status: 400, message: 'invalid Kubernetes version' },
  kind_cluster_exists: { status: 409, message: 'a cluster with this name already exists in kind' },
  kind_cluster_not_found: { status: 404, message: 'cluster not found' },
  kind_kubeconfig_not_found: { status: 404, message: 'no saved kubeconfig for this cluster' },
  kind_cluster_busy: { status: 409, message: 'a creation job for this cluster is still running' },
  kind_delete_failed: { status: 500, message: 'deleting the cluster failed' },
  kind_unavailable: { status: 503, message: 'kind is not available' },

  // ---- cluster manager (packages/clusters, seed 000) ----

  // ---- Kubespray bootstrap (packages/clusters/src/bootstrap, seed 000) ----

  // ---- hardening ----
  path_invalid: { status: 400, message: 'file name cannot be resolved (symlink loop, or too long)' },
  import_invalid: { status: 400, message: 'a record of the imported file layout is invalid (the import changed nothing)' },
  path_not_found: { status: 404, message: 'a directory in the file name does not exist' },
} as const satisfies Record<string, { status: number; message: string }>;

export type ErrorCode = keyof typeof errorCatalog;
