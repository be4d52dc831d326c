#!/bin/sh
# ironlens master image, Debian 12: runs after Debian's essential packages, before the rest
# (mmdebstrap --essential-hook), so the kernel's first initramfs already has the iSCSI pieces.
# $1 = the root directory being built.
set -eu
R=$1
mkdir -p "$R/etc/iscsi" "$R/etc/initramfs-tools/conf.d" "$R/etc/initramfs-tools/hooks" "$R/usr/share/initramfs-tools/modules.d"
# open-iscsi's local-top script: ISCSI_AUTO => modprobe iscsi_ibft; iscsistart -N (network from the
# iBFT iPXE left); iscsistart -b (log in to the iBFT's target with its initiator name and CHAP).
echo 'ISCSI_AUTO=true' >"$R/etc/iscsi/iscsi.initramfs"
# Loaded at boot whatever the hardware (MODULES=list would leave sd_mod out: the disk would never appear).
printf 'sd_mod\niscsi_ibft\niscsi_tcp\n' >"$R/usr/share/initramfs-tools/modules.d/ironlens-diskless"
printf 'MODULES=list\nCOMPRESS=zstd\n' >"$R/etc/initramfs-tools/conf.d/ironlens-diskless"
# Included, but loaded only by udev when the hardware is there (listing NIC drivers in modules.d
# would load every one of them at boot).
cat >"$R/etc/initramfs-tools/hooks/ironlens-diskless-nics" <<'EOS'
#!/bin/sh
[ "$1" = prereqs ] && exit 0
. /usr/share/initramfs-tools/hook-functions
for m in ext4 crc32c_generic virtio_pci virtio_net e1000 e1000e igb igc ixgbe i40e ice r8169 tg3 bnx2x bnxt_en mlx4_en mlx5_core; do
  manual_add_modules "$m"
done
EOS
chmod 755 "$R/etc/initramfs-tools/hooks/ironlens-diskless-nics"
