import { clipStrings, type OperationsLog } from '@ironlens/core';

/** One record a renderer refused: who it was for, and which of its fields are outside their grammar. */
export interface RenderRefusal {
  /** The record: a hostname, a MAC, or `mac,hostname`, cut to a few hundred characters. */
  subject: string;
  fields: string[];
}

export type RendererName = 'boot-vars' | 'dhcp-hosts';

/** Where a warning line goes. Default writes `[ironlens] warning: …` to stderr. */
export type WarnFn = (message: string) => void;

export const stderrWarn: WarnFn = (message) => {
  process.stderr.write(`[ironlens] warning: ${message}\n`);
};

/**
 * The renderers' last line of defence (issue 13): a value outside its grammar that got into
 * the store some other way (an old import, a hand-edited database) is never rendered. The
 * renderer skips the record; this logs it and counts it in one operations entry
 * (`render.refused`, with `renderer`, `skipped` and the records).
 */
export class RenderGuard {
  constructor(
    private readonly ops: OperationsLog,
    private readonly warn: WarnFn = stderrWarn,
  ) {}

  async refused(renderer: RendererName, records: RenderRefusal[]): Promise<void> {
    if (records.length === 0) return;
    const shown = clipStrings(records.slice(0, 20), 200);
    this.warn(`${renderer}: skipped ${records.length} record(s) with values outside their grammar: ${shown.map((r) => `${JSON.stringify(r.subject)} (${r.fields.join(', ')})`).join('; ')}`);
    await this.ops.append({ op: 'render.refused', status: 'skipped', renderer, skipped: records.length, records: shown }).catch((err: Error) => this.warn(`operations log: ${err.message}`));
  }
}
