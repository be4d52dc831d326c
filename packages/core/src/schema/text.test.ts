import { describe, expect, it } from 'vitest';
import { isSafeText, replaceUnsafeText, SAFE_TEXT_PATTERN, unsafeCharacter, unsafeTextReason } from './text';

/** The one definition of text that may enter (issue 29, finding 8), as literal tables. */
describe('safe text', () => {
  const unsafe: Array<[string, string]> = [
    ['\u0000', 'U+0000'],
    ['\u0007', 'U+0007'],
    ['\t', 'U+0009'],
    ['\n', 'U+000A'],
    ['\r', 'U+000D'],
    ['\u001b]0;X\u0007', 'U+001B'],
    ['\u001f', 'U+001F'],
    ['\u007f', 'U+007F'],
    ['\u0080', 'U+0080'],
    ['\u0085', 'U+0085'],
    ['\u009b2J', 'U+009B'],
    ['\u009f', 'U+009F'],
    ['\u061c', 'U+061C'],
    ['\u200e', 'U+200E'],
    ['\u200f', 'U+200F'],
    ['a\u2028b', 'U+2028'],
    ['\u2029', 'U+2029'],
    ['\u202a', 'U+202A'],
    ['\u202b', 'U+202B'],
    ['\u202c', 'U+202C'],
    ['\u202d', 'U+202D'],
    ['invoice\u202Efdp.exe', 'U+202E'],
    ['\u2066', 'U+2066'],
    ['\u2067', 'U+2067'],
    ['\u2068', 'U+2068'],
    ['\u2069', 'U+2069'],
  ];
  const safe = ['', 'Supermicro X11DPi-N(T)', 'ÄÖÜ éè ñ', '中文 日本語', 'NBSP\u00a0ok', 'ZWJ 👩\u200d💻', '\u00a1 \u2030 \u2027 \u202f \u2070', 'a+b=c; d\\e "f" <g>'];

  it('refuses C0, DEL, C1, the line and paragraph separators and the bidirectional formatting characters, naming the first', () => {
    for (const [text, code] of unsafe) {
      expect(isSafeText(text), code).toBe(false);
      expect(unsafeCharacter(text)).toBe(code);
      expect(unsafeTextReason(text)).toBe(`has ${code}, a control or bidirectional formatting character`);
      expect(new RegExp(SAFE_TEXT_PATTERN, 'u').test(text), code).toBe(false);
    }
  });

  it('accepts every other character, the neighbours of those ranges included', () => {
    for (const text of safe) {
      expect(isSafeText(text), text).toBe(true);
      expect(unsafeTextReason(text)).toBeNull();
      expect(new RegExp(SAFE_TEXT_PATTERN, 'u').test(text), text).toBe(true);
    }
    expect(unsafeTextReason(42)).toBeNull();
  });

  it('replaces them (text an outside system wrote, kept for a message)', () => {
    expect(replaceUnsafeText('\u001b[2Jerr\u009b\u202eor\u2028x')).toBe(' [2Jerr  or x');
  });
});
