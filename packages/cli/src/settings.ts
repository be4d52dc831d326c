/**
 * Every setting the processes read from the environment, for the environment files that
 * `ironlens install-service` writes (each one commented, with its default). A test keeps this
 * list and the sources in step: a variable read anywhere in the production code is listed here.
 * Details of each are in the doc named.
 */
export interface Setting {
  name: string;
  /** The default, as it would be written in the file; `''` when unset by default. */
  default: string;
  /** One line: what it does. */
  text: string;
  doc: string;
  /** Which command reads it. */
  for: ReadonlyArray<'serve' | 'agent' | 'kind'>;
  /** A secret: the file says to keep it in a credential instead (`LoadCredential`/a 0600 file). */
  secret?: boolean;
}

const S = (name: string, def: string, text: string, doc: string, ...rest: Array<'serve' | 'agent' | 'kind' | 'secret'>): Setting => ({
  name,
  default: def,
  text,
  doc,
  for: rest.filter((r): r is 'serve' | 'agent' | 'kind' => r !== 'secret'),
  secret: rest.includes('secret') || undefined,
});

export const SETTINGS: Setting[] = [
  // where things are
  S('IRONLENS_DATA_DIR', '/var/lib/ironlens', 'the store (SQLite ironlens.db), the secret key file and rendered files', 'docs/deployment.md', 'serve', 'kind'),
  S('IRONLENS_DATABASE_URL', '', 'postgres://user:pass@host:5432/db: keep the state in PostgreSQL (several replicas may share it)', 'docs/deployment.md', 'serve', 'secret'),
  S('IRONLENS_SECRET_KEY', '', '32 bytes (64 hex characters or base64) sealing the secrets in the store; unset: <data dir>/secret.key', 'docs/metal.md', 'serve', 'secret'),
  S('IRONLENS_WEB_DIST', '', "the built console's assets (default: the package's own build)", 'docs/console.md', 'serve'),
  S('IRONLENS_BACKUP_KEY_FILE', '', 'the passphrase file of ironlens backup/restore (--key-file)', 'docs/deployment.md', 'serve'),
  // listeners and access
  S('IRONLENS_BOOT_LISTEN', '0.0.0.0:4839', 'the provisioning listener (seed 004, iPXE): host:port or off', 'docs/metal.md', 'serve'),
  S('IRONLENS_CONSOLE_LISTEN', '127.0.0.1:8080', 'the console listener (console, cluster manager, kind panel): host:port or off', 'docs/console.md', 'serve'),
  S('IRONLENS_AGENT_LISTEN', '0.0.0.0:4840', 'the storage agent listener', 'docs/agent.md', 'agent'),
  S('IPXE_CP_TOKEN', '', 'admin token of the provisioning API (env:IPXE_CP_TOKEN; all but /healthz, /boot-vars, /devices/report)', 'docs/access.md', 'serve', 'secret'),
  S('IRONLENS_CONSOLE_TOKEN', '', 'admin token of every API on the console listener (env:IRONLENS_CONSOLE_TOKEN)', 'docs/access.md', 'serve', 'secret'),
  S('IRONLENS_AUTH_CACHE_MS', '500', 'how long a named token lookup is cached: revocation reaches every replica within it', 'docs/access.md', 'serve'),
  S('IRONLENS_AUTH_FAIL_SLOW_AFTER', '5', 'refused tokens from one address (within the window) before each further one is slowed', 'docs/access.md', 'serve'),
  S('IRONLENS_AUTH_FAIL_DELAY_MS', '250', 'how long a slowed refusal waits before its 401', 'docs/access.md', 'serve'),
  S('IRONLENS_AUTH_FAIL_BLOCK_AFTER', '20', 'refused tokens from one address (within the window) before it is answered 429', 'docs/access.md', 'serve'),
  S('IRONLENS_AUTH_FAIL_WINDOW_MS', '60000', 'the window in which refused tokens are counted', 'docs/access.md', 'serve'),
  S('IRONLENS_AUTH_FAIL_BLOCK_MS', '300000', 'how long an address over the limit is answered 429', 'docs/access.md', 'serve'),
  S('IRONLENS_CONSOLE_ORIGINS', '', 'comma-separated origins (https://console.lab.example) under which browsers reach the console through a reverse proxy that rewrites Host: writes from them are same-origin', 'docs/console.md', 'serve'),
  S('IRONLENS_CONSOLE_HOSTS', '', 'comma-separated host names the console answers besides loopback names and its own addresses (421 otherwise); * for any', 'docs/console.md', 'serve'),
  S('IRONLENS_HTTP_REQUEST_TIMEOUT_MS', '60000', 'a request must arrive whole within this, or 408 and the connection is closed (every listener)', 'docs/console.md', 'serve', 'agent', 'kind'),
  S('IRONLENS_HTTP_HEADERS_TIMEOUT_MS', '10000', "a request's headers must arrive within this (every listener)", 'docs/console.md', 'serve', 'agent', 'kind'),
  S('IRONLENS_HTTP_MAX_CONNECTIONS', '4096', 'connections one listener holds at once; more are closed on arrival', 'docs/console.md', 'serve', 'agent', 'kind'),
  S('IRONLENS_HTTP_MAX_CONNECTIONS_PER_SOURCE', '512', 'connections one listener holds from one client address (a load balancer is one)', 'docs/console.md', 'serve', 'agent', 'kind'),
  S('IRONLENS_TRUSTED_PROXIES', '', 'the reverse proxies in front of both listeners (addresses, CIDRs, loopback; or a number of hops): only the X-Forwarded-For entries they added name the client', 'docs/deployment.md', 'serve'),
  S('IRONLENS_TRUST_PROXY', '', 'deprecated: 1 means IRONLENS_TRUSTED_PROXIES=loopback (a proxy on this machine)', 'docs/deployment.md', 'serve'),
  S('IRONLENS_LOG', '', '1: log every request (Fastify logger)', 'docs/metal.md', 'serve'),
  // the boot control plane
  S('IPXE_CP_AUTO_REGISTER', 'true', 'start-up default of auto-register (PUT /settings/auto-register wins)', 'docs/metal.md', 'serve'),
  S('IPXE_CP_BOOT_MENU_TIMEOUT', '5000', 'menu timeout (ms) when a default boot is configured', 'docs/metal.md', 'serve'),
  S('IPXE_CP_AUTO_BOOT_TIMEOUT', '1', 'menu timeout (ms) of the reboot loop', 'docs/metal.md', 'serve'),
  S('IPXE_CP_DEFAULT_ARCH', 'x86_64', 'arch of a worker registered without one', 'docs/metal.md', 'serve'),
  S('IPXE_CP_AGENT_TIMEOUT', '10', 'seconds to wait for a storage agent', 'docs/metal.md', 'serve'),
  S('IPXE_CP_AGENT_TOKEN_ENV', 'IPXE_AGENT_*', 'the variables an agent token may name as ${NAME}', 'docs/metal.md', 'serve'),
  S('IPXE_CP_AGENT_ALLOW_LINK_LOCAL', 'false', 'let agent calls reach link-local and cloud metadata addresses', 'docs/metal.md', 'serve'),
  S('IRONLENS_AGENT_DISK_TIMEOUT', '1800', 'seconds to wait for an agent to create a disk or CD', 'docs/metal.md', 'serve'),
  S('IRONLENS_REPORT_REGISTER_PER_MINUTE', '120', 'new devices one source may register through /devices/report per minute; 0: no limit', 'docs/metal.md', 'serve'),
  S('IRONLENS_REPORT_LAST_SEEN_SECONDS', '60', "a known device's unchanged report writes last_seen only when it is older than this; 0: every report", 'docs/metal.md', 'serve'),
  S('IRONLENS_REPORT_MAX_POOLED', '1000', 'no auto-registration while this many devices are pooled; 0: no cap', 'docs/metal.md', 'serve'),
  S('IRONLENS_AUTO_REGISTER_WINDOW_MINUTES', '0', 'auto-register closes by itself this many minutes after it was turned on; 0: never', 'docs/metal.md', 'serve'),
  S('IRONLENS_ISCSI_CHAP', 'false', 'per-worker iSCSI CHAP accounts on every disk and install CD', 'docs/metal.md', 'serve'),
  S('IRONLENS_ISCSI_CHAP_RECONCILE_MS', '30000', 'with CHAP on, how often agents are checked for CHAP-bound targets they lost', 'docs/metal.md', 'serve'),
  // power (BMCs)
  S('IRONLENS_BMC_CONCURRENCY', '8', 'BMC calls in flight at once over every BMC (calls to one BMC host go one at a time)', 'docs/metal.md', 'serve'),
  S('IRONLENS_BMC_STAGGER_MS', '0', 'least time between two power-ons this process sends', 'docs/metal.md', 'serve'),
  S('IRONLENS_BMC_TIMEOUT_MS', '20000', 'deadline of one BMC call (an HTTPS request, an ipmitool run)', 'docs/metal.md', 'serve'),
  S('IRONLENS_BMC_STATE_CACHE_MS', '5000', 'how long GET /devices/{mac}/power answers the state last read from the BMC', 'docs/metal.md', 'serve'),
  S('IRONLENS_BMC_ALLOW_LINK_LOCAL', 'false', 'accept BMCs at link-local and cloud metadata addresses (a Redfish host interface on 169.254.0.0/16)', 'docs/metal.md', 'serve'),
  S('IRONLENS_BMC_FAILURE_CACHE_MS', '2000', 'how long a failed state read of a device is answered again without calling its BMC', 'docs/metal.md', 'serve'),
  S('IRONLENS_BMC_READ_QUEUE_PER_HOST', '4', 'state reads that may wait for one BMC host (more: 503 bmc_busy; actions go first)', 'docs/metal.md', 'serve'),
  S('IRONLENS_BMC_READ_QUEUE', '64', 'state reads that may wait over every BMC host (more: 503 bmc_busy)', 'docs/metal.md', 'serve'),
  S('IRONLENS_BOOT_CONFIRM_TIMEOUT_MS', '300000', 'after a power action with boot: network, how long to wait for the proof of boot', 'docs/metal.md', 'serve'),
  // dnsmasq
  S('IPXE_CP_DNSMASQ_HOSTS_FILE', '<data dir>/dnsmasq/dhcp-hosts.conf', "the file dnsmasq reads with --dhcp-hostsfile", 'docs/metal.md', 'serve'),
  S('IPXE_CP_DNSMASQ_RELOAD', '', 'false: write the hosts file, reload nothing; true: docker exec ipxe-dnsmasq killall -HUP dnsmasq; unset: detect at start', 'docs/metal.md', 'serve'),
  S('IPXE_CP_DNSMASQ_CONTAINER', '', 'reload by docker exec <container> killall -HUP dnsmasq', 'docs/metal.md', 'serve'),
  S('IPXE_CP_DNSMASQ_PID_FILE', '', "reload by SIGHUP to the pid in this file (dnsmasq's --pid-file)", 'docs/metal.md', 'serve'),
  S('IPXE_CP_DNSMASQ_RELOAD_COMMAND', '', 'reload by running this command (split on whitespace, or a JSON array; never a shell)', 'docs/metal.md', 'serve'),
  S('IRONLENS_DHCP_LEASE', 'infinite', "bound workers' lease in the hosts file: infinite (never runs out) or range (the seed's mac,hostname lines)", 'docs/metal.md', 'serve'),
  S('IRONLENS_DHCP_WRITER_GROUP', '<hostname>:<hosts file>', 'replicas of one group elect one writer of the hosts file', 'docs/deployment.md', 'serve'),
  S('IRONLENS_DHCP_WRITER_RETRY_MS', '2000', 'how often a replica that is not the hosts-file writer tries to become it', 'docs/deployment.md', 'serve'),
  // boot services (issue 30): ironlens' own dnsmasq
  S('IRONLENS_BOOT_SERVICES', 'off', "off, proxy (proxy-DHCP beside the site's DHCP server) or dhcp (DHCP for an isolated network): run dnsmasq for DHCP and TFTP of iPXE", 'docs/netboot.md', 'serve'),
  S('IRONLENS_BOOT_INTERFACE', '', 'the provisioning network interface the boot services serve (required when they are on)', 'docs/netboot.md', 'serve'),
  S('IRONLENS_BOOT_DHCP_RANGE', '', 'dhcp: start,end[,netmask] of the addresses handed out', 'docs/netboot.md', 'serve'),
  S('IRONLENS_BOOT_DHCP_ROUTER', "this host's address", 'dhcp: the default gateway handed out, or none', 'docs/netboot.md', 'serve'),
  S('IRONLENS_BOOT_DHCP_DNS', '', 'dhcp: DNS servers handed out, comma-separated', 'docs/netboot.md', 'serve'),
  S('IRONLENS_BOOT_DHCP_LEASE', '1h', "dhcp: the range's lease time (bound workers: IRONLENS_DHCP_LEASE)", 'docs/netboot.md', 'serve'),
  S('IRONLENS_BOOT_URL', 'http://<interface address>:<boot port>', 'the provisioning listener as machines reach it, filled into GET /boot.ipxe', 'docs/netboot.md', 'serve'),
  S('IRONLENS_BOOT_IPXE_DIR', '/usr/lib/ipxe', "the iPXE binaries TFTP serves (Debian's ipxe package)", 'docs/netboot.md', 'serve'),
  S('IRONLENS_BOOT_EFI_FILE', 'snponly.efi', "what a UEFI firmware's PXE gets: snponly.efi or ipxe.efi", 'docs/netboot.md', 'serve'),
  S('IRONLENS_BOOT_DNSMASQ', 'dnsmasq on PATH', 'the dnsmasq binary the boot services run', 'docs/netboot.md', 'serve'),
  S('IRONLENS_BOOT_RA', 'true for dhcp, false for proxy', 'IPv6 router advertisements on the interface (iPXE skips its 13 s IPv6 wait)', 'docs/netboot.md', 'serve'),
  // replicas
  S('IRONLENS_REPLICA_ID', '<hostname>:<pid>:<random>', "this process's name among the replicas", 'docs/deployment.md', 'serve'),
  S('IRONLENS_REPLICA_RESYNC_MS', '30000', 'how often a replica clears its caches as a backstop for a lost change notice; 0: never', 'docs/deployment.md', 'serve'),
  S('IRONLENS_JOB_LEASE_MS', '15000', "how long a job's claim holds without a heartbeat", 'docs/deployment.md', 'serve'),
  S('IRONLENS_JOB_HEARTBEAT_MS', '5000', 'how often a replica extends the leases of its jobs', 'docs/deployment.md', 'serve'),
  // the cluster manager and the bootstrap
  S('IRONLENS_GITHUB_MIRROR', 'https://github.com', 'where pinned manifests and git repositories (Kubespray, CRDs) are fetched from', 'docs/clusters.md', 'serve'),
  S('IRONLENS_LENS_HOSTS', "this host's addresses", 'comma-separated answer of lens-hosts', 'docs/clusters.md', 'serve'),
  S('IRONLENS_CLUSTER_HELPER_IMAGE', 'docker.io/library/busybox:1.37.0', 'image of the node-tuning and pre-pull DaemonSets', 'docs/clusters.md', 'serve'),
  S('IRONLENS_CLUSTER_READY_TIMEOUT_MS', '1500', "how long the list waits for each cluster's ready probe", 'docs/clusters.md', 'serve'),
  S('IRONLENS_CLUSTER_REQUEST_TIMEOUT_MS', '15000', 'any other request to a cluster', 'docs/clusters.md', 'serve'),
  S('IRONLENS_CLUSTER_SUMMARY_BUDGET_MS', '500', 'how long an overview waits for kubelet Summaries', 'docs/clusters.md', 'serve'),
  S('IRONLENS_CLUSTER_SUMMARY_TTL_MS', '15000', "how long the overview reuses a node's kubelet Summary", 'docs/clusters.md', 'serve'),
  S('IRONLENS_CLUSTER_GATEWAY_CLEANUP_TIMEOUT_MS', '120000', 'how long DELETE waits for the gateway namespace to be gone', 'docs/clusters.md', 'serve'),
  S('IRONLENS_CLUSTER_MAX_RESPONSE_BYTES', '4194304', 'cap of one answer from a cluster, enforced while streaming', 'docs/clusters.md', 'serve'),
  S('IRONLENS_CLUSTER_MAX_LIST_BYTES', '67108864', "cap of one list answer (the overview's lists)", 'docs/clusters.md', 'serve'),
  S('IRONLENS_CLUSTER_ALLOW_LINK_LOCAL', '0', '1: accept kubeconfig servers on link-local and cloud-metadata addresses', 'docs/clusters.md', 'serve'),
  S('IRONLENS_CRD_BUNDLE_MAX_BYTES', '16777216', 'cap of one CRD bundle download, enforced while streaming', 'docs/clusters.md', 'serve'),
  S('IRONLENS_CRD_BUNDLE_REDIRECT_HOSTS', 'objects.githubusercontent.com,release-assets.githubusercontent.com', "hosts a CRD bundle download may be redirected to besides the mirror's", 'docs/clusters.md', 'serve'),
  S('IRONLENS_CHART_MIRROR', '', "where the gateway's Helm charts come from: an HTTP(S) Helm repository or an oci:// prefix", 'docs/clusters.md', 'serve'),
  S('IRONLENS_HELM', 'helm on PATH', 'the helm binary the gateway install runs', 'docs/clusters.md', 'serve'),
  S('IRONLENS_GATEWAY_AUTHZ_PORT', 'the console port (the bound one on port 0)', "the port the gateway's authorization hook reaches ironlens on", 'docs/clusters.md', 'serve'),
  S('IRONLENS_GATEWAY_AUTHZ_RATE', '200', "the authorization hook's calls per second per source", 'docs/clusters.md', 'serve'),
  S('IRONLENS_GATEWAY_AUTHZ_BURST', '400', "the authorization hook's bucket size per source", 'docs/clusters.md', 'serve'),
  S('IRONLENS_GATEWAY_CRD_WAIT_MS', '60000', 'how long a gateway reconcile waits for a kind a chart just installed', 'docs/clusters.md', 'serve'),
  S('IRONLENS_DEPLOYMENT_POLL_MS', '2000', "how often a model deployment's readiness is read while it deploys", 'docs/deployments.md', 'serve'),
  S('IRONLENS_DEPLOYMENT_READY_TIMEOUT_MS', '1800000', 'a model deployment not ready by then fails with its last reason', 'docs/deployments.md', 'serve'),
  S('IRONLENS_DEPLOYMENT_SMOKE_TIMEOUT_MS', '300000', "how long a deployment's Ready model servers may leave the smoke request unanswered before it fails", 'docs/deployments.md', 'serve'),
  S('IRONLENS_DEPLOYMENT_SMOKE_REQUEST_TIMEOUT_MS', '30000', "one smoke request's timeout", 'docs/deployments.md', 'serve'),
  S('IRONLENS_BOOTSTRAP_CONCURRENCY', '1', 'bootstrap jobs running at once', 'docs/bootstrap.md', 'serve'),
  S('IRONLENS_BOOTSTRAP_JOBS_KEEP', '200', 'finished bootstrap jobs kept', 'docs/bootstrap.md', 'serve'),
  S('IRONLENS_BOOTSTRAP_SSH_TIMEOUT_S', '10', 'per-host SSH timeout of scans and preflight', 'docs/bootstrap.md', 'serve'),
  S('IRONLENS_BOOTSTRAP_TIMEOUT_S', '3600', "a bootstrap job's deadline", 'docs/bootstrap.md', 'serve'),
  // the kind panel (inside serve under /kind, or alone)
  S('KIND_K8S_WEB_HOST', '127.0.0.1', 'listen address of ironlens kind', 'docs/kind.md', 'kind'),
  S('KIND_K8S_WEB_PORT', '8080', 'listen port of ironlens kind', 'docs/kind.md', 'kind'),
  S('KIND_K8S_TOKEN', '', 'bearer token of ironlens kind', 'docs/kind.md', 'kind', 'secret'),
  S('KIND_K8S_HOSTS', '', 'comma-separated host names ironlens kind answers besides loopback names and its own addresses (421 otherwise); * for any', 'docs/kind.md', 'kind'),
  S('KIND_K8S_DB', '<data dir>/kind/kind.sqlite', 'the store of ironlens kind', 'docs/kind.md', 'kind'),
  S('KIND_K8S_CLUSTERS_DIR', '<data dir>/kind/clusters', "each kind cluster's kubeconfig and config", 'docs/kind.md', 'serve', 'kind'),
  S('KIND_K8S_TAGS_URL', "Docker Hub's tags API", 'where the kindest/node tags are read from', 'docs/kind.md', 'serve', 'kind'),
  S('KIND_K8S_SKIP_VERSION_LIST', 'false', 'answer an empty version list without asking the registry', 'docs/kind.md', 'serve', 'kind'),
  S('KIND_K8S_API_SERVER_HOST', '', 'host written into saved kubeconfigs (a panel in a container)', 'docs/kind.md', 'serve', 'kind'),
  S('KIND_K8S_NODES_READY_TIMEOUT', '180', 'seconds to wait for nodes Ready after creation', 'docs/kind.md', 'serve', 'kind'),
  S('KIND_K8S_CREATE_TIMEOUT', '1200', 'seconds kind create cluster may take', 'docs/kind.md', 'serve', 'kind'),
  S('KIND_K8S_JOBS_KEEP', '200', 'creation jobs kept', 'docs/kind.md', 'serve', 'kind'),
  // the storage agent
  S('DISK_DIR', '/home/iscsi_img', 'where disk images and master images live', 'docs/agent.md', 'agent'),
  S('IPXE_AGENT_TOKEN', '', 'bearer token the agent requires', 'docs/agent.md', 'agent', 'secret'),
  S('IPXE_AGENT_BACKEND', 'stgt', 'stgt (tgtadm) or lio (targetcli)', 'docs/agent.md', 'agent'),
  S('IPXE_AGENT_BASE_IQN', 'iqn.2026-07.com.controller', "every target's IQN starts with this plus ':'", 'docs/agent.md', 'agent'),
  S('IPXE_AGENT_CD', 'true for stgt', 'serve ISO images as read-only CD targets', 'docs/agent.md', 'agent'),
  S('IPXE_AGENT_TGT_CONTROL_PORT', '0', "tgtd's control port (tgtadm -C)", 'docs/agent.md', 'agent'),
  S('IRONLENS_AGENT_MASTER_RESCAN_SECONDS', '30', 'seconds between two master rescans', 'docs/agent.md', 'agent'),
  S('IRONLENS_AGENT_SCAN_OPEN', 'false', 'let a scan export a file with no recorded initiator open to every initiator', 'docs/agent.md', 'agent'),
];

/** Settings of the API client's commands (`ironlens devices …`), read where they run: not a service's. */
export const CLIENT_SETTINGS = new Set(['IRONLENS_URL', 'IRONLENS_TOKEN']);

/** Variables only the tests set: never in an environment file. */
export const TEST_ONLY_SETTINGS = new Set(['IRONLENS_TEST_POSTGRES_URL', 'IRONLENS_TEST_STORE', 'IRONLENS_FROM_SOURCE']);

/**
 * The names no agent token may name as `${NAME}` (metal's `reservedEnv`, beside its rule of
 * `IRONLENS_*`, `IPXE_CP_*`, `KIND_*`): every setting above, and the client's and the tests'.
 * Except `IPXE_AGENT_TOKEN`: the storage agent's own token, which a control plane holds
 * precisely so that agent records name it (docs/metal.md, "agent tokens").
 */
export const AGENT_TOKEN_RESERVED_ENV: readonly string[] = [...SETTINGS.map((s) => s.name), ...CLIENT_SETTINGS, ...TEST_ONLY_SETTINGS].filter((n) => n !== 'IPXE_AGENT_TOKEN');
