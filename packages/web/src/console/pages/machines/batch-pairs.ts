/** Parses pasted or uploaded MAC ↔ worker pairs for the batch bind (seed §16.9 manifest). */

export interface Pair {
  mac: string;
  worker_id: string;
  manufacturer?: string;
  product?: string;
  serial?: string;
  uuid?: string;
}

const COLUMNS = ['mac', 'worker_id', 'manufacturer', 'product', 'serial', 'uuid'] as const;

/**
 * One pair per line: `mac worker_id [serial]`, separated by commas, semicolons, tabs or spaces.
 * A first line naming columns (`mac,worker_id,serial,…`) sets the order instead. `#` starts a
 * comment; blank lines are skipped. Lines with fewer than two fields are reported, not guessed.
 */
export function parsePairs(text: string): { pairs: Pair[]; errors: string[] } {
  const lines = text.split(/\r?\n/);
  let order: string[] = ['mac', 'worker_id', 'serial'];
  const pairs: Pair[] = [];
  const errors: string[] = [];
  let first = true;
  lines.forEach((raw, i) => {
    const line = raw.replace(/#.*$/, '').trim();
    if (!line) return;
    const fields = line.split(/[,;\t]+|\s+/).map((f) => f.trim());
    if (first) {
      first = false;
      const lower = fields.map((f) => f.toLowerCase());
      if (lower.includes('mac') && lower.some((f) => f === 'worker_id' || f === 'worker')) {
        order = lower.map((f) => (f === 'worker' ? 'worker_id' : f));
        return;
      }
    }
    if (fields.length < 2 || !fields[0] || !fields[1]) {
      errors.push(`line ${i + 1}: expected “mac worker_id”, got ${JSON.stringify(raw.trim())}`);
      return;
    }
    const p: Record<string, string> = {};
    order.forEach((col, j) => {
      if ((COLUMNS as readonly string[]).includes(col) && fields[j]) p[col] = fields[j];
    });
    if (!p.mac || !p.worker_id) {
      errors.push(`line ${i + 1}: missing mac or worker_id`);
      return;
    }
    pairs.push(p as unknown as Pair);
  });
  return { pairs, errors };
}
