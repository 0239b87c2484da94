#!/usr/bin/env bash
# Validates deploy/ without a cluster, without Docker and without an envoy
# binary, and exits non-zero on any error, printing one line per document:
#
#  - every YAML document under deploy/kubernetes/ (training/'s templates as
#    tools/train_cluster.sh renders them) against the Kubernetes 1.33 API
#    schema (npm kubernetes-models) or the Prometheus Operator's
#    (@kubernetes-models/prometheus-operator): types, required fields, enum
#    values, and unknown fields (a misspelled `replica:`), which the
#    schemas' own validate() lets through: every object is read through a
#    Proxy, and a key the schema's validator never looked at is unknown;
#  - what the API server and the admission controller would refuse that a
#    schema does not say: names and labels, selectors that match, the
#    restricted Pod Security Standard on every pod template, Job fields
#    that need restartPolicy Never;
#  - the ConfigMap's gmmscored.textproto against
#    proto/gmmscore/v1/server_config.proto (protoc, the daemon's parser);
#  - what the files promise each other: the Deployment's --config is the
#    mounted file, preStop + drain_grace_s + drain_timeout_s <
#    terminationGracePeriodSeconds, the Service/PDB/PodMonitor select the
#    pods and name their ports, the HPA's metrics are served by the adapter
#    rules and exported by server/, Envoy's upstream is the Service and its
#    circuit breakers hold maxReplicas x max_streams;
#  - deploy/envoy/envoy.yaml parsed into envoy.config.bootstrap.v3.Bootstrap
#    with Envoy's API .proto files (from npm @grpc/grpc-js-xds) by
#    protobuf's JSON parser, as Envoy loads YAML: unknown fields, types, enum
#    names, every typed_config's Any type; deprecated fields refused. Not
#    checked: Envoy's value rules (protoc-gen-validate annotations: ranges,
#    required oneofs) and whatever only a running envoy finds;
#  - tools/train_cluster.sh against a stand-in kubectl that runs each
#    applied Job here (with the built gmmscore): two iterations must give the
#    model --local gives, byte for byte, and a failing shard must fail the
#    driver (skipped without build/client/cli/gmmscore, or with --no_driver).
#
#   tools/validate_deploy.sh [--no_driver]       # all of the above
#   tools/validate_deploy.sh FILE.yaml...        # only these (Kubernetes manifests, or
#                                                #   Envoy bootstraps: files with static_resources)
#
# Installs what it needs: Debian's nodejs, npm, protobuf-compiler,
# python3-protobuf, python3-yaml (apt-get, when missing), and the npm
# packages into .cache-validate/ of the repository (npm install --prefix).
set -euo pipefail
repo=$(cd "$(dirname "$0")/.." && pwd)
cd "$repo"
cache="$repo/.cache-validate"
driver=1
files=()
envoy_files=()
for arg in "$@"; do
  case $arg in
    --no_driver) driver=0 ;;
    -h|--help) sed -n '2,/^set -euo/p' "$0" | sed '$d; s/^# \{0,1\}//'; exit 0 ;;
    -*) echo "validate_deploy: unknown option $arg" >&2; exit 2 ;;
    *) [ -f "$arg" ] || { echo "validate_deploy: no file $arg" >&2; exit 2; }
       if grep -q '^static_resources:' "$arg"; then envoy_files+=("$(realpath "$arg")")
       else files+=("$(realpath "$arg")"); fi ;;
  esac
