// The deployment files a user applies as they are: every Kubernetes manifest under deploy/ is
// validated against the Kubernetes (and Prometheus Operator) schemas from the npm packages
// kubernetes-models and @kubernetes-models/prometheus-operator; the Dockerfile is checked by
// dockerfile-utils (the validator behind VS Code's Dockerfile support); and the proxy arguments they
// carry are run for real: the proxy starts with them (addresses rewritten to loopback), serves a
// request and answers the probes the manifests name.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { parseAllDocuments } from 'yaml';
import dockerfileUtils from 'dockerfile-utils';
import { spawn } from 'node:child_process';
import { start, stop, listeningURL, adminURL, BIN } from './processes.mjs';

const ROOT = process.env.MPO_SOURCE_DIR;

function manifestFiles() {
  const dir = path.join(ROOT, 'deploy/kubernetes');
  const files = fs.readdirSync(dir).filter((f) => /\.ya?ml$/.test(f)).map((f) => path.join(dir, f));
  files.push(path.join(ROOT, 'deploy/prometheus/modelperfobs-prometheusrule.yml'));
  return files;
}

function documents(file) {
  const docs = parseAllDocuments(fs.readFileSync(file, 'utf8'));
  for (const d of docs) assert.equal(d.errors.length, 0, `${file}: ${d.errors.map((e) => e.message).join('; ')}`);
  return docs.map((d) => d.toJS()).filter((d) => d !== null);
}

// The model class for a manifest's apiVersion and kind.
async function modelFor(apiVersion, kind) {
  let module;
  if (apiVersion.startsWith('monitoring.coreos.com/')) {
    module = `@kubernetes-models/prometheus-operator/${apiVersion}/${kind}`;
  } else {
    module = `kubernetes-models/${apiVersion}/${kind}`;  // "v1/Service", "apps/v1/Deployment"
  }
  try {
    return (await import(module))[kind];
  } catch {
    return undefined;
  }
}

async function validate(doc) {
  const Model = await modelFor(doc.apiVersion, doc.kind);
  if (!Model) throw new Error(`no schema for ${doc.apiVersion} ${doc.kind}`);
  new Model(doc).validate();
}

test('every manifest under deploy/ is valid against its schema', async () => {
  const kinds = [];
  for (const file of manifestFiles()) {
    for (const doc of documents(file)) {
      await assert.doesNotReject(validate(doc), `${path.basename(file)}: ${doc.kind} ${doc.metadata?.name}`);
      kinds.push(`${doc.kind}/${doc.metadata.name}`);
    }
  }
  for (const k of ['Deployment/modelperfobs-proxy', 'Service/modelperfobs-proxy', 'ServiceMonitor/modelperfobs-proxy',
    'Deployment/vllm-observed', 'PrometheusRule/modelperfobs', 'Job/modelperfobs-sweep-shards',
    'Job/modelperfobs-sweep-merge', 'PersistentVolumeClaim/modelperfobs-sweep']) {
    assert.ok(kinds.some((x) => x.startsWith(k)), `${k} in ${kinds.join(', ')}`);
  }
});

test('the validation refuses what a cluster would refuse (so the test above can fail)', async () => {
  const [deployment] = documents(path.join(ROOT, 'deploy/kubernetes/proxy-gateway.yaml'));
  const portAsText = structuredClone(deployment);
  portAsText.spec.template.spec.containers[0].ports[0].containerPort = 'nine thousand';
  await assert.rejects(validate(portAsText), /containerPort/);
  const noSelector = structuredClone(deployment);
  delete noSelector.spec.selector;
  await assert.rejects(validate(noSelector), /selector/);
  await assert.rejects(validate({ apiVersion: 'apps/v1', kind: 'Deploymnet', metadata: { name: 'x' } }), /no schema/);
});

test('the Dockerfile has no problems dockerfile-utils finds, and runs the proxy as a non-root user', async () => {
  const text = fs.readFileSync(path.join(ROOT, 'deploy/docker/Dockerfile'), 'utf8');
  const problems = await dockerfileUtils.validate(text);
  assert.deepEqual(problems.map((p) => `${p.range.start.line + 1}: ${p.message}`), []);
  assert.match(text, /^FROM debian:12-slim$/m);
  assert.match(text, /^USER 10001:10001$/m);
  assert.match(text, /^ENTRYPOINT \["\/usr\/bin\/modelperfobs", "proxy"\]$/m);
  // Invented, broken on purpose: the validator does report problems.
  assert.ok((await dockerfileUtils.validate('FROM debian:12-slim\nEXPOSE nine\nCOPYY a b\n')).length >= 2);
});

// The proxy container's args with the addresses moved onto loopback and the ledger into `dir`.
function localArgs(args, backend, dir) {
  return args.map((a) => {
    const [flag, value] = a.split(/=(.*)/s);
    switch (flag) {
      case '--backend': return `--backend=${backend}`;
      case '--scrape': return `--scrape=${backend}/metrics`;
      case '--listen': return '--listen=127.0.0.1:0';
      case '--admin-listen': return '--admin-listen=127.0.0.1:0';
      case '--ledger': return `--ledger=${path.join(dir, path.basename(value))}`;
      default: return a;
    }
  });
}

