import { describe, expect, it } from 'vitest';
import { cell, details, printable, table } from './output';

describe('printable', () => {
  it('escapes C0 (but the line feed), DEL, C1, the bidi controls and U+2028/U+2029 as \\uXXXX; leaves other text as it is', () => {
    expect(printable('\x00\x07\x08\t\r\x1b[2J\x7f')).toBe('\\u0000\\u0007\\u0008\\u0009\\u000d\\u001b[2J\\u007f');
    expect(printable('\x80\x85\x9b\x9f')).toBe('\\u0080\\u0085\\u009b\\u009f');
    expect(printable('\u061c\u200e\u200f\u202a\u202b\u202c\u202d\u202e\u2066\u2067\u2068\u2069\u2028\u2029')).toBe(
      '\\u061c\\u200e\\u200f\\u202a\\u202b\\u202c\\u202d\\u202e\\u2066\\u2067\\u2068\\u2069\\u2028\\u2029',
    );
    expect(printable('line one\nzwölf ¥ — 名前 🙂 \u200d \xa0')).toBe('line one\nzwölf ¥ — 名前 🙂 \u200d \xa0');
  });

  it('keeps -o json valid JSON that decodes to the same text', () => {
    const value = { uuid: '\x1b]0;X\x07\x1b[2J', product: 'a\x9bb\u202Ec\u2028d\x7f' };
    const shown = printable(JSON.stringify(value, null, 2));
    expect(shown).not.toMatch(/[\x7f-\x9f\u202e\u2028]/);
    expect(JSON.parse(shown)).toEqual(value);
  });
});

describe('table and details', () => {
  it('escape each cell before measuring it, so a column after an escaped value stays aligned', () => {
    const rows = [{ a: 'x\x1b', b: 'one' }, { a: 'abc', b: 'two' }];
    expect(table(rows, [['a', (r) => r.a], ['b', (r) => r.b]])).toBe(['A        B', 'x\\u001b  one', 'abc      two', ''].join('\n'));
    expect(cell('a\nb\tc\rd')).toBe('a b c d');
    expect(cell(['x', null, ''])).toBe('x,-,-');
    expect(details({ 'k\x1b': 'v\u202e', n: null })).toBe('k\\u001b  v\\u202e\nn        -\n');
  });
});
