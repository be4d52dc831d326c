import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';

/**
 * What a master image of one distribution is made of: the suites mmdebstrap installs from, the
 * packages, the hooks (shell scripts under `packages/agent/assets/master/<os>/`), the dpkg path
 * exclusions and the kernel command line. Adding a distribution is adding an entry here and its
 * hook directory (docs/master-images.md, "Another distribution").
 */
export interface OsRecipe {
  /** The `--os` value: `debian-12`. */
  id: string;
  /** The default master name (`_tpl_<name>.img`). */
  defaultName: string;
  pretty: string;
  /** mmdebstrap's suite and the sources lines' suites: [suite, from the main mirror | the security mirror]. */
  suite: string;
  sources: Array<{ suite: string; mirror: 'main' | 'security'; components: string }>;
  /** mmdebstrap `--variant`. */
  variant: string;
  packages: string[];
  /** dpkg path-exclude / path-include options, in order (kept in the image, so later installs keep them out). */
  dpkgOptions: string[];
  /** The hook scripts' directory: essential-hook.sh and customize-hook.sh, each run with the root directory as $1. */
  hookDir: string;
  /** GRUB's menu entry: `{uuid}` is replaced by the root filesystem's UUID. */
  kernelCommandLine: string;
  menuTitle: string;
  /** Paths that the initramfs must list for the image to boot from iSCSI (checked before the image is published). */
  initramfsMustHave: string[];
  /** The UEFI boot loaders (`--firmware uefi|both`); a recipe without them builds BIOS images only. */
  efi?: EfiLoaders;
}

/**
 * The distribution's own signed UEFI boot loaders: packages downloaded from its archive with
 * apt (signature-checked indexes, like every other package) and unpacked beside the root
 * filesystem, not installed in it (an installed GRUB would rewrite the image's grub.cfg at the
 * next kernel upgrade). Their files go to the EFI System Partition twice: as the removable
 * path `\EFI\BOOT\BOOTX64.EFI` (shim) with its companions, and under `\EFI\<vendor>\`.
 */
export interface EfiLoaders {
  /** `\EFI\<vendor>\`: Debian's own directory is `debian`. */
  vendor: string;
  packages: string[];
  /** A file of a package (path inside it) and its name on the ESP. */
  files: Array<{ from: string; name: string }>;
  /** The file that starts first (shim): it is also `\EFI\BOOT\BOOTX64.EFI`. */
  first: string;
}

const ASSETS = join(fileURLToPath(new URL('.', import.meta.url)), '..', '..', 'assets', 'master');

export const OS_RECIPES: Record<string, OsRecipe> = {
  'debian-12': {
    id: 'debian-12',
    defaultName: 'debian_12',
    pretty: 'Debian 12 (bookworm)',
    suite: 'bookworm',
    sources: [
      { suite: 'bookworm', mirror: 'main', components: 'main' },
      { suite: 'bookworm-updates', mirror: 'main', components: 'main' },
      { suite: 'bookworm-security', mirror: 'security', components: 'main' },
    ],
    variant: 'apt',
    packages: [
      'linux-image-amd64',
      'initramfs-tools',
      'zstd',
      'open-iscsi',
      'systemd-sysv',
      'udev',
      'kmod',
      'openssh-server',
      'sudo',
      'e2fsprogs',
      'iproute2',
      'procps',
      'pciutils',
    ],
    dpkgOptions: [
      'path-exclude=/usr/share/man/*',
      'path-exclude=/usr/share/locale/*',
      'path-include=/usr/share/locale/locale.alias',
      'path-exclude=/usr/share/doc/*',
      'path-include=/usr/share/doc/*/copyright',
      'path-exclude=/usr/share/info/*',
      'path-exclude=/lib/modules/*/kernel/sound/*',
      'path-exclude=/lib/modules/*/kernel/drivers/media/*',
      'path-exclude=/lib/modules/*/kernel/drivers/net/wireless/*',
      'path-exclude=/lib/modules/*/kernel/drivers/bluetooth/*',
      'path-exclude=/lib/modules/*/kernel/drivers/staging/*',
    ],
    hookDir: join(ASSETS, 'debian-12'),
    kernelCommandLine: 'root=UUID={uuid} ro console=tty0 console=ttyS0,115200n8',
    menuTitle: 'Debian 12, root on iSCSI (ironlens)',
    initramfsMustHave: ['scripts/local-top/iscsi', 'etc/iscsi.initramfs', 'usr/sbin/iscsistart'],
    efi: {
      vendor: 'debian',
      // shim (signed by Microsoft's UEFI CA), MokManager (shim-helpers) and GRUB (signed by Debian).
      packages: ['shim-signed', 'shim-helpers-amd64-signed', 'grub-efi-amd64-signed'],
      files: [
        { from: 'usr/lib/shim/shimx64.efi.signed', name: 'shimx64.efi' },
        { from: 'usr/lib/shim/mmx64.efi.signed', name: 'mmx64.efi' },
        { from: 'usr/lib/grub/x86_64-efi-signed/grubx64.efi.signed', name: 'grubx64.efi' },
      ],
      first: 'shimx64.efi',
    },
  },
};

export function osRecipe(id: string): OsRecipe | undefined {
  return Object.hasOwn(OS_RECIPES, id) ? OS_RECIPES[id] : undefined;
}

/** The hook scripts' text (part of the cache key: a changed hook is a new root filesystem). */
export function recipeHooks(recipe: OsRecipe): { essential: string; customize: string } {
  return {
    essential: readFileSync(join(recipe.hookDir, 'essential-hook.sh'), 'utf8'),
    customize: readFileSync(join(recipe.hookDir, 'customize-hook.sh'), 'utf8'),
  };
}
