// The chart's extender ClusterRole as a real cluster holds it (startSchedulerCluster installs it), edited the way an
// administrator would: a permission taken out, then the chart's rules put back, each change awaited until the API
// server's RBAC authorizer (which follows roles through a watch) answers accordingly for the extender's user.
import assert from 'node:assert/strict';
import { waitFor } from '../cluster/kube/helpers.ts';
import type { KubeObject } from '../components/kube-api.ts';
import type { PolicyRule } from '../helpers/chart.ts';
import type { SchedulerCluster } from './scheduler-cluster.ts';

export type Role = KubeObject & { rules: PolicyRule[] };

/** A verb on a resource of an API group ('' for the core group). */
export interface Grant {
  verb: string;
  group: string;
  resource: string;
}

type Binding = KubeObject & {
  roleRef: { name: string };
  subjects?: { kind: string; name: string; namespace?: string }[];
};

/** The chart's ClusterRole the cluster's extender ServiceAccount is bound to. */
export async function extenderRole(cluster: SchedulerCluster): Promise<Role> {
  const [, , namespace, name] = cluster.extenderUser.split(':');
  const bindings = await cluster.api.list<Binding>('rbac.authorization.k8s.io/v1/ClusterRoleBinding', null);
  const binding = bindings.find(
    (b) =>
      b.roleRef.name.endsWith('-extender') &&
      b.subjects?.some((s) => s.kind === 'ServiceAccount' && s.name === name && s.namespace === namespace),
  );
  assert.ok(binding, "the extender's ServiceAccount is bound to the chart's extender ClusterRole");
  const role = await cluster.api.get<Role>('rbac.authorization.k8s.io/v1/ClusterRole', binding.roleRef.name);
  assert.ok(role, "the chart's extender ClusterRole is installed");
  return role;
}

/** `rules` without the grants, every other one kept (a rule naming more resources or verbs is split). */
export function without(rules: PolicyRule[], grants: Grant[]): PolicyRule[] {
  return grants.reduce(
    (left, { verb, group, resource }) =>
      left.flatMap((r) => {
        if (!r.apiGroups?.includes(group) || !r.resources?.includes(resource) || !r.verbs.includes(verb)) return [r];
        const others = r.resources.filter((x) => x !== resource);
        const verbs = r.verbs.filter((v) => v !== verb);
        return [
          ...(others.length ? [{ ...r, resources: others }] : []),
          ...(verbs.length ? [{ ...r, resources: [resource], verbs }] : []),
        ];
      }),
    rules,
  );
}

/** What the API server's authorizer answers now for the extender's ServiceAccount (a SubjectAccessReview). */
export async function extenderMay(cluster: SchedulerCluster, { verb, group, resource }: Grant): Promise<boolean> {
  const [, , namespace] = cluster.extenderUser.split(':');
  const review = await cluster.api.client.request<{ status: { allowed: boolean } }>(
    'POST',
    '/apis/authorization.k8s.io/v1/subjectaccessreviews',
    {
      body: {
        apiVersion: 'authorization.k8s.io/v1',
        kind: 'SubjectAccessReview',
        spec: {
          user: cluster.extenderUser,
          groups: ['system:serviceaccounts', `system:serviceaccounts:${namespace}`, 'system:authenticated'],
          resourceAttributes: { verb, group, resource },
        },
      },
    },
  );
  return review.status.allowed;
}

/** Sets the role's rules and waits until the authorizer answers `allowed` for each of `grants`. */
export async function setRules(
  cluster: SchedulerCluster,
  role: Role,
  rules: PolicyRule[],
  grants: Grant[],
  allowed: boolean,
): Promise<void> {
  await cluster.api.patch(role, { rules });
  for (const g of grants) {
    await waitFor(
      `${g.verb} ${g.resource} ${allowed ? 'allowed' : 'denied'}`,
      async () => (await extenderMay(cluster, g)) === allowed,
    );
  }
}

/**
 * Runs `body` with the grants taken out of the extender's ClusterRole; the chart's rules are back afterwards (or
 * when `body` calls restore).
 */
export async function withoutGrants(
  cluster: SchedulerCluster,
  grants: Grant[],
  body: (restore: () => Promise<void>) => Promise<void>,
): Promise<void> {
  const role = await extenderRole(cluster);
  await setRules(cluster, role, without(role.rules, grants), grants, false);
  let restored = false;
  const restore = async () => {
    if (restored) return;
    restored = true;
    await setRules(cluster, role, role.rules, grants, true);
  };
  try {
    await body(restore);
  } finally {
    await restore();
  }
}