done
all=1
[ $(( ${#files[@]} + ${#envoy_files[@]} )) -eq 0 ] || all=0

# ---- tools ----
need=()
command -v node > /dev/null || need+=(nodejs)
command -v npm > /dev/null || need+=(npm)
command -v protoc > /dev/null || need+=(protobuf-compiler)
/usr/bin/python3 -c 'import google.protobuf, yaml' 2> /dev/null || need+=(python3-protobuf python3-yaml)
if [ ${#need[@]} -gt 0 ]; then
  echo "validate_deploy: installing ${need[*]}"
  sudo_cmd=""
  [ "$(id -u)" -eq 0 ] || sudo_cmd=sudo
  $sudo_cmd env DEBIAN_FRONTEND=noninteractive apt-get update -qq
  $sudo_cmd env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends "${need[@]}"
fi
# Versions that run on Node 14 and later (Debian 12's is 18); kubernetes-models
# 4.5.1 carries the Kubernetes 1.33 OpenAPI schema.
npm_packages=(kubernetes-models@4.5.1 @kubernetes-models/prometheus-operator@4.4.4 yaml@2.8.1)
envoy_protos_package=@grpc/grpc-js-xds@1.14.1
stamp="${npm_packages[*]} $envoy_protos_package"
if [ "$(cat "$cache/.installed" 2> /dev/null)" != "$stamp" ]; then
  echo "validate_deploy: npm install --prefix .cache-validate ${npm_packages[*]}"
  rm -rf "$cache"
  mkdir -p "$cache"
  npm install --prefix "$cache" --no-audit --no-fund --ignore-scripts --loglevel=error "${npm_packages[@]}" > /dev/null
  # Envoy's API protos (data-plane-api, with xds, googleapis and
  # protoc-gen-validate), as gRPC's xDS client ships them: the package
  # itself is not installed, only its proto files are taken.
  (cd "$cache" && npm pack --silent "$envoy_protos_package" > pack.txt && mkdir envoy-api &&
    tar xzf "$(tail -n 1 pack.txt)" -C envoy-api package/deps && rm "$(tail -n 1 pack.txt)" pack.txt)
  # Its protoc-gen-validate is older than its Envoy protos: declare the one
  # rule they use that it lacks (annotations only; nothing enforces them).
  sed -i '/^message StringRules {/a\    optional bool ignore_empty = 26;' \
    "$cache/envoy-api/package/deps/protoc-gen-validate/validate/validate.proto"
  echo "$stamp" > "$cache/.installed"
fi
deps="$cache/envoy-api/package/deps"
if [ ! -s "$cache/envoy.pb" ]; then
  protoc -I "$deps/envoy-api" -I "$deps/xds" -I "$deps/googleapis" -I "$deps/protoc-gen-validate" \
    -I /usr/include --include_imports --descriptor_set_out="$cache/envoy.pb" \
    envoy/config/bootstrap/v3/bootstrap.proto \
    envoy/extensions/filters/network/http_connection_manager/v3/http_connection_manager.proto \
    envoy/extensions/filters/http/router/v3/router.proto \
    envoy/extensions/upstreams/http/v3/http_protocol_options.proto \
    envoy/extensions/transport_sockets/tls/v3/tls.proto
fi

work=$(mktemp -d)
# VALIDATE_KEEP=1: leave the scratch directory (rendered Jobs, the driver's logs) and name it.
if [ "${VALIDATE_KEEP:-0}" = 1 ]; then trap 'echo "validate_deploy: kept $work"' EXIT; else trap 'rm -rf "$work"' EXIT; fi
status=0

# ---- Kubernetes manifests ----
if [ $all -eq 1 ]; then
  # training/'s templates as the driver renders them (iteration 0).
  tools/train_cluster.sh --print_manifests "$work/training" --init /data/exp/ubm/0.dubm \
    --feats /data/train/feats.scp --exp /data/exp/ubm --shards 8 --parallelism 4 --mix_up 64,128 \
    --alignments 'ark:/data/exp/ali/ali.JOB.ark' --image registry.example.com/gmmscore/gmmscored:1.0 > /dev/null
  mapfile -t files < <(find deploy/kubernetes -name '*.yaml' ! -name '*-job.yaml' | sort)
  files+=("$work/training/acc-stats-job.yaml" "$work/training/est-job.yaml")
  envoy_files=("$repo/deploy/envoy/envoy.yaml")
fi

cat > "$cache/validate_k8s.js" <<'JS'
'use strict';
// Usage: node validate_k8s.js REPO ALL(0|1) FILE... ; prints ok/FAIL lines, exits 1 on a failure.
const fs = require('fs');
const path = require('path');
const cp = require('child_process');
const YAML = require('yaml');

const [repo, allArg, ...files] = process.argv.slice(2);
const all = allArg === '1';
let failures = 0;
const ok = (where, what) => console.log(`ok    ${where}  ${what}`);
const fail = (where, what) => { failures++; console.log(`FAIL  ${where}  ${what}`); };
const rendered = process.env.RENDERED_DIR;  // training/'s templates, rendered there
const show = (f) => {
  if (rendered && f.startsWith(rendered + '/')) return `deploy/kubernetes/training/${path.basename(f)} (rendered)`;
  return f.startsWith(repo + '/') ? f.slice(repo.length + 1) : f;
};

// ---- parsing: YAML 1.1 as Kubernetes reads it (0440 is octal), duplicate keys refused ----
const docs = [];
for (const file of files) {
  const lc = new YAML.LineCounter();
  let parsed;
  try {
    parsed = YAML.parseAllDocuments(fs.readFileSync(file, 'utf8'), { version: '1.1', lineCounter: lc });
  } catch (e) { fail(show(file), `cannot read: ${e.message}`); continue; }
  if (!Array.isArray(parsed)) parsed = [parsed];
  parsed.forEach((doc, i) => {
    const where = `${show(file)}#${i + 1}`;
    if (doc.errors.length) { fail(where, `YAML: ${doc.errors.map((e) => e.message.split('\n')[0]).join('; ')}`); return; }
    const obj = doc.toJS({ maxAliasCount: 100 });
    if (obj === null || obj === undefined) return;  // an empty document
    docs.push({ file, where, doc, lc, obj, checks: [], errors: [] });
  });
}
const lineOf = (d, segs) => {
  for (let n = segs.length; n >= 0; n--) {
    const node = d.doc.getIn(segs.slice(0, n), true);
    if (node && node.range) return d.lc.linePos(node.range[0]).line;
  }
  return 0;
};
const err = (d, segs, msg) => d.errors.push(`line ${lineOf(d, segs)}: ${segs.length ? segs.join('.') + ': ' : ''}${msg}`);

// ---- schemas ----
const pkgVersion = (p) => JSON.parse(fs.readFileSync(path.join(__dirname, 'node_modules', p, 'package.json'), 'utf8')).version;
const schemaPackages = ['kubernetes-models', '@kubernetes-models/prometheus-operator'];
function modelClass(apiVersion, kind) {
  for (const p of schemaPackages) {
    let mod;
    try { mod = require(`${p}/${apiVersion}`); } catch (e) {
      if (e.code === 'MODULE_NOT_FOUND' || e.code === 'ERR_PACKAGE_PATH_NOT_EXPORTED') continue;
      throw e;
    }
    const cls = mod[kind];
    if (cls && cls.apiVersion === apiVersion && cls.kind === kind) return { cls, pkg: `${p} ${pkgVersion(p)}` };
  }
  return null;
}
// Runs the schema's validator on a copy of obj whose every object records the
// keys the validator reads; a key it never read (in an object it read at all
// and did not enumerate, as it does maps) is not in the schema.
function validateStrict(cls, obj) {
  const records = [];
  const track = (v, segs) => {
    if (v === null || typeof v !== 'object') return v;
    const rec = { segs, read: new Set(), enumerated: false, keys: Array.isArray(v) ? [] : Object.keys(v) };
    if (!Array.isArray(v)) records.push(rec);
    const copy = Array.isArray(v) ? v.map((c, i) => track(c, [...segs, i]))
      : Object.fromEntries(Object.entries(v).map(([k, c]) => [k, track(c, [...segs, k])]));
    return new Proxy(copy, {
      get(t, k, r) { if (typeof k === 'string') rec.read.add(k); return Reflect.get(t, k, r); },
      has(t, k) { if (typeof k === 'string') rec.read.add(k); return Reflect.has(t, k); },
      ownKeys(t) { rec.enumerated = true; return Reflect.ownKeys(t); },
    });
  };
  const problems = [];
  try {
    cls.prototype.validate.call(track(obj, []));
  } catch (e) {
    for (const x of e.errors || [{ instancePath: '', message: e.message }]) {
      const segs = x.instancePath.split('/').slice(1).map((s) => (/^\d+$/.test(s) ? Number(s) : s));
      const extra = x.params && x.params.allowedValues ? ` (${x.params.allowedValues.join(', ')})` : '';
      problems.push([segs, `${x.message}${extra}`]);
    }
  }
  for (const r of records) {
    if (r.enumerated || r.read.size === 0) continue;
    for (const k of r.keys) if (!r.read.has(k)) problems.push([[...r.segs, k], 'unknown field']);
  }
  return problems;
}

// ---- rules the API server and admission apply beyond the schema ----
const dns1123Label = /^[a-z0-9]([-a-z0-9]*[a-z0-9])?$/;
const dns1123Subdomain = /^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$/;
const labelValue = /^(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?$/;
function checkMeta(d) {
  const m = d.obj.metadata || {};
  const nameRule = ['Namespace', 'Service'].includes(d.obj.kind) ? dns1123Label : dns1123Subdomain;
  if (!m.name || !nameRule.test(m.name) || m.name.length > 63) err(d, ['metadata', 'name'], `bad name '${m.name}'`);
  for (const where of [['metadata'], ['spec', 'template', 'metadata']]) {
    let labels = d.obj; for (const s of where) labels = labels && labels[s];
    labels = labels && labels.labels;
    for (const [k, v] of Object.entries(labels || {})) {
      const [prefix, name] = k.includes('/') ? k.split('/') : [null, k];
      if ((prefix !== null && !dns1123Subdomain.test(prefix)) || !labelValue.test(name) || !name || name.length > 63) {
        err(d, [...where, 'labels', k], 'bad label key');
      }
      if (typeof v !== 'string' || v.length > 63 || !labelValue.test(v)) err(d, [...where, 'labels', k], `bad label value '${v}'`);
    }
  }
}
const matches = (selector, labels) =>
  Object.entries((selector && selector.matchLabels) || {}).every(([k, v]) => labels && labels[k] === v);

// The restricted Pod Security Standard (pod-security.kubernetes.io/enforce:
// restricted) and this project's rules: uid/gid 10001, read-only root.
const allowedVolumes = ['configMap', 'csi', 'downwardAPI', 'emptyDir', 'ephemeral', 'persistentVolumeClaim', 'projected', 'secret'];
function checkRestricted(d, podSpec, base) {
  const psc = podSpec.securityContext || {};
  for (const f of ['hostNetwork', 'hostPID', 'hostIPC']) if (podSpec[f]) err(d, [...base, f], 'not allowed (restricted)');
  (podSpec.volumes || []).forEach((v, i) => {
    const type = Object.keys(v).filter((k) => k !== 'name');
    if (!type.every((t) => allowedVolumes.includes(t))) err(d, [...base, 'volumes', i], `volume type ${type} not allowed (restricted)`);
  });
  if (psc.runAsUser === 0) err(d, [...base, 'securityContext', 'runAsUser'], 'root (restricted)');
  const containers = [['containers', podSpec.containers || []], ['initContainers', podSpec.initContainers || []]];
  for (const [field, list] of containers) {
    list.forEach((c, i) => {
      const at = [...base, field, i, 'securityContext'];
      const sc = c.securityContext || {};
      if (sc.privileged) err(d, [...at, 'privileged'], 'not allowed (restricted)');
      if (sc.allowPrivilegeEscalation !== false) err(d, at, 'allowPrivilegeEscalation must be false (restricted)');
      const caps = sc.capabilities || {};
      if (!(caps.drop || []).includes('ALL')) err(d, at, 'capabilities must drop ALL (restricted)');
      if ((caps.add || []).some((a) => a !== 'NET_BIND_SERVICE')) err(d, [...at, 'capabilities', 'add'], 'only NET_BIND_SERVICE (restricted)');
      const nonRoot = sc.runAsNonRoot !== undefined ? sc.runAsNonRoot : psc.runAsNonRoot;
      if (nonRoot !== true) err(d, at, 'runAsNonRoot must be true (restricted)');
      if (sc.runAsUser === 0) err(d, [...at, 'runAsUser'], 'root (restricted)');
      const seccomp = (sc.seccompProfile || psc.seccompProfile || {}).type;
      if (!['RuntimeDefault', 'Localhost'].includes(seccomp)) err(d, at, 'seccompProfile must be RuntimeDefault or Localhost (restricted)');
      if ((c.ports || []).some((p) => p.hostPort)) err(d, [...base, field, i, 'ports'], 'hostPort not allowed (restricted)');
      // This project: the image's user, a read-only root file system.
      const uid = sc.runAsUser !== undefined ? sc.runAsUser : psc.runAsUser;
      const gid = sc.runAsGroup !== undefined ? sc.runAsGroup : psc.runAsGroup;
      if (uid !== 10001 || gid !== 10001) err(d, at, `runs as ${uid}:${gid}, not the image's 10001:10001`);
      if (sc.readOnlyRootFilesystem !== true) err(d, at, 'readOnlyRootFilesystem must be true');
    });
  }
}
const podTemplate = (o) => {
  if (['Deployment', 'StatefulSet', 'DaemonSet', 'ReplicaSet', 'Job'].includes(o.kind)) return ['spec', 'template'];
  return null;
};
function checkJob(d) {
  const s = d.obj.spec || {};
  const pod = (s.template && s.template.spec) || {};
  if ((s.backoffLimitPerIndex !== undefined || s.podFailurePolicy) && pod.restartPolicy !== 'Never') {
    err(d, ['spec', 'template', 'spec', 'restartPolicy'], 'must be Never with backoffLimitPerIndex or podFailurePolicy');
  }
  if ((s.backoffLimitPerIndex !== undefined || s.maxFailedIndexes !== undefined) && s.completionMode !== 'Indexed') {
    err(d, ['spec', 'completionMode'], 'backoffLimitPerIndex/maxFailedIndexes need Indexed');
  }
  if (s.podReplacementPolicy && s.podFailurePolicy && s.podReplacementPolicy !== 'Failed') {
    err(d, ['spec', 'podReplacementPolicy'], 'must be Failed with a podFailurePolicy');
  }
  const names = (pod.containers || []).map((c) => c.name);
  ((s.podFailurePolicy && s.podFailurePolicy.rules) || []).forEach((r, i) => {
    if (r.action === 'FailIndex' && s.backoffLimitPerIndex === undefined) err(d, ['spec', 'podFailurePolicy', 'rules', i], 'FailIndex needs backoffLimitPerIndex');
    const c = r.onExitCodes && r.onExitCodes.containerName;
    if (c && !names.includes(c)) err(d, ['spec', 'podFailurePolicy', 'rules', i, 'onExitCodes', 'containerName'], `no container '${c}'`);
  });
}

// ---- per document ----
const textprotos = new Map();  // ConfigMap name -> {key: text}
for (const d of docs) {
  const o = d.obj;
  const base = path.basename(d.file);
  if (base === 'kustomization.yaml') { d.type = 'kustomization'; continue; }
  if (!o.apiVersion && o.rules && o.rules.custom) { d.type = 'adapter'; continue; }
  if (!o.apiVersion || !o.kind) { err(d, [], 'no apiVersion/kind: not a Kubernetes object'); continue; }
  d.type = 'k8s';
  d.label = `${o.apiVersion} ${o.kind} ${o.metadata && o.metadata.namespace ? o.metadata.namespace + '/' : ''}${o.metadata && o.metadata.name}`;
  const m = modelClass(o.apiVersion, o.kind);
  if (!m) { err(d, ['kind'], `no schema for ${o.apiVersion} ${o.kind}`); continue; }
  for (const [segs, msg] of validateStrict(m.cls, o)) err(d, segs, msg);
  d.checks.push(`schema (${m.pkg})`);
  checkMeta(d);
  const t = podTemplate(o);
  if (t) {
    const tpl = o.spec && o.spec.template;
    if (tpl && tpl.spec) { checkRestricted(d, tpl.spec, [...t, 'spec']); d.checks.push('restricted PSS'); }
    if (o.kind !== 'Job' && !matches(o.spec.selector, tpl && tpl.metadata && tpl.metadata.labels)) {
      err(d, ['spec', 'selector'], 'does not match the pod template labels');
    }
  }
  if (o.kind === 'Job') { checkJob(d); d.checks.push('Job rules'); }
  if (o.kind === 'PodDisruptionBudget' && o.spec && o.spec.minAvailable !== undefined && o.spec.maxUnavailable !== undefined) {
    err(d, ['spec', 'minAvailable'], 'minAvailable and maxUnavailable cannot both be set');
  }
  if (o.kind === 'ConfigMap') {
    textprotos.set(o.metadata.name, o.data || {});
    for (const [key, text] of Object.entries(o.data || {})) {
      if (!key.endsWith('.textproto')) continue;
      const r = cp.spawnSync('protoc', ['-I', `${repo}/proto`, `${repo}/proto/gmmscore/v1/server_config.proto`,
        '--encode=gmmscore.v1.ServerConfig'], { input: text, encoding: 'latin1' });
      if (r.status !== 0) err(d, ['data', key], `not a gmmscore.v1.ServerConfig: ${(r.stderr || '').trim().split('\n').join('; ')}`);
      else d.checks.push(`${key}: ServerConfig (protoc)`);
    }
  }
}

// ---- helm values of prometheus-adapter ----
for (const d of docs.filter((x) => x.type === 'adapter')) {
  d.label = 'prometheus-adapter values';
  d.obj.rules.custom.forEach((r, i) => {
    for (const f of ['seriesQuery', 'resources', 'name', 'metricsQuery']) if (!r[f]) err(d, ['rules', 'custom', i, f], 'missing');
    if (r.name && !r.name.as) err(d, ['rules', 'custom', i, 'name', 'as'], 'missing');
    const known = ['seriesQuery', 'seriesFilters', 'resources', 'name', 'metricsQuery'];
    for (const k of Object.keys(r)) if (!known.includes(k)) err(d, ['rules', 'custom', i, k], 'unknown field');
  });
  d.checks.push('rules.custom structure');
}

// ---- kustomization ----
const k8sDocs = docs.filter((d) => d.type === 'k8s');
for (const d of docs.filter((x) => x.type === 'kustomization')) {
  d.label = 'kustomize Kustomization';
  const dir = path.dirname(d.file);
  const listed = d.obj.resources || [];
  listed.forEach((r, i) => { if (!fs.existsSync(path.join(dir, r))) err(d, ['resources', i], `no file ${r}`); });
  const known = ['apiVersion', 'kind', 'resources', 'namespace', 'labels', 'images', 'configMapGenerator', 'secretGenerator', 'patches'];
  for (const k of Object.keys(d.obj)) if (!known.includes(k)) err(d, [k], 'unknown field');
  if (all) {  // every object manifest beside it is listed
    for (const f of new Set(k8sDocs.filter((x) => path.dirname(x.file) === dir).map((x) => path.basename(x.file)))) {
      if (!listed.includes(f)) err(d, ['resources'], `${f} is not listed`);
    }
  }
  const r = cp.spawnSync('kubectl', ['kustomize', dir], { encoding: 'utf8' });
  if (r.error) d.checks.push('resources exist (no kubectl here to render it)');
  else if (r.status !== 0) err(d, [], `kubectl kustomize: ${r.stderr.trim()}`);
  else d.checks.push(`kubectl kustomize renders ${YAML.parseAllDocuments(r.stdout).length} objects`);
}

for (const d of docs) {
  if (d.errors.length) for (const e of d.errors) fail(d.where, `${d.label || ''}: ${e}`);
  else ok(d.where, `${d.label}: ${d.checks.join(', ')}`);
}

// ---- what the files promise each other ----
const find = (kind, name) => k8sDocs.find((d) => d.obj.kind === kind && (!name || d.obj.metadata.name === name));
const cross = (what, problems) => {
  if (problems.length) for (const p of problems) fail('cross-check', `${what}: ${p}`);
  else ok('cross-check', what);
};
const field = (text, name) => { const m = new RegExp(`(^|[\\s{])${name}:\\s*(-?\\d+)`, 'm').exec(text || ''); return m ? Number(m[2]) : undefined; };
const dep = find('Deployment', 'gmmscored');
let config;
if (dep) {
  const pod = dep.obj.spec.template.spec;
  const c = pod.containers[0];
  const labels = dep.obj.spec.template.metadata.labels;
  const ports = (c.ports || []).map((p) => p.name);
  // --config names the mounted ConfigMap item.
  const problems = [];
  const arg = [...(c.command || []), ...(c.args || [])].find((a) => a.startsWith('--config='));
  if (!arg) problems.push('no --config= argument');
  else {
    const file = arg.slice('--config='.length);
    for (const m of c.volumeMounts || []) {
      if (!file.startsWith(m.mountPath + '/')) continue;
      const rel = file.slice(m.mountPath.length + 1);
      const vol = (pod.volumes || []).find((v) => v.name === m.name) || {};
      const sources = vol.projected ? vol.projected.sources.map((s) => s.configMap).filter(Boolean) : vol.configMap ? [vol.configMap] : [];
      for (const s of sources) {
        const item = (s.items || []).find((it) => it.path === rel) || (!s.items && { key: rel });
        if (item && textprotos.has(s.name)) config = { name: s.name, key: item.key, text: textprotos.get(s.name)[item.key] };
      }
    }
    if (!config && (all || textprotos.size)) problems.push(`${file} is not a mounted item of a ConfigMap in this set`);
    else if (config && config.text === undefined) problems.push(`ConfigMap ${config.name} has no key ${config.key}`);
  }
  if (all || config) cross(`Deployment's ${arg} is ConfigMap ${config ? config.name + '/' + config.key : '?'}`, problems);
  if (config && config.text) {
    const pre = ((c.lifecycle && c.lifecycle.preStop && c.lifecycle.preStop.exec && c.lifecycle.preStop.exec.command) || []).join(' ');
    const sleep = Number((/sleep\s+(\d+)/.exec(pre) || [0, 0])[1]);
    const grace = field(config.text, 'drain_grace_s') || 0;
    const timeout = field(config.text, 'drain_timeout_s');
    const total = sleep + grace + (timeout === undefined ? 10 : timeout);
    const period = pod.terminationGracePeriodSeconds === undefined ? 30 : pod.terminationGracePeriodSeconds;
    cross(`preStop ${sleep} + drain_grace_s ${grace} + drain_timeout_s ${timeout} = ${total} < terminationGracePeriodSeconds ${period}`,
      total < period ? [] : ['the drain would be cut short by SIGKILL']);
  }
  for (const [kind, sel, portNames] of [
    ['Service', (o) => ({ matchLabels: o.spec.selector }), (o) => o.spec.ports.map((p) => p.targetPort)],
    ['PodDisruptionBudget', (o) => o.spec.selector, () => []],
    ['PodMonitor', (o) => o.spec.selector, (o) => o.spec.podMetricsEndpoints.map((e) => e.port)],
  ]) {
    for (const d of k8sDocs.filter((x) => x.obj.kind === kind)) {
      const problems = [];
      if (!matches(sel(d.obj), labels)) problems.push('its selector does not select the pods');
      for (const p of portNames(d.obj)) if (typeof p === 'string' && !ports.includes(p)) problems.push(`no container port named ${p}`);
      if (d.obj.metadata.namespace !== dep.obj.metadata.namespace) problems.push('another namespace than the Deployment');
      cross(`${kind} ${d.obj.metadata.name} selects the Deployment's pods and names their ports`, problems);
    }
  }
}
const ns = k8sDocs.filter((d) => d.obj.kind === 'Namespace');
if (ns.length) {
  const names = new Map(ns.map((d) => [d.obj.metadata.name, d.obj.metadata.labels || {}]));
  const problems = [];
  for (const [n, l] of names) if (l['pod-security.kubernetes.io/enforce'] !== 'restricted') problems.push(`${n} does not enforce restricted`);
  for (const d of k8sDocs) {
    if (d.obj.kind === 'Namespace') continue;
    const n = d.obj.metadata.namespace;
    if (!names.has(n)) problems.push(`${d.where} is in namespace '${n}', not one of ${[...names.keys()]}`);
  }
  cross(`every object is in namespace ${[...names.keys()]}, which enforces the restricted Pod Security Standard`, problems);
}
const hpa = find('HorizontalPodAutoscaler');
const adapter = docs.find((d) => d.type === 'adapter');
if (hpa) {
  const problems = [];
  const ref = hpa.obj.spec.scaleTargetRef;
  if (!find(ref.kind, ref.name) && (all || dep)) problems.push(`no ${ref.kind} ${ref.name}`);
  const served = adapter ? adapter.obj.rules.custom.map((r) => r.name && r.name.as) : null;
  let sources = '';
  for (const f of fs.readdirSync(`${repo}/server`)) if (f.endsWith('.cc')) sources += fs.readFileSync(`${repo}/server/${f}`, 'utf8');
  for (const m of hpa.obj.spec.metrics || []) {
    const name = m.pods && m.pods.metric.name;
    if (!name) continue;
    if (served && !served.includes(name)) problems.push(`${name} is not served by the adapter rules`);
    if (!sources.includes(`"${name}"`)) problems.push(`${name} is not exported by server/`);
  }
  cross(`HPA ${hpa.obj.metadata.name}: target exists, metrics in the adapter rules and exported by gmmscored`, problems);
}

// ---- Envoy against the Service, the HPA and the config ----
const svc = find('Service', 'gmmscored');
if (all && svc) {
  const problems = [];
  const env = YAML.parse(fs.readFileSync(`${repo}/deploy/envoy/envoy.yaml`, 'utf8'));
  const cluster = env.static_resources.clusters.find((c) => c.name === 'gmmscored');
  const sa = cluster.load_assignment.endpoints[0].lb_endpoints[0].endpoint.address.socket_address;
  const want = `${svc.obj.metadata.name}.${svc.obj.metadata.namespace}.svc.cluster.local`;
  if (sa.address !== want) problems.push(`upstream ${sa.address} is not the Service ${want}`);
  const grpcPort = svc.obj.spec.ports.find((p) => p.name === 'grpc');
  if (!grpcPort || sa.port_value !== grpcPort.port) problems.push(`upstream port ${sa.port_value} is not the Service's grpc port`);
  const th = ((cluster.circuit_breakers || {}).thresholds || []);
  const byPriority = Object.fromEntries(th.map((t) => [t.priority || 'DEFAULT', t]));
  for (const p of ['DEFAULT', 'HIGH']) {
    for (const f of ['max_connections', 'max_pending_requests', 'max_requests', 'max_retries']) {
      if (!byPriority[p] || !(byPriority[p][f] > 0)) problems.push(`circuit_breakers ${p} has no ${f}`);
    }
  }
  const maxStreams = config ? field(config.text, 'max_streams') : undefined;
  const need = hpa && maxStreams ? hpa.obj.spec.maxReplicas * maxStreams : undefined;
  if (need && byPriority.DEFAULT && byPriority.DEFAULT.max_requests < need) {
    problems.push(`DEFAULT max_requests ${byPriority.DEFAULT.max_requests} < maxReplicas x max_streams = ${need}`);
  }
  cross(`Envoy: upstream is ${want}:${sa.port_value}; circuit breakers DEFAULT and HIGH set, max_requests >= maxReplicas x max_streams (${need})`, problems);
}
process.exit(failures ? 1 : 0);
JS

if [ ${#files[@]} -gt 0 ]; then
  echo "== Kubernetes manifests"
  RENDERED_DIR="$work/training" node "$cache/validate_k8s.js" "$repo" "$all" "${files[@]}" || status=1
fi

# ---- Envoy ----
for envoy_file in "${envoy_files[@]}"; do
  echo "== Envoy"
  /usr/bin/python3 - "$cache/envoy.pb" "$envoy_file" "$repo" <<'PY' || status=1
import sys, yaml
from google.protobuf import descriptor, descriptor_pb2, descriptor_pool, json_format, message_factory
fds = descriptor_pb2.FileDescriptorSet.FromString(open(sys.argv[1], 'rb').read())
pool = descriptor_pool.DescriptorPool()
for f in fds.file:
    pool.Add(f)
factory = message_factory.MessageFactory(pool)
def new(full_name):
    return factory.GetPrototype(pool.FindMessageTypeByName(full_name))()
where = sys.argv[2][len(sys.argv[3]) + 1:] if sys.argv[2].startswith(sys.argv[3] + '/') else sys.argv[2]
try:
    bootstrap = new('envoy.config.bootstrap.v3.Bootstrap')
    # What Envoy does with a YAML bootstrap: YAML -> JSON -> proto, unknown fields refused.
    json_format.ParseDict(yaml.safe_load(open(sys.argv[2])), bootstrap, descriptor_pool=pool)
except Exception as e:
    print(f'FAIL  {where}  envoy.config.bootstrap.v3.Bootstrap: {e}')
    sys.exit(1)
problems, anys = [], []
def walk(msg, at):
    if msg.DESCRIPTOR.full_name == 'google.protobuf.Any':
        inner = new(msg.type_url.split('/')[-1])
        inner.ParseFromString(msg.value)
        anys.append(inner.DESCRIPTOR.full_name)
        return walk(inner, at)
    for f, value in msg.ListFields():
        here = f'{at}.{f.name}'
        if f.GetOptions().deprecated:
            problems.append(f'{here} is deprecated')
        if f.type == descriptor.FieldDescriptor.TYPE_ENUM:
            for v in (value if f.label == f.LABEL_REPEATED else [value]):
                ev = f.enum_type.values_by_number.get(v)
                if ev is not None and ev.GetOptions().deprecated:
                    problems.append(f'{here}: {ev.name} is deprecated')
        if f.type != descriptor.FieldDescriptor.TYPE_MESSAGE:
            continue
        if f.message_type.GetOptions().map_entry:
            vf = f.message_type.fields_by_name['value']
            items = list(value.items()) if vf.type == vf.TYPE_MESSAGE else []
            for k, v in items:
                walk(v, f'{here}[{k}]')
        elif f.label == f.LABEL_REPEATED:
            for i, v in enumerate(value):
                walk(v, f'{here}[{i}]')
        else:
            walk(value, here)
walk(bootstrap, 'bootstrap')
if problems:
    for p in problems:
        print(f'FAIL  {where}  {p}')
    sys.exit(1)
priorities = pool.FindEnumTypeByName('envoy.config.core.v3.RoutingPriority').values_by_number
breakers = sorted({priorities[t.priority].name for c in bootstrap.static_resources.clusters
                   for t in c.circuit_breakers.thresholds})
typed = ', '.join(sorted({a.split('.')[-1] for a in anys}))
print(f'ok    {where}  envoy.config.bootstrap.v3.Bootstrap (Envoy API protos of npm @grpc/grpc-js-xds 1.14.1): fields, types, enums, '
      f'{len(anys)} typed configs ({typed}), no deprecated fields; circuit breakers for {", ".join(breakers)}')
PY
done

# ---- the training driver against a stand-in kubectl ----
gmmscore_bin="$repo/build/client/cli/gmmscore"
if [ $all -eq 1 ] && [ $driver -eq 1 ] && [ -x "$gmmscore_bin" ]; then
  echo "== tools/train_cluster.sh"
  mkdir -p "$work/bin" "$work/kube" "$work/data/exp"
  cat > "$work/bin/kubectl" <<'PY'
#!/usr/bin/python3
# A stand-in kubectl for validate_deploy.sh: `apply` runs the Job here at
# once (each index in turn, the container's command with its env), `wait`
# answers from the result (and sleeps, as a real wait would, for the
# condition that will not come), `delete`, `get`, `logs` are bookkeeping.
import os, subprocess, sys, time, yaml
state = os.environ['FAKE_KUBE_STATE']
args = sys.argv[1:]
with open(os.path.join(state, 'calls.log'), 'a') as log:
    log.write('kubectl ' + ' '.join(args) + '\n')
ns = None
if args[:1] == ['-n']:
    ns, args = args[1], args[2:]
verb = args[0]
status = lambda job: os.path.join(state, job + '.status')
if verb == 'delete':
    for suffix in ('.status', '.yaml', '.log'):
        if os.path.exists(os.path.join(state, args[2] + suffix)):
            os.remove(os.path.join(state, args[2] + suffix))
elif verb == 'apply':
    job = yaml.safe_load(sys.stdin)
    name, spec = job['metadata']['name'], job['spec']
    assert job['kind'] == 'Job' and job['metadata']['namespace'] == ns, 'a Job in the namespace asked for'
    with open(os.path.join(state, name + '.yaml'), 'w') as f:
        yaml.safe_dump(job, f)
    pod = spec['template']['spec']
    c = pod['containers'][0]
    mounts = {m['name']: m['mountPath'] for m in c['volumeMounts']}
    claim = [v for v in pod['volumes'] if 'persistentVolumeClaim' in v][0]
    assert mounts[claim['name']] == os.environ['FAKE_KUBE_MOUNT'], 'the volume at --mount'
    env = dict(os.environ, **{e['name']: e['value'] for e in c.get('env', [])})
    result = 'Complete'
    with open(os.path.join(state, name + '.log'), 'w') as out:
        for i in range(spec.get('completions', 1)):
            if spec.get('completionMode') == 'Indexed':
                env['JOB_COMPLETION_INDEX'] = str(i)
            if subprocess.run(c['command'] + c.get('args', []), env=env, stdout=out, stderr=subprocess.STDOUT).returncode:
                result = 'Failed'
                break
    open(status(name), 'w').write(result)
    print(f'job.batch/{name} created')
elif verb == 'wait':
    condition = [a for a in args if a.startswith('--for=condition=')][0].split('=')[-1]
    job = [a for a in args if a.startswith('job/')][0][4:]
    if open(status(job)).read().lower() == condition.lower():
        print(f'job.batch/{job} condition met')
    else:
        time.sleep(600)
        sys.exit(1)
elif verb == 'logs':
    job = [a for a in args if a.startswith('job-name=')][0].split('=')[1]
    sys.stdout.write(open(os.path.join(state, job + '.log')).read())
elif verb == 'get':
    print(' '.join(args))
else:
    sys.exit('stand-in kubectl: not supported: ' + ' '.join(args))
PY
  chmod +x "$work/bin/kubectl"
  # A small synthetic feature archive (text, 3 dims), its scp with byte offsets, a 2-Gaussian UBM.
  LC_ALL=C awk -v ark="$work/data/feats.txt" -v scp="$work/data/feats.scp" 'BEGIN {
    srand(7); bytes = 0
    for (u = 1; u <= 6; u++) {
      key = sprintf("utt%d ", u); printf "%s", key > ark; bytes += length(key)
      printf "utt%d %s:%d\n", u, ark, bytes > scp
      text = "[\n"
      for (t = 0; t < 60; t++) {
        for (d = 0; d < 3; d++) text = text sprintf(" %.4f", rand() + 2 * ((t + u) % 3) + d)
        text = text (t == 59 ? " ]\n" : "\n")
      }
      printf "%s", text > ark; bytes += length(text)
    } }'
  "$gmmscore_bin" train-gmm --features "scp:$work/data/feats.scp" --num_gauss 2 --iterations 2 \
    --output "$work/data/exp/0.dubm" 2> /dev/null
  # --backend cpu on both sides: on a GPU machine --local would otherwise
  # pick CUDA while the stand-in cluster runs on the CPU.
  common=(--init "$work/data/exp/0.dubm" --feats "$work/data/feats.scp" --shards 3 --iterations 2 --mix_up 4
          --backend cpu)
  driver_ok=1
  if ! tools/train_cluster.sh --local "${common[@]}" --exp "$work/data/exp/local" > "$work/local.log" 2>&1; then
    driver_ok=0; echo "FAIL  train_cluster.sh --local: $(tail -n 3 "$work/local.log")"
  fi
  export FAKE_KUBE_STATE="$work/kube" FAKE_KUBE_MOUNT="$work/data"
  ln -s "$gmmscore_bin" "$work/bin/gmmscore"
  if ! PATH="$work/bin:$PATH" tools/train_cluster.sh "${common[@]}" --exp "$work/data/exp/cluster" \
      --mount "$work/data" --image gmmscored:test --backend cpu --timeout_s 60 > "$work/cluster.log" 2>&1; then
    driver_ok=0; echo "FAIL  train_cluster.sh (stand-in kubectl): $(tail -n 5 "$work/cluster.log")"
  elif ! cmp -s "$work/data/exp/local/final.dubm" "$work/data/exp/cluster/final.dubm"; then
    driver_ok=0; echo "FAIL  train_cluster.sh: the cluster run's final model differs from --local's"
  fi
  jobs_run=$(grep -c '^kubectl -n gmmscore apply' "$work/kube/calls.log" || true)
  # A shard that fails (an unknown acc-stats flag: exit 2) fails the driver, naming the Job.
  if PATH="$work/bin:$PATH" tools/train_cluster.sh "${common[@]}" --exp "$work/data/exp/broken" \
      --mount "$work/data" --image gmmscored:test --backend cpu --timeout_s 60 --acc_args "--no_such_flag=1" \
      > "$work/broken.log" 2>&1; then
    driver_ok=0; echo "FAIL  train_cluster.sh: a failing acc-stats Job did not fail the driver"
  elif ! grep -q 'job/gmmscore-acc-broken-0 failed' "$work/broken.log"; then
    driver_ok=0; echo "FAIL  train_cluster.sh: no failure report: $(tail -n 3 "$work/broken.log")"
  fi
  if [ $driver_ok -eq 1 ]; then
    echo "ok    tools/train_cluster.sh  2 iterations x 3 shards: --local and a stand-in kubectl ($jobs_run Jobs applied, waited on) give the same final model byte for byte; a failing shard fails the driver"
  else
    status=1
  fi
elif [ $all -eq 1 ] && [ $driver -eq 1 ]; then
  echo "skip  tools/train_cluster.sh  (no $gmmscore_bin: build first)"
fi

if [ $status -ne 0 ]; then echo "validate_deploy: FAILED"; else echo "validate_deploy: all passed"; fi
exit $status
