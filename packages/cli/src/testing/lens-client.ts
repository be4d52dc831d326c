/**
 * llm-d Lens' browser client as its create-cluster wizard calls ironlens (`lens-ui/src/api/
 * httpClient.js` and the wizard's own request helper, issue 33), for tests to run inside a page:
 * `await page.evaluate(lensRequest, {path, method, body})`. Each function is self-contained (it
 * runs in the browser) and answers `{status, body}` with the body parsed as JSON, `null` when
 * empty. Written from what Lens sends, not copied from it.
 */

/** JSON answers of many shapes, read by the tests' assertions. */
// biome-ignore lint/suspicious/noExplicitAny: see above
export type LensAnswer = { status: number; body: any };

/**
 * The wizard's request helper: the browser's cookies, `Accept` and `Content-Type:
 * application/json` on every call (a GET or a body-less DELETE too), never an `Authorization`
 * of its own; a body is JSON.
 */
export async function lensRequest(req: { path: string; method?: string; body?: unknown }): Promise<LensAnswer> {
  const res = await fetch(req.path, {
    method: req.method ?? 'GET',
    credentials: 'include',
    headers: { Accept: 'application/json', 'Content-Type': 'application/json' },
    body: req.body === undefined ? undefined : JSON.stringify(req.body),
  });
  const text = await res.text();
  return { status: res.status, body: text ? JSON.parse(text) : null };
}

/** The wizard's register step: a FormData (name, description, the kubeconfig as a File, draft) with the browser's own multipart type. */
export async function lensRegister(req: { kubeconfig: string; name: string }): Promise<LensAnswer> {
  const fd = new FormData();
  fd.append('name', req.name);
  fd.append('description', '');
  fd.append('file', new File([req.kubeconfig], 'bootstrapped-kubeconfig.yaml', { type: 'text/plain' }));
  fd.append('draft', 'true');
  const res = await fetch('/api/cluster/clusters', { method: 'POST', credentials: 'include', headers: { Accept: 'application/json' }, body: fd });
  return { status: res.status, body: await res.json() };
}
