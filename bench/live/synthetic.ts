// bench-helper
// Synthetic cluster objects shaped as the API server returns them: full pods with managedFields, env, probes,
// volume mounts, projected service-account volumes, status conditions and container statuses; nodes with images,
// conditions and addresses. Deterministic for a given index, so runs are comparable.

const ZONES = ['zone-a', 'zone-b', 'zone-c'];
const T0 = Date.parse('2026-03-01T08:00:00Z');
const ts = (offsetS: number) => new Date(T0 + offsetS * 1000).toISOString().replace(/\.\d{3}Z$/, 'Z');
const hex = (n: number, len: number) => (n * 2654435761).toString(16).padStart(len, '0').slice(-len);
const uid = (n: number) => `${hex(n, 8)}-${hex(n + 1, 4)}-4${hex(n + 2, 3)}-8${hex(n + 3, 3)}-${hex(n + 4, 12)}`;

export function syntheticNode(i: number): Record<string, unknown> {
  const name = `node-${String(i).padStart(5, '0')}`;
  const zone = ZONES[i % ZONES.length];
  return {
    apiVersion: 'v1',
    kind: 'Node',
    metadata: {
      name,
      uid: uid(1_000_000 + i),
      creationTimestamp: ts(i),
      labels: {
        'beta.kubernetes.io/arch': 'amd64',
        'beta.kubernetes.io/os': 'linux',
        'kubernetes.io/arch': 'amd64',
        'kubernetes.io/hostname': name,
        'kubernetes.io/os': 'linux',
        'node.kubernetes.io/instance-type': 'm6i.2xlarge',
        'topology.kubernetes.io/region': 'eu-west-1',
        'topology.kubernetes.io/zone': zone,
        'topology.ebs.csi.aws.com/zone': zone,
      },
      annotations: {
        'csi.volume.kubernetes.io/nodeid': `{"ebs.csi.aws.com":"i-${hex(i, 17)}"}`,
        'node.alpha.kubernetes.io/ttl': '0',
        'volumes.kubernetes.io/controller-managed-attach-detach': 'true',
      },
    },
    spec: { providerID: `aws:///${zone}/i-${hex(i, 17)}` },
    status: {
      capacity: { cpu: '8', 'ephemeral-storage': '104845292Ki', memory: '32386544Ki', pods: '110' },
      allocatable: { cpu: '7910m', 'ephemeral-storage': '95551679124', memory: '31369712Ki', pods: '110' },
      conditions: ['MemoryPressure', 'DiskPressure', 'PIDPressure', 'Ready'].map((type) => ({
        type,
        status: type === 'Ready' ? 'True' : 'False',
        lastHeartbeatTime: ts(86_400),
        lastTransitionTime: ts(i),
        reason: type === 'Ready' ? 'KubeletReady' : `KubeletHasNo${type}`,
        message: type === 'Ready' ? 'kubelet is posting ready status' : `kubelet has no ${type}`,
      })),
      addresses: [
        { type: 'InternalIP', address: `10.0.${(i >> 8) & 255}.${i & 255}` },
        { type: 'Hostname', address: name },
      ],
      nodeInfo: {
        architecture: 'amd64',
        containerRuntimeVersion: 'containerd://1.7.22',
        kernelVersion: '6.1.112-124.190.amzn2023.x86_64',
        kubeProxyVersion: 'v1.33.1',
        kubeletVersion: 'v1.33.1',
        operatingSystem: 'linux',
        osImage: 'Amazon Linux 2023',
      },
      images: Array.from({ length: 8 }, (_, k) => ({
        names: [
          `registry.example.com/team/app-${k}@sha256:${hex(k, 16).repeat(4)}`,
          `registry.example.com/team/app-${k}:v1.${k}`,
        ],
        sizeBytes: 50_000_000 + k * 1_000_000,
      })),
    },
  };
}