function proxyContainers() {
  const out = [];
  for (const file of manifestFiles()) {
    for (const doc of documents(file)) {
      for (const c of doc.spec?.template?.spec?.containers ?? []) {
        if (c.name === 'proxy') out.push({ file: path.basename(file), container: c });
      }
    }
  }
  const docker = fs.readFileSync(path.join(ROOT, 'deploy/docker/Dockerfile'), 'utf8');
  out.push({ file: 'Dockerfile', container: { args: JSON.parse(docker.match(/^CMD (\[.*\])$/m)[1]) } });
  return out;
}

test('the proxy starts with the arguments each manifest and the Dockerfile give it, and serves', async () => {
  const sim = await start(['simulate', '--listen', '127.0.0.1:0']);
  try {
    const backend = listeningURL(sim.line);
    const model = sim.line.match(/\(model ([^)]+)\)/)[1];
    const found = proxyContainers();
    assert.equal(found.length, 3);
    for (const { file, container } of found) {
      const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'mpo-deploy-'));
      const proxy = await start(['proxy', ...localArgs(container.args, backend, dir)]);
      try {
        const res = await fetch(`${listeningURL(proxy.line)}/v1/chat/completions`, {
          method: 'POST',
          headers: { 'content-type': 'application/json' },
          body: JSON.stringify({ model, messages: [{ role: 'user', content: 'hi' }], max_tokens: 4 }),
        });
        assert.equal(res.status, 200, file);
        await res.text();
        for (const probe of [container.readinessProbe, container.livenessProbe].filter(Boolean)) {
          const r = await fetch(`${adminURL(proxy.line)}${probe.httpGet.path}`);
          assert.equal(r.status, 200, `${file}: ${probe.httpGet.path}`);
        }
      } finally {
        await stop(proxy.child);
      }
      const ledger = fs.readdirSync(dir).find((f) => f.endsWith('.jsonl') && !f.includes('scrape'));
      assert.equal(fs.readFileSync(path.join(dir, ledger), 'utf8').trim().split('\n').length, 1, file);
    }
  } finally {
    await stop(sim.child);
  }
});

// Runs `sh -c SCRIPT` with `env`; resolves with its exit code and output.
function sh(script, env) {
  return new Promise((resolve) => {
    const child = spawn('/bin/sh', ['-c', script], { env: { ...process.env, ...env } });
    let out = '';
    child.stdout.on('data', (d) => { out += d; });
    child.stderr.on('data', (d) => { out += d; });
    child.on('exit', (code) => resolve({ code, out }));
  });
}

test('the sharded sweep Job runs: four shards at once, then the merge Job verifies their merge', async () => {
  const docs = documents(path.join(ROOT, 'deploy/kubernetes/sweep-sharded-job.yaml'));
  const shards = docs.find((d) => d.kind === 'Job' && d.spec.completionMode === 'Indexed');
  const merge = docs.find((d) => d.kind === 'Job' && d.metadata.name.endsWith('-merge'));
  assert.equal(shards.spec.completions, 4);
  const sim = await start(['simulate', '--listen', '127.0.0.1:0']);
  try {
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'mpo-sweep-job-'));
    const model = sim.line.match(/\(model ([^)]+)\)/)[1];
    // The Job's own scripts with this machine's paths and a test-sized load (the manifest's load
    // takes minutes: 512 requests a point, 120 s apart). Each run salts its prompts, so the
    // simulator's output lengths differ from run to run: the period leaves room for the longest.
    const local = (script) => script.replaceAll('/usr/bin/modelperfobs', BIN).replaceAll('/data/', `${dir}/`)
      .replace('--concurrencies 8,32,128', '--concurrencies 4,8').replace('--requests 512', '--requests 8')
      .replace('--point-period 120s', '--point-period 4s').replace(/sleep (5|10)\b/g, 'sleep 0.2');
    const container = shards.spec.template.spec.containers[0];
    const env = Object.fromEntries(container.env.map((e) => [e.name, e.value]));
    env.URL = `${listeningURL(sim.line)}/v1`;
    env.MODEL = model;
    env.START_AT = new Date(Date.now() + 1500).toISOString().replace(/\.\d+Z$/, 'Z');
    const runs = [0, 1, 2, 3].map((i) => sh(local(container.args[0]), { ...env, JOB_COMPLETION_INDEX: String(i) }));
    const merged = sh(local(merge.spec.template.spec.containers[0].args[0]), {});
    for (const r of await Promise.all(runs)) assert.equal(r.code, 0, r.out);
    const m = await merged;
    assert.equal(m.code, 0, m.out);
    assert.match(m.out, /sweep verify: OK: 2 points/);
    const receipt = JSON.parse(fs.readFileSync(path.join(dir, 'sweep.json'), 'utf8'));
    assert.equal(receipt.load.shards.length, 4);
  } finally {
    await stop(sim.child);
  }
});
