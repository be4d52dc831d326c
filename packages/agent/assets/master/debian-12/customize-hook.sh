#!/bin/sh
# ironlens master image, Debian 12: runs after every package is installed (mmdebstrap
# --customize-hook). Makes the root filesystem that every clone shares: no SSH host key, no
# machine-id, no authorized key, no control-plane URL (those are added when the disk is
# assembled, or made by each clone at its first boot). $1 = the root directory.
set -eu
R=$1
echo debian >"$R/etc/hostname"
printf '127.0.0.1 localhost\n::1 localhost ip6-localhost ip6-loopback\n' >"$R/etc/hosts"
rm -f "$R/etc/ssh/ssh_host_"* "$R/etc/resolv.conf" "$R/var/lib/dbus/machine-id"
: >"$R/etc/machine-id"                       # empty: systemd makes a new one at first boot
# The iBFT's initiator name is what logs in; this one is only iscsid's placeholder.
echo 'InitiatorName=iqn.2026-07.io.ironlens:unset' >"$R/etc/iscsi/initiatorname.iscsi"
# SSH host keys: made by each clone at its first boot, never in the master. RSA 3072 takes 10-40 s
# under emulation: ed25519 and ecdsa.
printf 'HostKey /etc/ssh/ssh_host_ed25519_key\nHostKey /etc/ssh/ssh_host_ecdsa_key\n' >"$R/etc/ssh/sshd_config.d/10-ironlens-hostkeys.conf"
cat >"$R/etc/systemd/system/ssh-hostkeys.service" <<'EOU'
[Unit]
Description=ironlens: this machine's own SSH host keys (first boot)
ConditionPathExists=!/etc/ssh/ssh_host_ed25519_key
Before=ssh.service
[Service]
Type=oneshot
ExecStart=/usr/bin/ssh-keygen -q -t ed25519 -N "" -f /etc/ssh/ssh_host_ed25519_key
ExecStart=/usr/bin/ssh-keygen -q -t ecdsa -N "" -f /etc/ssh/ssh_host_ecdsa_key
[Install]
WantedBy=ssh.service
EOU
# Every clone would be "debian": take the name iPXE got by DHCP, which it put in the iBFT.
cat >"$R/etc/systemd/system/ibft-hostname.service" <<'EOU'
[Unit]
Description=ironlens: hostname from the iBFT (the name iPXE got by DHCP)
DefaultDependencies=no
After=systemd-remount-fs.service
Before=sysinit.target ssh.service
ConditionPathExists=/sys/firmware/ibft/ethernet0/hostname
[Service]
Type=oneshot
ExecStart=/bin/sh -c 'h=$(tr -cd "a-z0-9.-" </sys/firmware/ibft/ethernet0/hostname); [ -n "$h" ] || exit 0; [ "$(cat /etc/hostname)" = "$h" ] || echo "$h" >/etc/hostname; hostname "$h"; grep -q " $h\\$" /etc/hosts || echo "127.0.1.1 $h" >>/etc/hosts'
[Install]
WantedBy=sysinit.target
EOU
chroot "$R" systemctl enable ssh-hostkeys.service ibft-hostname.service >/dev/null 2>&1
# Slow first-boot jobs under emulation, pointless on a diskless node (root fsck over iSCSI: off in fstab).
chroot "$R" systemctl mask apt-daily.timer apt-daily-upgrade.timer e2scrub_all.timer e2scrub_reap.service \
  fstrim.timer getty-static.service >/dev/null 2>&1
install -d -m 700 "$R/root/.ssh"
rm -rf "$R/var/lib/apt/lists/"* "$R/var/log/"*.log
