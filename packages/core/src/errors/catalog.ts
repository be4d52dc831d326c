/**
 * The error catalog: every failure a client can cause has a stable snake_case code
 * `<noun>_<condition>`, an HTTP status and a default message. Codes are never renamed
 * once shipped; docs/errors.md lists them all, and every code is used by some source (a test
 * keeps the three in step).
 */
export const errorCatalog = {
  // generic
  request_invalid: { status: 400, message: 'request is invalid' },
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
  agent_in_use: { status: 409, message: 'a worker’s system disk or install CD is on this agent' },
  master_tag_invalid: { status: 400, message: 'invalid master tag: os is 1-32 of a-z 0-9 . _ -, os_version 0-32 of A-Za-z0-9 . _ + -, remark printable text' },

  // metal: the registration window (the seed control plane's current WebUI)
  registration_window_ttl_invalid: { status: 400, message: 'ttl_minutes must be within 1-60' },
  registration_window_open: { status: 409, message: 'registration window already open' },
  registration_window_not_open: { status: 409, message: 'registration window is not open' },

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

  // ---- web console (the console listener's proxy to the provisioning API, issue 11) ----
  console_token_required: { status: 403, message: 'the provisioning API has a token: set IRONLENS_CONSOLE_TOKEN to reach it through the console' },

  // issue 20: access (named tokens, roles, the failed-auth limiter)
  permission_denied: { status: 403, message: 'the token’s role lacks the permission this route requires' },
  auth_rate_limited: { status: 429, message: 'too many failed authentications from this address: try again later' },
  token_name_invalid: { status: 400, message: 'invalid token name' },
  token_role_invalid: { status: 400, message: 'role must be viewer, operator or admin' },
  token_expiry_invalid: { status: 400, message: 'expiry must be a duration like 10s, 5m, 12h or 30d' },
  token_expiry_out_of_range: { status: 400, message: 'expiry must be at most ten years (3650d)' },
  token_name_reserved: { status: 400, message: 'the token name is an actor of ironlens’ own (ironlens, anonymous, env:…)' },
  token_exists: { status: 409, message: 'a token of that name exists' },
  token_not_found: { status: 404, message: 'no token of that name' },

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

  // ---- cluster manager (packages/clusters, seed 000) ----
  validation_failed: { status: 422, message: 'the request does not match the schema' },
  cluster_not_found: { status: 404, message: 'cluster not found' },
  invalid_kubeconfig: { status: 422, message: 'the uploaded file is not a UTF-8 YAML kubeconfig' },
  invalid_cluster_name: { status: 422, message: 'cluster name must not be blank' },
  invalid_proxy_config: { status: 422, message: 'proxy must be a JSON ProxyConfigDTO; mode custom needs a proxy URL' },
  invalid_gateway_provider: { status: 422, message: 'gatewayProvider must be envoy-ai-gateway, istio, agentgateway or gke' },
  invalid_gateway_namespace: { status: 422, message: 'gatewayNamespace must be a DNS label prefix of at most 63 characters' },
  invalid_gateway_port: { status: 422, message: 'gatewayPort must be a NodePort in 30000-32767' },
  gateway_port_in_use: { status: 422, message: 'gatewayPort is already the nodePort of another Service' },
  cluster_name_conflict: { status: 409, message: 'a cluster with that name already exists' },
  cluster_request_failed: { status: 502, message: 'the cluster API server could not be reached (504 when the request timed out)' },
  cluster_gateway_cleanup_failed: { status: 502, message: 'the gateway namespace of the cluster could not be deleted; the record is kept' },
  cluster_has_available_deployments: { status: 409, message: 'the cluster still has available llm-d-lens deployments' },
  cluster_has_storage_volumes: { status: 409, message: 'the cluster still has llm-d-lens persistent volume claims' },
  cluster_session_inactive: { status: 404, message: 'the cluster session is not active' },
  secret_already_exists: { status: 409, message: 'the secret already exists; rotate it with PUT hf-token-secret' },
  invalid_secret_token: { status: 422, message: 'the token must not be empty' },
  invalid_secret_coordinates: { status: 422, message: 'secret namespace and name must be DNS names (and known)' },
  invalid_planning_resource: { status: 422, message: 'resource must be version, nodes, deviceclasses, resourceslices or runtimeclasses' },
  invalid_accelerator: { status: 422, message: 'accelerators must be nvidia or intel' },


  // issue 22: gateway
  gateway_not_configured: { status: 409, message: 'the cluster has no gatewayProvider: there is no gateway to reconcile' },
  gateway_job_not_found: { status: 404, message: 'no such gateway job for this cluster' },
  gateway_key_name_invalid: { status: 422, message: 'a gateway key name is 1-63 lower-case letters, digits, dots, dashes or underscores' },
  gateway_key_exists: { status: 409, message: 'the cluster already has a gateway key of that name' },
  gateway_key_not_found: { status: 404, message: 'the cluster has no gateway key of that name' },
  gateway_unauthorized: { status: 401, message: 'a gateway access key is required' },
  gateway_forbidden: { status: 403, message: 'access denied' },
  gateway_rate_limited: { status: 429, message: 'too many authorization calls from this source' },
  gateway_authz_port_unknown: {
    status: 409,
    message: 'the port the authorization hook reaches ironlens on is not known: the console listens on an ephemeral port (0) and has not bound yet; set IRONLENS_GATEWAY_AUTHZ_PORT',
  },

  // issue 28: model deployments
  deployment_request_invalid: { status: 422, message: 'the deployment request is invalid' },
  storage_type_unsupported: { status: 422, message: 'storage_type pvc is not supported: use model-cache with the PersistentVolume holding the weights' },
  insufficient_accelerators: { status: 422, message: 'the model servers do not fit on the free accelerators (the answer lists what is free where)' },
  accelerator_not_found: { status: 422, message: 'the pinned node or GPU product is not in the cluster' },
  lws_not_installed: { status: 422, message: 'the cluster does not serve LeaderWorkerSet: the wide-ep path needs LWS' },
  cluster_is_draft: { status: 409, message: 'the cluster is a draft: finish its registration first' },
  model_already_published: { status: 409, message: "the model is already published on this cluster's gateway" },
  deployment_not_found: { status: 404, message: 'deployment execution not found' },
  deployment_run_not_found: { status: 404, message: 'deployment run not found' },
  deployment_run_not_active: { status: 409, message: 'deployment run is not active' },
  deployment_busy: { status: 409, message: 'the deployment is being deployed: wait for it, or cancel its run' },
  deployment_pod_not_found: { status: 404, message: 'the deployment has no such pod' },
  deployment_logs_unavailable: { status: 502, message: "the pod's log could not be read from the cluster" },
  deployment_cleanup_failed: { status: 502, message: "the deployment's objects could not all be removed from the cluster" },

  // ---- Kubespray bootstrap (packages/clusters/src/bootstrap, seed 000) ----
  bootstrap_host_invalid: { status: 422, message: 'a host spec is not an IPv4 address, a range or a host name' },
  bootstrap_too_many_hosts: { status: 422, message: 'the host specs expand to more than 256 hosts' },
  bootstrap_host_keys_mismatch: { status: 422, message: 'the host-key pins do not cover exactly the expanded hosts' },
  bootstrap_control_plane_missing: { status: 422, message: 'at least one node must have the control-plane role' },
  bootstrap_node_invalid: { status: 422, message: 'a node is invalid' },
  bootstrap_proxy_invalid: { status: 422, message: 'the proxy configuration is invalid' },
  bootstrap_register_invalid: { status: 422, message: 'the cluster to register is invalid' },
  bootstrap_register_unavailable: { status: 503, message: 'cluster registration is not available here' },
  bootstrap_not_found: { status: 404, message: 'bootstrap job not found' },

  // ---- hardening ----
  path_invalid: { status: 400, message: 'file name cannot be resolved (symlink loop, or too long)' },
  import_invalid: { status: 400, message: 'a record of the imported file layout is invalid (the import changed nothing)' },
  path_not_found: { status: 404, message: 'a directory in the file name does not exist' },
  // ironlens backup / restore (issue 29, finding 2): what restore refuses, by code
  backup_format_unsupported: { status: 400, message: 'a backup format this version does not restore (format 1 carries no authentication: take a new backup)' },
  backup_kdf_out_of_range: { status: 400, message: "the backup's key-derivation cost is outside what this version accepts" },
  backup_passphrase_wrong: { status: 400, message: 'wrong passphrase: the secret key in the backup cannot be opened with it' },
  backup_tampered: { status: 400, message: "the backup's header or store was altered after it was written" },
  backup_schema_foreign: { status: 400, message: "the backup's store holds a schema object ironlens' migrations do not create" },
  agent_token_rejected: { status: 502, message: "the agent rejected ironlens' token" },
  agent_token_env_reserved: { status: 400, message: "the token names one of ironlens' own settings or secrets (a variable named IRONLENS_…, IPXE_CP_… or KIND_…, or another of its settings)" },
  agent_token_env_forbidden: { status: 400, message: 'the token names an environment variable that IPXE_CP_AGENT_TOKEN_ENV does not allow' },
  agent_token_misdirected: { status: 400, message: "a stored agent token is only sent to that agent's base_url" },
  agent_address_forbidden: { status: 400, message: 'the agent address is link-local or a cloud metadata service' },

  // ---- iSCSI CHAP (issue 13, iSCSI credentials) ----
  chap_invalid: { status: 400, message: 'invalid CHAP credential: an initiator, a user name and a secret of 12-16 letters and digits' },

  // issue 18 (h18a): the cluster manager's edges
  invalid_cluster_description: { status: 422, message: 'description is longer than 4096 characters' },
  cluster_response_too_large: { status: 502, message: 'the cluster answered with more bytes than IRONLENS_CLUSTER_MAX_RESPONSE_BYTES allows' },
  cluster_response_invalid: { status: 502, message: 'the cluster answered with JSON that is not the kind of object asked for' },
  // issue 18 (h25f): link-local / metadata addresses found when a cluster connection is made
  cluster_address_forbidden: {
    status: 422,
    message: "the cluster's server name resolves to a link-local or cloud-metadata address; the connection was not made (IRONLENS_CLUSTER_ALLOW_LINK_LOCAL=1 allows it)",
  },
  bootstrap_host_not_allowed: { status: 422, message: 'a host is an unspecified, broadcast, multicast or link-local address, or a numeric-looking host name' },
  // issue 18 (h18b): browsers, proxies and listeners
  host_not_allowed: { status: 421, message: 'this listener does not serve that host name (IRONLENS_CONSOLE_HOSTS, KIND_K8S_HOSTS add names)' },
  cross_site_request_refused: { status: 403, message: 'a write from another site (Origin or Sec-Fetch-Site) is refused' },
  request_header_required: { status: 403, message: 'a write from a browser that proves no origin (neither Origin nor Sec-Fetch-Site: same-origin) needs a JSON body or the X-Ironlens-Request header' },
  proxy_path_invalid: { status: 400, message: 'the path has a dot segment, an encoded slash or a backslash' },
  form_too_large: { status: 413, message: 'the form has too many fields, or a part over its size limit' },
  // issue 24 (h24b): host reports, bootstrap from workers, fixed addresses
  host_report_invalid: { status: 422, message: 'the host report is invalid (a value outside its grammar, or no X-Ironlens-Timestamp)' },
  host_report_refused: { status: 403, message: "the host report does not come from a worker's bound device and hostname" },
  host_report_signature_invalid: { status: 401, message: "the host report's X-Ironlens-Signature is missing or does not match the worker's CHAP secret" },
  host_report_replayed: { status: 401, message: "the host report's timestamp is more than 300 s old, in the future, or not newer than the last accepted one" },
  bootstrap_worker_unknown: { status: 422, message: 'a node names a worker that does not exist' },
  bootstrap_worker_unreported: { status: 422, message: 'a node names a worker that has not reported (no address or host keys known)' },
  worker_address_invalid: { status: 400, message: 'fixed_address must be a unicast IPv4 address, or null' },
  worker_address_taken: { status: 409, message: 'another worker has that fixed address' },

  // issue 31: rollouts
  rollout_invalid: { status: 400, message: 'the rollout request is invalid' },
  rollout_not_found: { status: 404, message: 'rollout not found' },
  rollout_master_missing: { status: 400, message: "the master is not on the agent of a worker's disk" },
  rollout_worker_unready: { status: 409, message: 'a worker has no bound device or no system disk' },
  rollout_worker_busy: { status: 409, message: 'a worker is already in an active rollout' },
  rollout_nothing_to_do: { status: 409, message: 'no worker to roll out' },
  rollout_state_invalid: { status: 409, message: 'the rollout is not in a state that allows this' },

  // issue 21: power
  bmc_invalid: { status: 400, message: 'invalid BMC settings: driver redfish (url, username, password, verify_tls) or ipmi (host, port, username, password)' },
  bmc_not_configured: { status: 409, message: 'the device has no BMC configured' },
  power_device_revoked: { status: 409, message: 'the device is revoked: no power actions' },
  bmc_unreachable: { status: 502, message: 'the BMC cannot be reached' },
  bmc_auth_failed: { status: 502, message: 'the BMC refused the credentials' },
  bmc_action_failed: { status: 502, message: 'the BMC refused the action' },
  bmc_timeout: { status: 504, message: 'the BMC did not answer in time' },
} as const satisfies Record<string, { status: number; message: string }>;

export type ErrorCode = keyof typeof errorCatalog;
