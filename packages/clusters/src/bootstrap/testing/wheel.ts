import { execFileSync } from 'node:child_process';
import { createHash } from 'node:crypto';

/**
 * Builds a pure-Python wheel whose one script is an `ansible-playbook` that says where it runs
 * from and hands over to Debian's: installed by `pip install -r requirements.txt` from a local
 * file (no index), it proves the job prefers the virtualenv's `ansible-playbook`.
 */
export function buildAnsibleWrapperWheel(file: string, marker: string): void {
  const script = `#!python\nimport os, sys\nprint(${JSON.stringify(marker)}, flush=True)\nos.execv("/usr/bin/ansible-playbook", ["/usr/bin/ansible-playbook"] + sys.argv[1:])\n`;
  const files: Record<string, string> = {
    'standin_ansible/__init__.py': '',
    'standin_ansible-0.1.data/scripts/ansible-playbook': script,
    'standin_ansible-0.1.dist-info/METADATA': 'Metadata-Version: 2.1\nName: standin-ansible\nVersion: 0.1\n',
    'standin_ansible-0.1.dist-info/WHEEL': 'Wheel-Version: 1.0\nGenerator: ironlens-test\nRoot-Is-Purelib: true\nTag: py3-none-any\n',
  };
  const record = Object.entries(files).map(([path, text]) => {
    const digest = createHash('sha256').update(text).digest('base64url');
    return `${path},sha256=${digest},${Buffer.byteLength(text)}`;
  });
  files['standin_ansible-0.1.dist-info/RECORD'] = `${[...record, 'standin_ansible-0.1.dist-info/RECORD,,'].join('\n')}\n`;
  // Mode 0755 in the zip entries: pip keeps the executable bit of a script from the archive.
  const py =
    'import json, sys, zipfile\nfiles = json.load(sys.stdin)\nwith zipfile.ZipFile(sys.argv[1], "w") as z:\n    for k, v in files.items():\n        i = zipfile.ZipInfo(k)\n        i.external_attr = 0o100755 << 16\n        z.writestr(i, v)\n';
  execFileSync('python3', ['-c', py, file], { input: JSON.stringify(files) });
}
