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
type Column = (typeof COLUMNS)[number];
const isColumn = (c: string): c is Column => (COLUMNS as readonly string[]).includes(c);

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
    const p: Partial<Record<Column, string>> = {};
    order.forEach((col, j) => {
      if (isColumn(col) && fields[j]) p[col] = fields[j];
    });
    const { mac, worker_id } = p;
    if (!mac || !worker_id) {
      errors.push(`line ${i + 1}: missing mac or worker_id`);
      return;
    }
    pairs.push({ ...p, mac, worker_id });
  });
  return { pairs, errors };
}
