/** Files the test's control directory uses to steer the stand-in playbook. */
export interface StandInControl {
  /** While this file exists, the playbook waits (phase `running`) before touching any node. */
  holdFile: string;
  /** When this file exists, the playbook stops after its first round of ssh and waits for `swappedFile`. */
  armedFile: string;
  swappedFile: string;
  /** What the playbook writes to `artifacts/admin.conf`. */
  kubeconfig: string;
  /** The file (outside the repository) the playbook copies it from, so the checkout holds no credential. */
  kubeconfigFile: string;
}

/**
 * A stand-in for the Kubespray repository: Kubespray's `ansible.cfg` settings that turn host-key
 * checking off (`host_key_checking=False`, `UserKnownHostsFile=/dev/null` in `ssh_args`), an empty
 * `requirements.txt`, and a `cluster.yml` with Kubespray's inventory contract: it asserts the
 * groups and `kubeconfig_localhost`, reaches every node over ssh with `become`, and writes
 * `<inventory dir>/artifacts/admin.conf` as `kubeconfig_localhost: true` does.
 */
export function kubesprayStandInFiles(c: StandInControl): Record<string, string> {
  const q = (s: string) => JSON.stringify(s);
  return {
    'ansible.cfg': `# As Kubespray ships it: checking off.
[ssh_connection]
pipelining=True
ssh_args = -o ControlMaster=auto -o ControlPersist=30m -o ConnectionAttempts=100 -o UserKnownHostsFile=/dev/null
[defaults]
force_valid_group_names = ignore
host_key_checking=False
gathering = smart
stdout_callback = default
display_skipped_hosts = no
deprecation_warnings=False
inventory_ignore_extensions = ~, .orig, .bak, .ini, .cfg, .retry, .pyc, .pyo, .creds, .gpg
`,
    'requirements.txt': '',
    'README.md': 'Stand-in for kubernetes-sigs/kubespray (tests only).\n',
    'cluster.yml': `---
- name: Check the inventory contract
  hosts: localhost
  connection: local
  become: false
  gather_facts: false
  tasks:
    - name: Groups as Kubespray expects them
      ansible.builtin.assert:
        that:
          - groups['kube_control_plane'] | length > 0
          - groups['etcd'] | sort == groups['kube_control_plane'] | sort
          - groups['k8s_cluster'] | sort == (groups['kube_control_plane'] + groups['kube_node']) | unique | sort
          - hostvars[groups['kube_control_plane'][0]]['kubeconfig_localhost'] | bool
    - name: Show the inventory
      ansible.builtin.debug:
        msg: "INVENTORY cp={{ groups['kube_control_plane'] | join(',') }} etcd={{ groups['etcd'] | join(',') }} node={{ groups['kube_node'] | join(',') }} proxy={{ hostvars[groups['kube_control_plane'][0]]['http_proxy'] | default('unset') }}"
    # Kubespray's display_skipped_hosts=no delays a task's banner until its first result, so
    # each wait announces itself with a debug line first.
    - name: Announce the hold
      ansible.builtin.debug:
        msg: "HOLDING until the test lets go"
      when: '${q(c.holdFile)} is exists'
    - name: Hold while the test asks
      ansible.builtin.wait_for:
        path: ${q(c.holdFile)}
        state: absent
        timeout: 600

- name: Reach every node
  hosts: k8s_cluster
  gather_facts: false
  tasks:
    - name: First contact
      ansible.builtin.raw: echo "reached $(hostname) as $(id -un)"
      register: first_contact
    - name: Show the first contact
      ansible.builtin.debug:
        msg: "{{ first_contact.stdout | trim }}"
    - name: A task that prints the sudo password (the log must not)
      ansible.builtin.debug:
        msg: "sudo password is {{ ansible_become_password | default('unset') }}"
    # Issue 29, finding 14: the password shell-quoted inside Ansible's JSON, in both of the
    # shell's spellings of a quote (shlex.quote's, and the other one).
    - name: A task that prints the sudo password shell-quoted (the log must not)
      ansible.builtin.debug:
        msg: "{{ ansible_become_password | default('unset') | quote }}"
    - name: A task that prints the sudo password shell-quoted the other way (the log must not)
      ansible.builtin.debug:
        msg: '{{ "''" ~ (ansible_become_password | default("unset") | replace("''", "''\\''''")) ~ "''" }}'

- name: Key swap point
  hosts: localhost
  connection: local
  become: false
  gather_facts: false
  tasks:
    - name: Announce the swap point
      ansible.builtin.debug:
        msg: "WAITING for the host key swap"
      when: '${q(c.armedFile)} is exists'
    - name: Wait for the host key swap
      ansible.builtin.wait_for:
        path: ${q(c.swappedFile)}
        timeout: 600
      when: '${q(c.armedFile)} is exists'

- name: Reach every node again
  hosts: k8s_cluster
  gather_facts: false
  tasks:
    - name: Second contact
      ansible.builtin.raw: echo "again $(hostname)"
      register: second_contact
    - name: Show the second contact
      ansible.builtin.debug:
        msg: "{{ second_contact.stdout | trim }}"

- name: Write the admin kubeconfig as kubeconfig_localhost does
  hosts: kube_control_plane[0]
  gather_facts: false
  become: false
  tasks:
    - name: Copy admin.conf to the inventory's artifacts
      ansible.builtin.copy:
        dest: "{{ inventory_dir }}/artifacts/admin.conf"
        src: ${q(c.kubeconfigFile)}
        mode: "0600"
      delegate_to: localhost
`,
  };
}
