import { type Kube, KubeApiError, type KubeObjectRef } from '../adapters/kube.adapter';
import { MANAGED_BY_LABEL, MANAGED_BY_VALUE } from './domain';

/** Namespace of the node-tuning DaemonSets (fs.inotify.max_user_instances). */
export const NODE_TUNING_NAMESPACE = 'lens-node-tuning';
/** Namespace of the image pre-pull DaemonSets. */
export const PREPULL_NAMESPACE = 'lens-images';
export const FIELD_MANAGER = 'ironlens';

const TOLERATE_ALL = [{ operator: 'Exists' }];
const SLEEP_FOREVER = ['sleep', '2147483647'];

export const inotifyDaemonSetName = (id: string) => `inotify-${id}`;
export const prepullDaemonSetName = (id: string) => `prepull-${id}`;

/**
 * A DaemonSet on every node (every taint tolerated) whose privileged init container sets
 * `fs.inotify.max_user_instances`; the value is also a pod-template annotation, so applying a
 * new value rolls the pods and sets it again.
 */
export function inotifyDaemonSet(id: string, value: number, image: string): KubeObjectRef {
  if (!Number.isInteger(value) || value < 1) throw new Error(`inotify value must be a positive integer, got ${value}`);
  const labels = { [MANAGED_BY_LABEL]: MANAGED_BY_VALUE, 'app.kubernetes.io/name': 'lens-inotify', 'ironlens.dev/cluster': id };
  return {
    apiVersion: 'apps/v1',
    kind: 'DaemonSet',
    metadata: { name: inotifyDaemonSetName(id), namespace: NODE_TUNING_NAMESPACE, labels },
    spec: {
      selector: { matchLabels: { 'app.kubernetes.io/name': 'lens-inotify', 'ironlens.dev/cluster': id } },
      template: {
        metadata: { labels, annotations: { 'ironlens.dev/inotify-max-user-instances': String(value) } },
        spec: {
          tolerations: TOLERATE_ALL,
          priorityClassName: 'system-node-critical',
          initContainers: [
            {
              name: 'sysctl',
              image,
              command: ['sysctl', '-w', `fs.inotify.max_user_instances=${value}`],
              securityContext: { privileged: true },
            },
          ],
          containers: [{ name: 'hold', image, command: SLEEP_FOREVER, resources: { requests: { cpu: '1m', memory: '4Mi' } } }],
        },
      },
    },
  };
}

/**
 * The pre-pull DaemonSet: one privileged container per image, each running the host's
 * `crictl pull` inside the host's namespaces (`nsenter -t 1`), then staying up; a container is
 * Ready once its file `/tmp/pulled` exists, i.e. once its pull is done. The image reaches the
 * container as an environment variable: the shell text is constant.
 */
export function prepullDaemonSet(id: string, images: string[], helperImage: string): KubeObjectRef {
  const labels = { [MANAGED_BY_LABEL]: MANAGED_BY_VALUE, 'app.kubernetes.io/name': 'lens-prepull', 'ironlens.dev/cluster': id };
  return {
    apiVersion: 'apps/v1',
    kind: 'DaemonSet',
    metadata: { name: prepullDaemonSetName(id), namespace: PREPULL_NAMESPACE, labels },
    spec: {
      selector: { matchLabels: { 'app.kubernetes.io/name': 'lens-prepull', 'ironlens.dev/cluster': id } },
      template: {
        metadata: { labels },
        spec: {
          hostPID: true,
          tolerations: TOLERATE_ALL,
          containers: images.map((image, i) => ({
            name: `pull-${i}`,
            image: helperImage,
            env: [{ name: 'IMAGE', value: image }],
            command: ['sh', '-c', 'nsenter -t 1 -m -u -i -n -p -- crictl pull "$IMAGE" && touch /tmp/pulled && exec sleep 2147483647'],
            readinessProbe: { exec: { command: ['cat', '/tmp/pulled'] }, periodSeconds: 5 },
            securityContext: { privileged: true },
            resources: { requests: { cpu: '1m', memory: '8Mi' } },
          })),
        },
      },
    },
  };
}

/** Creates a namespace labelled as ours when it is missing. */
export async function ensureNamespace(kube: Kube, name: string): Promise<'created' | 'existing'> {
  if (await kube.getNamespace(name)) return 'existing';
  try {
    await kube.createNamespace(name, { [MANAGED_BY_LABEL]: MANAGED_BY_VALUE });
    return 'created';
  } catch (e) {
    if (e instanceof KubeApiError && e.status === 409) return 'existing';
    throw e;
  }
}