export function syntheticPod(
  i: number,
  nodeName: string | undefined,
  opts: { claim?: boolean } = {},
): Record<string, unknown> {
  const app = `app-${i % 200}`;
  const hash = hex(i % 200, 10);
  const name = `${app}-${hash}-${hex(i, 5)}`;
  const namespace = `team-${i % 20}`;
  const env = Array.from({ length: 10 }, (_, k) =>
    k < 7
      ? { name: `SETTING_${k}`, value: `value-${k}-${i % 50}` }
      : { name: `POD_FIELD_${k}`, valueFrom: { fieldRef: { apiVersion: 'v1', fieldPath: 'metadata.name' } } },
  );
  const probe = (path: string) => ({
    httpGet: { path, port: 8080, scheme: 'HTTP' },
    initialDelaySeconds: 10,
    periodSeconds: 10,
    timeoutSeconds: 1,
    successThreshold: 1,
    failureThreshold: 3,
  });
  const volumes: Record<string, unknown>[] = [
    { name: 'config', configMap: { name: `${app}-config`, defaultMode: 420 } },
    { name: 'tmp', emptyDir: {} },
    {
      name: `kube-api-access-${hex(i, 5)}`,
      projected: {
        defaultMode: 420,
        sources: [
          { serviceAccountToken: { expirationSeconds: 3607, path: 'token' } },
          { configMap: { name: 'kube-root-ca.crt', items: [{ key: 'ca.crt', path: 'ca.crt' }] } },
          {
            downwardAPI: {
              items: [{ path: 'namespace', fieldRef: { apiVersion: 'v1', fieldPath: 'metadata.namespace' } }],
            },
          },
        ],
      },
    },
  ];
  if (opts.claim) volumes.push({ name: 'data', persistentVolumeClaim: { claimName: `data-${name}` } });
  const started = ts(3600 + (i % 86_400));
  return {
    apiVersion: 'v1',
    kind: 'Pod',
    metadata: {
      name,
      generateName: `${app}-${hash}-`,
      namespace,
      uid: uid(i),
      resourceVersion: String(100_000 + i),
      creationTimestamp: ts(i % 86_400),
      labels: { app, 'pod-template-hash': hash, 'app.kubernetes.io/part-of': `system-${i % 10}` },
      annotations: { 'kubectl.kubernetes.io/restartedAt': ts(0), 'prometheus.io/scrape': 'true' },
      ownerReferences: [
        {
          apiVersion: 'apps/v1',
          kind: 'ReplicaSet',
          name: `${app}-${hash}`,
          uid: uid(500_000 + (i % 200)),
          controller: true,
          blockOwnerDeletion: true,
        },
      ],
      managedFields: [
        {
          manager: 'kube-controller-manager',
          operation: 'Update',
          apiVersion: 'v1',
          time: ts(i % 86_400),
          fieldsType: 'FieldsV1',
          fieldsV1: {
            'f:metadata': {
              'f:generateName': {},
              'f:labels': { '.': {}, 'f:app': {}, 'f:pod-template-hash': {} },
              'f:ownerReferences': { '.': {}, [`k:{"uid":"${uid(500_000 + (i % 200))}"}`]: {} },
            },
            'f:spec': {
              'f:containers': {
                'k:{"name":"app"}': {
                  '.': {},
                  'f:env': Object.fromEntries(env.map((e) => [`k:{"name":"${e.name}"}`, { '.': {}, 'f:name': {} }])),
                  'f:image': {},
                  'f:livenessProbe': { '.': {}, 'f:httpGet': { '.': {}, 'f:path': {}, 'f:port': {} } },
                  'f:name': {},
                  'f:ports': { '.': {}, 'k:{"containerPort":8080,"protocol":"TCP"}': { '.': {} } },
                  'f:resources': { '.': {}, 'f:limits': {}, 'f:requests': {} },
                },
              },
              'f:volumes': { '.': {}, 'k:{"name":"config"}': { '.': {} }, 'k:{"name":"tmp"}': { '.': {} } },
            },
          },
        },
        {
          manager: 'kubelet',
          operation: 'Update',
          apiVersion: 'v1',
          time: started,
          fieldsType: 'FieldsV1',
          subresource: 'status',
          fieldsV1: {
            'f:status': {
              'f:conditions': {
                'k:{"type":"ContainersReady"}': { '.': {}, 'f:status': {}, 'f:type': {} },
                'k:{"type":"Initialized"}': { '.': {}, 'f:status': {}, 'f:type': {} },
                'k:{"type":"Ready"}': { '.': {}, 'f:status': {}, 'f:type': {} },
              },
              'f:containerStatuses': {},
              'f:hostIP': {},
              'f:phase': {},
              'f:podIP': {},
              'f:podIPs': { '.': {}, 'k:{"ip":"10.1.2.3"}': { '.': {}, 'f:ip': {} } },
              'f:startTime': {},
            },
          },
        },
      ],
    },
    spec: {
      volumes,
      containers: [
        {
          name: 'app',
          image: `registry.example.com/team/${app}:v1.${i % 7}`,
          ports: [
            { name: 'http', containerPort: 8080, protocol: 'TCP' },
            { name: 'metrics', containerPort: 9090, protocol: 'TCP' },
          ],
          env,
          resources: {
            limits: { cpu: '1', memory: '512Mi' },
            requests: { cpu: `${100 + (i % 5) * 50}m`, memory: '256Mi' },
          },
          volumeMounts: [
            { name: 'config', mountPath: '/etc/app' },
            { name: 'tmp', mountPath: '/tmp' },
            {
              name: `kube-api-access-${hex(i, 5)}`,
              readOnly: true,
              mountPath: '/var/run/secrets/kubernetes.io/serviceaccount',
            },
          ],
          livenessProbe: probe('/healthz'),
          readinessProbe: probe('/ready'),
          terminationMessagePath: '/dev/termination-log',
          terminationMessagePolicy: 'File',
          imagePullPolicy: 'IfNotPresent',
          securityContext: { allowPrivilegeEscalation: false, runAsNonRoot: true, capabilities: { drop: ['ALL'] } },
        },
      ],
      restartPolicy: 'Always',
      terminationGracePeriodSeconds: 30,
      dnsPolicy: 'ClusterFirst',
      serviceAccountName: 'default',
      serviceAccount: 'default',
      ...(nodeName ? { nodeName } : {}),
      securityContext: { runAsUser: 1000, fsGroup: 2000 },
      schedulerName: 'default-scheduler',
      tolerations: [
        { key: 'node.kubernetes.io/not-ready', operator: 'Exists', effect: 'NoExecute', tolerationSeconds: 300 },
        { key: 'node.kubernetes.io/unreachable', operator: 'Exists', effect: 'NoExecute', tolerationSeconds: 300 },
      ],
      priority: 0,
      enableServiceLinks: true,
      preemptionPolicy: 'PreemptLowerPriority',
    },
    status: nodeName
      ? {
          phase: 'Running',
          conditions: ['PodReadyToStartContainers', 'Initialized', 'Ready', 'ContainersReady', 'PodScheduled'].map(
            (type) => ({ type, status: 'True', lastProbeTime: null, lastTransitionTime: started }),
          ),
          hostIP: `10.0.${i & 255}.1`,
          hostIPs: [{ ip: `10.0.${i & 255}.1` }],
          podIP: `10.1.${(i >> 8) & 255}.${i & 255}`,
          podIPs: [{ ip: `10.1.${(i >> 8) & 255}.${i & 255}` }],
          startTime: started,
          containerStatuses: [
            {
              name: 'app',
              state: { running: { startedAt: started } },
              lastState: {},
              ready: true,
              restartCount: i % 3,
              image: `registry.example.com/team/${app}:v1.${i % 7}`,
              imageID: `registry.example.com/team/${app}@sha256:${hex(i % 200, 16).repeat(4)}`,
              containerID: `containerd://${hex(i, 16).repeat(4)}`,
              started: true,
            },
          ],
          qosClass: 'Burstable',
        }
      : {
          phase: 'Pending',
          conditions: [{ type: 'PodScheduled', status: 'False', lastProbeTime: null, lastTransitionTime: started }],
          qosClass: 'Burstable',
        },
  };
}
