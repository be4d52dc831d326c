#!/usr/bin/env bash
# Installs what the test suites need on a fresh Debian machine: the real tools the tests
# drive (dnsmasq, tgtd, qemu with iPXE, a DHCP client, an iSCSI client, XFS for reflink,
# wrk and nginx for the benchmark, Chromium for the console, sshd, ansible-playbook, sudo and
# sshpass for the Kubespray bootstrap, mmdebstrap, GRUB and mtools for the master image (ironlens master build),
# OVMF and Debian's iPXE binaries for the UEFI and boot-services suites,
# PostgreSQL for the store's second dialect, git) and the
# npm packages. Idempotent: skips apt when every tool is already there, and `npm ci` when
# node_modules was installed from this very package-lock.json by this Node version (a stamp).
set -euo pipefail
cd "$(dirname "$0")/.."

PKGS=(dnsmasq-base tgt qemu-system-x86 ipxe-qemu busybox udhcpc libiscsi-bin xfsprogs btrfs-progs
      wrk nginx-light chromium openssh-server openssh-client iproute2 procps psmisc curl ca-certificates
      openssl e2fsprogs coreutils ansible-core sudo sshpass git python3-venv postgresql systemd
      mmdebstrap grub-pc-bin grub-common openipmi ipmitool ovmf ipxe mtools)
TOOLS=(dnsmasq tgtd tgtadm qemu-system-x86_64 busybox udhcpc iscsi-ls mkfs.xfs wrk nginx chromium sshd ip openssl filefrag ansible-playbook sudo sshpass git psql curl systemd-analyze mmdebstrap grub-mkimage ipmi_sim ipmitool mformat mcopy mdir)

missing=()
for t in "${TOOLS[@]}"; do command -v "$t" >/dev/null 2>&1 || [ -x "/usr/sbin/$t" ] || missing+=("$t"); done
python3 -c 'import ensurepip' >/dev/null 2>&1 || missing+=(python3-venv)
[ -f /usr/share/qemu/pxe-virtio.rom ] || [ -f /usr/lib/ipxe/qemu/efi-virtio.rom ] || missing+=(ipxe-qemu)
[ -f /usr/lib/grub/i386-pc/boot.img ] || missing+=(grub-pc-bin)  # the master image's boot loader (ironlens master build)
[ -f /usr/share/ovmf/OVMF.fd ] || missing+=(ovmf)                     # UEFI machines under qemu (issue 30)
[ -f /usr/lib/ipxe/qemu/efi-virtio.rom ] || missing+=(ipxe-qemu)     # iPXE's UEFI ROM for virtio-net
for f in undionly.kpxe ipxe.efi snponly.efi; do [ -f "/usr/lib/ipxe/$f" ] || missing+=(ipxe); done  # what the boot services' TFTP serves
compgen -G '/usr/lib/postgresql/*/bin/initdb' >/dev/null || missing+=(postgresql)
compgen -G '/usr/lib/postgresql/*/bin/pg_dump' >/dev/null || missing+=(postgresql)  # dumpDatabase in the secrets greps
if [ "${#missing[@]}" -gt 0 ]; then
  echo "[install-test-deps] installing Debian packages (missing: ${missing[*]})"
  if [ "$(id -u)" != 0 ]; then echo "[install-test-deps] need root for apt-get" >&2; exit 1; fi
  apt-get update -qq
  DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends "${PKGS[@]}" >/dev/null
fi

# The Redfish emulator of the power tests (issue 21): OpenStack's sushy-tools from PyPI, pinned, in a
# virtualenv of its own (its --fake driver needs no libvirt).
SUSHY_VERSION=2.2.0
SUSHY_VENV="${HOME}/.cache/ironlens/venv-sushy"
if [ "$("$SUSHY_VENV/bin/python" -c 'import importlib.metadata as m; print(m.version("sushy-tools"))' 2>/dev/null)" != "$SUSHY_VERSION" ]; then
  echo "[install-test-deps] sushy-tools $SUSHY_VERSION into $SUSHY_VENV"
  py=/usr/bin/python3; [ -x "$py" ] || py=python3
  rm -rf "$SUSHY_VENV"
  "$py" -m venv "$SUSHY_VENV"
  "$SUSHY_VENV/bin/pip" install -q --disable-pip-version-check "sushy-tools==$SUSHY_VERSION"
fi

# npm packages: `npm ci` (about 3 minutes) only when package-lock.json or Node changed since the
# last install; `npm ci` also runs the root `prepare` (the console's assets and the compiled command).
stamp=node_modules/.ironlens-install-stamp
want="$(sha256sum package-lock.json | cut -d' ' -f1) node $(node --version)"
if [ -f "$stamp" ] && [ "$(cat "$stamp")" = "$want" ]; then
  echo "[install-test-deps] node_modules matches package-lock.json: no npm ci (delete $stamp to force one)"
  npm run -s build # the compiled command and the console follow the sources (seconds)
else
  npm ci --no-audit --no-fund
  echo "$want" > "$stamp"
fi

# The shared gateway's suite (issue 22): the pinned Helm, built from the Go module proxy, and the
# real upstream CRDs and charts it installs (Go modules; a module the proxy refuses is cloned at
# its tag). Both cached under ~/.cache/ironlens/.
bash scripts/build-helm.sh
bash scripts/fetch-gateway-fixtures.sh
bash scripts/build-envoy-gateway.sh  # the real Envoy Gateway controller the suite runs out of cluster
bash scripts/build-lws.sh  # the real LeaderWorkerSet controller the deployments suite runs out of cluster (wide-EP)
