// Constants the console shows as choices (`@ironlens/metal/constants`): no imports, so the
// browser bundle takes these values and nothing of the server.

/** The operating systems a system disk can carry: menu.ipxe's OS items. */
export const OS_VALUES = ['windows', 'ubuntu', 'debian', 'centos', 'esxi'] as const;
export type Os = (typeof OS_VALUES)[number];

/** menu.ipxe's main menu item ids: what `menu_default` may name. */
export const MENU_ITEMS = [...OS_VALUES, 'menu-diag', 'menu-install', 'config', 'shell', 'reboot', 'exit'] as const;
