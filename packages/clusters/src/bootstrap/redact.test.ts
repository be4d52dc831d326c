/**
 * Bootstrap log redaction (issue 18 finding 6, issue 19 defect 2): every form a password takes in
 * Ansible's and the shell's output, at every length, and overlapping secrets replaced whole.
 */
import { describe, expect, it } from 'vitest';
import { Redactor } from './redact';

const HARD = `pa"ss\\wo'rd$x`;

describe('bootstrap log redaction', () => {
  it('redacts a password JSON-escaped (as Ansible prints it), JSON-escaped twice, shell-quoted and URL-encoded', () => {
    const r = new Redactor([HARD]);
    const lines = [
      // Ansible's JSON result: the password with its quote and backslash escaped.
      'ok: [node-1] => {"ansible_become_pass": "pa\\"ss\\\\wo\'rd$x", "changed": false}',
      // A JSON string inside a JSON document (a module's stdout shown by -vvv).
      '"stdout": "{\\"pw\\": \\"pa\\\\\\"ss\\\\\\\\wo\'rd$x\\"}"',
      // shlex.quote, and the '\'' spelling.
      `ssh node-1 sudo -S <<< 'pa"ss\\wo'"'"'rd$x'`,
      `echo 'pa"ss\\wo'\\''rd$x' | sudo -S true`,
      // URL-encoded (encodeURIComponent, Python's quote, lower-case hex).
      'GET /login?pw=pa%22ss%5Cwo\'rd%24x',
      'GET /login?pw=pa%22ss%5Cwo%27rd%24x',
      'GET /login?pw=pa%22ss%5cwo%27rd%24x',
    ];
    for (const line of lines) {
      const out = r.line(line);
      expect(out, line).toContain('[redacted]');
      for (const piece of ['ss\\\\wo', 'ss\\wo', 'ss%5Cwo', 'ss%5cwo', 'rd$x', 'rd%24x']) expect(out, line).not.toContain(piece);
    }
    expect(r.line('ok: [node-1] => {"ansible_become_pass": "pa\\"ss\\\\wo\'rd$x", "changed": false}')).toBe('ok: [node-1] => {"ansible_become_pass": "[redacted]", "changed": false}');
  });

  it('redacts 1- and 2-character passwords where they stand as a word, in every form, and leaves other words alone', () => {
    const r = new Redactor(['q', 'z%']);
    expect(r.line('become password q accepted')).toBe('become password [redacted] accepted');
    expect(r.line('{"pw": "q"} quick')).toBe('{"pw": "[redacted]"} quick');
    expect(r.line("sudo -S <<< 'z%' done")).toBe("sudo -S <<< '[redacted]' done");
    expect(r.line('pw=z%25 and z%')).toBe('pw=[redacted] and [redacted]');
  });

  it('redacts every composition of the escapings on the path: a shell-quoted value inside JSON, inside JSON again, a repr, a URL-encoded JSON (issue 29, finding 14)', () => {
    const r = new Redactor([HARD]);
    const lines = [
      // The issue's line: Ansible's JSON of a value shell-quoted with the '\'' spelling.
      String.raw`ok: [node-1] => {"msg": "'pa\"ss\\wo'\\''rd$x'"}`,
      // shlex.quote's '"'"' spelling inside JSON.
      String.raw`ok: [node-1] => {"msg": "'pa\"ss\\wo'\"'\"'rd$x'"}`,
      // The same once more inside JSON (a module's stdout as JSON in Ansible's JSON).
      String.raw`"stdout": "{\"cmd\": \"echo 'pa\\\"ss\\\\wo'\\\\''rd$x'\"}"`,
      // Double-quoted for the shell, then JSON.
      String.raw`{"cmd": "sshpass -p \"pa\\\"ss\\\\wo'rd\\$x\" ssh node-1"}`,
      // Python's repr (a traceback's locals), and a repr inside JSON.
      String.raw`pw='pa"ss\\wo\'rd$x'`,
      String.raw`{"exception": "pw='pa\"ss\\\\wo\\'rd$x'"}`,
      // URL-encoded after JSON-escaping (a URL built from a JSON value).
      "GET /x?v=pa%5C%22ss%5C%5Cwo'rd%24x",
      // printf %q.
      String.raw`sudo -S <<< pa\"ss\\wo\'rd\$x`,
    ];
    for (const line of lines) {
      const out = r.line(line);
      expect(out, line).toContain('[redacted]');
      // No two neighbouring pieces of the password are left, whatever escaping stands between them.
      expect(out, line).not.toMatch(/pa[\\"'%0-9A-F]{1,12}ss|ss[\\"'%0-9A-F]{1,12}wo|wo[\\"'%0-9A-F]{1,12}rd|rd[\\"'$%0-9A-F]{1,12}x/);
    }
    expect(r.line(lines[0])).toBe(`ok: [node-1] => {"msg": "'[redacted]'"}`);
  });

  it('replaces overlapping secrets longest first: no tail of the longer one is left (fails without the order)', () => {
    // The shorter secret comes first and is a prefix of the longer one.
    const r = new Redactor(['hunter2', 'hunter2-and-the-rest-of-it']);
    const out = r.line('connecting with hunter2-and-the-rest-of-it, then hunter2');
    expect(out).toBe('connecting with [redacted], then [redacted]');
    // The same with a JSON-escaped form of the longer one containing the shorter.
    const r2 = new Redactor(['s3cr"et', 'x-s3cr"et-tail']);
    expect(r2.line('{"a": "x-s3cr\\"et-tail", "b": "s3cr\\"et"}')).toBe('{"a": "[redacted]", "b": "[redacted]"}');
  });
});
