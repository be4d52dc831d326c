/**
 * The one `DataTable`'s row selection in a real Chromium (Debian's, through playwright-core): the
 * fixture page (`tables.fixture.tsx`, bundled here with esbuild, React's development build so that
 * its warnings show) is served under a `script-src 'self'` policy like the console's. Checkboxes are
 * found by their accessible names, as a screen reader would; the keyboard reaches and toggles them.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { build } from 'esbuild';
import { type BrowserContext, chromium, type Page } from 'playwright-core';
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';

const CHROMIUM = '/usr/bin/chromium';
const here = dirname(fileURLToPath(import.meta.url));
const PAGE = '<!doctype html><html lang="en"><head><meta charset="utf-8"><title>DataTable</title></head><body><div id="root"></div><script type="module" src="/app.js"></script></body></html>';

let tmp: string;
let server: Server;
let url: string;
let context: BrowserContext;
let page: Page;
const problems: string[] = [];

const selected = () => page.getByTestId('selected').textContent();
const box = (name: string) => page.getByRole('checkbox', { name, exact: true });
const all = () => box('Select all machines');
const mixed = () => all().evaluate((el) => (el as HTMLInputElement).indeterminate);

beforeAll(async () => {
  tmp = mkdtempSync(join(tmpdir(), `ironlens-datatable-${process.pid}-`));
  const bundle = await build({
    entryPoints: [join(here, 'tables.fixture.tsx')],
    bundle: true,
    write: false,
    format: 'esm',
    platform: 'browser',
    jsx: 'automatic',
    define: { 'process.env.NODE_ENV': '"development"' },
    logLevel: 'silent',
  });
  const js = bundle.outputFiles[0].text;
  server = createServer((req, res) => {
    res.setHeader('content-security-policy', "default-src 'self'; script-src 'self'; object-src 'none'; base-uri 'none'");
    if (req.url === '/app.js') res.writeHead(200, { 'content-type': 'text/javascript' }).end(js);
    else if (req.url === '/') res.writeHead(200, { 'content-type': 'text/html' }).end(PAGE);
    else if (req.url === '/favicon.ico') res.writeHead(204).end();
    else res.writeHead(404).end();
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  url = `http://127.0.0.1:${(server.address() as AddressInfo).port}/`;
  context = await chromium.launchPersistentContext(join(tmp, 'profile'), {
    executablePath: CHROMIUM,
    headless: true,
    args: ['--headless', '--no-sandbox', '--disable-gpu', '--disable-background-networking', '--disable-component-update', '--disable-sync', '--no-first-run', '--disable-quic'],
  });
  page = context.pages()[0] ?? (await context.newPage());
  // React's warnings (keys, controlled inputs) and CSP refusals land here.
  page.on('console', (m) => {
    if (m.type() === 'error' || m.type() === 'warning') problems.push(m.text());
  });
  page.on('pageerror', (e) => problems.push(e.message));
}, 120_000);

afterAll(async () => {
  await context?.close();
  await new Promise((resolve) => (server ? server.close(resolve) : resolve(undefined)));
  if (tmp) rmSync(tmp, { recursive: true, force: true });
});

beforeEach(async () => {
  await page.goto(url);
  await expect.poll(() => page.getByTestId('row-a').count(), { timeout: 10_000 }).toBe(1);
});

describe('DataTable row selection', () => {
  it('names the table and each checkbox; a row that cannot be selected has none', async () => {
    expect(await page.getByRole('table', { name: 'Machines' }).count()).toBe(1);
    expect(await page.getByRole('columnheader').allTextContents()).toEqual(['', 'Name', 'Note']);
    for (const k of ['a', 'b', 'd']) expect(await box(`Select ${k}`).count()).toBe(1);
    expect(await page.getByTestId('row-c').getByRole('checkbox').count()).toBe(0);
    expect(await page.getByRole('checkbox').count()).toBe(4);
    expect(await selected()).toBe('none');
  });

  it('selects one row; select-all is then mixed, selects every selectable row, and clears them', async () => {
    await box('Select b').click();
    expect(await selected()).toBe('b');
    expect(await box('Select b').isChecked()).toBe(true);
    expect(await all().isChecked()).toBe(false);
    expect(await mixed()).toBe(true);

    await all().click();
    expect(await selected()).toBe('a,b,d');
    expect(await all().isChecked()).toBe(true);
    expect(await mixed()).toBe(false);
    for (const k of ['a', 'b', 'd']) expect(await box(`Select ${k}`).isChecked()).toBe(true);

    await box('Select d').click();
    expect(await selected()).toBe('a,b');
    expect(await mixed()).toBe(true);
    await all().click();
    await all().click();
    expect(await selected()).toBe('none');
    expect(await mixed()).toBe(false);
  });

  it('works from the keyboard: Tab reaches select-all and each row, Space toggles', async () => {
    await page.getByRole('button', { name: 'Show none' }).focus();
    await page.keyboard.press('Tab');
    expect(await all().evaluate((el) => el === document.activeElement)).toBe(true);
    await page.keyboard.press('Space');
    expect(await selected()).toBe('a,b,d');
    await page.keyboard.press('Tab');
    expect(await box('Select a').evaluate((el) => el === document.activeElement)).toBe(true);
    await page.keyboard.press('Space');
    expect(await selected()).toBe('b,d');
    await page.keyboard.press('Tab');
    await page.keyboard.press('Tab');
    expect(await box('Select d').evaluate((el) => el === document.activeElement)).toBe(true);
    await page.keyboard.press('Space');
    expect(await selected()).toBe('b');
    expect(await mixed()).toBe(true);
  });

  it('keeps rows the filter hides selected; select-all acts on the rows shown; no rows: the empty text, select-all disabled', async () => {
    await box('Select b').click();
    await page.getByRole('button', { name: 'Show a and d' }).click();
    expect(await page.getByTestId('row-b').count()).toBe(0);
    expect(await selected()).toBe('b');
    expect(await all().isChecked()).toBe(false);
    expect(await mixed()).toBe(false);
    await all().click();
    expect(await selected()).toBe('a,b,d');
    expect(await all().isChecked()).toBe(true);
    await all().click();
    expect(await selected()).toBe('b');

    await page.getByRole('button', { name: 'Show none' }).click();
    expect(await page.getByRole('cell', { name: 'Nothing to show.' }).getAttribute('colspan')).toBe('3');
    expect(await all().isDisabled()).toBe(true);
    expect(await selected()).toBe('b');
  });

  it('the page ran under the policy without a React warning or a refused script', () => {
    expect(problems).toEqual([]);
  });
});
