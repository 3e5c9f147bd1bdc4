// OpenTelemetry out of the proxy, checked with the OpenTelemetry project's own OTLP decoders (the
// protobufjs code that @opentelemetry/otlp-transformer generates from opentelemetry-proto): a
// small OTLP/HTTP receiver decodes what `modelperfobs proxy --otlp-endpoint` sends while the
// official openai SDK talks through the proxy to `modelperfobs simulate`. Asserted: span names,
// kinds, GenAI attributes, trace ids and parentage against the ledger and the simulator's truth
// (the client's traceparent reaches the engine with the proxy's span as parent), metric points,
// and that a collector that is down, slow, refusing or answering garbage costs the clients
// nothing: every request served, every ledger line written, the failures counted on /metrics.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { createServer } from 'node:http';
import { createServer as createTcpServer } from 'node:net';
import { createRequire } from 'node:module';
import { mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { execFileSync } from 'node:child_process';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { EventEmitter } from 'node:events';
import OpenAI from 'openai';
import { BIN, start, stop, listeningURL, adminURL } from './processes.mjs';

const require = createRequire(import.meta.url);
const root = require('@opentelemetry/otlp-transformer/build/src/generated/root');
const TracesRequest = root.opentelemetry.proto.collector.trace.v1.ExportTraceServiceRequest;
const MetricsRequest = root.opentelemetry.proto.collector.metrics.v1.ExportMetricsServiceRequest;

const b64hex = (b) => Buffer.from(b ?? '', 'base64').toString('hex');
const attrs = (list) => Object.fromEntries((list ?? []).map((kv) => [kv.key, Object.values(kv.value)[0]]));

// An OTLP/HTTP receiver. `answer(req, body, n)` may answer itself (fault modes) and return true.
async function receiver(answer = () => false) {
  const got = { spans: [], metrics: [], resources: [], raw: [], posts: 0, events: new EventEmitter() };
  const server = createServer((req, res) => {
    const chunks = [];
    req.on('data', (c) => chunks.push(c));
    req.on('end', () => {
      const body = Buffer.concat(chunks);
      got.posts += 1;
      got.headers = req.headers;
      if (answer(req, res, got.posts)) return;
      const json = (req.headers['content-type'] ?? '').includes('json');
      if (req.url === '/v1/traces') {
        if (json) got.raw.push(body.toString());
        const msg = json ? JSON.parse(body) : TracesRequest.toObject(TracesRequest.decode(body), { longs: String, bytes: String, enums: Number });
        for (const rs of msg.resourceSpans ?? []) {
          got.resources.push(attrs(rs.resource?.attributes));
          for (const ss of rs.scopeSpans ?? []) {
            for (const s of ss.spans ?? []) {
              got.spans.push({
                traceId: json ? s.traceId : b64hex(s.traceId),
                spanId: json ? s.spanId : b64hex(s.spanId),
                parentSpanId: json ? s.parentSpanId : b64hex(s.parentSpanId),
                traceState: s.traceState ?? '',
                name: s.name, kind: s.kind, start: BigInt(s.startTimeUnixNano), end: BigInt(s.endTimeUnixNano),
                status: s.status ?? {}, attributes: attrs(s.attributes), scope: ss.scope,
              });
            }
          }
        }
      } else if (req.url === '/v1/metrics') {
        const msg = json ? JSON.parse(body) : MetricsRequest.toObject(MetricsRequest.decode(body), { longs: String, enums: Number });
        got.metrics.push(msg);
      }
      res.writeHead(200, { 'content-type': req.headers['content-type'] });
      res.end(json ? '{}' : '');
      got.events.emit('data');
    });
  });
  await new Promise((resolve) => server.listen(0, '127.0.0.1', resolve));
  got.url = `http://127.0.0.1:${server.address().port}`;
  got.close = () => new Promise((resolve) => { server.closeAllConnections?.(); server.close(resolve); });
  // Resolves once `pred()` holds (checked on every export that arrives).
  got.until = (pred) => new Promise((resolve) => {
    if (pred()) return resolve();
    const check = () => { if (pred()) { got.events.off('data', check); resolve(); } };
    got.events.on('data', check);
  });
  return got;
}

// The proxy's /metrics page once `pattern` matches it (the exporter's counters move on its own
// thread's schedule), polled at most 200 times 50 ms apart; the last page otherwise.
async function metricsUntil(adminURL, pattern) {
  let page = '';
  for (let i = 0; i < 200; i += 1) {
    page = await (await fetch(`${adminURL}/metrics`)).text();
    if (pattern.test(page)) break;
    await new Promise((r) => setTimeout(r, 50));
  }
  return page;
}

function readJsonl(path) {
  return readFileSync(path, 'utf8').trim().split('\n').filter(Boolean).map((l) => JSON.parse(l));
}

async function stack(otlpArgs, env = {}, simArgs = []) {
  const dir = mkdtempSync(join(tmpdir(), 'mpo-otlp-'));
  const ledger = join(dir, 'ledger.jsonl');
  const truth = join(dir, 'truth.jsonl');
  const s = await start(['simulate', '--listen', '127.0.0.1:0', '--model', 'sim-model', '--truth', truth, ...simArgs], env);
  const p = await start(['proxy', '--backend', listeningURL(s.line), '--listen', '127.0.0.1:0',
    '--admin-listen', '127.0.0.1:0', '--ledger', ledger, ...otlpArgs], env);
  return {
    ledger, truth, proxyURL: listeningURL(p.line), adminURL: adminURL(p.line), line: p.line,
    stop: async () => { await stop(p.child); await stop(s.child); },
  };
}

async function chat(baseURL, i, headers = {}, stream = true) {
  const client = new OpenAI({ baseURL: `${baseURL}/v1`, apiKey: 'unused', maxRetries: 0, defaultHeaders: headers });
  if (!stream) {
    const r = await client.chat.completions.create({ model: 'sim-model', messages: [{ role: 'user', content: `q${i}` }], max_tokens: 3 });
    return r.choices[0].message.content;
  }
  const s = await client.chat.completions.create({
    model: 'sim-model', messages: [{ role: 'user', content: `question ${i}` }], max_tokens: 4 + i, stream: true,
    stream_options: { include_usage: true },
  });
  let text = '';
  for await (const c of s) text += c.choices[0]?.delta?.content ?? '';
  return text;
}

const CLIENT_TRACE = '4bf92f3577b34da6a3ce929d0e0e4736';
const CLIENT_SPAN = '00f067aa0ba902b7';

test('spans and GenAI metrics reach an OTLP collector, and the trace reaches the engine', async () => {
  const otlp = await receiver();
  const st = await stack(['--otlp-endpoint', otlp.url, '--otlp-metrics-interval', '200ms'],
    { OTEL_BSP_SCHEDULE_DELAY: '50', OTEL_SERVICE_NAME: 'mpo-test', OTEL_RESOURCE_ATTRIBUTES: 'deployment.environment=ci',
      OTEL_EXPORTER_OTLP_HEADERS: 'x-api-key=s%3Dcret' },
    ['--otlp-traces-endpoint', `${otlp.url}/v1/traces`]);
  try {
    assert.match(st.line, /OTLP traces to http:\/\/127\.0\.0\.1:\d+\/v1\/traces/);
    await chat(st.proxyURL, 1, { traceparent: `00-${CLIENT_TRACE}-${CLIENT_SPAN}-01`, tracestate: 'vendor=x' });
    await chat(st.proxyURL, 2);
    await chat(st.proxyURL, 3, {}, false);
    await otlp.until(() => otlp.spans.filter((s) => s.kind === 3).length >= 3);
    const page = await (await fetch(`${st.adminURL}/metrics`)).text();
    assert.match(page, /^gen_ai_client_operation_duration_seconds_count\{[^}]*gen_ai_request_model="sim-model"[^}]*\} 3(\.0)?$/m);
    assert.match(page, /^gen_ai_client_operation_time_to_first_chunk_seconds_count\{[^}]*\} 2(\.0)?$/m);
    assert.match(page, /^gen_ai_client_token_usage_bucket\{[^}]*gen_ai_token_type="input"[^}]*le="\+Inf"[^}]*\} 3(\.0)?$/m);
  } finally {
    await st.stop();
    await otlp.close();
  }
  const lines = readJsonl(st.ledger);
  const truth = readJsonl(st.truth);
  assert.equal(lines.length, 3);
  const proxySpans = otlp.spans.filter((s) => s.kind === 3);
  const engineSpans = otlp.spans.filter((s) => s.kind === 2);
  assert.equal(proxySpans.length, 3);
  assert.equal(engineSpans.length, 3);
  assert.ok(otlp.resources.some((r) => r['service.name'] === 'mpo-test' && r['deployment.environment'] === 'ci'));
  assert.equal(otlp.headers['x-api-key'], 's=cret'); // OTEL_EXPORTER_OTLP_HEADERS, percent-decoded
  assert.equal(otlp.headers['content-type'], 'application/x-protobuf');
  for (const line of lines) {
    const span = proxySpans.find((s) => s.attributes['modelperfobs.observation_id'] === line.observation_id);
    assert.ok(span, `a span for ${line.observation_id}`);
    assert.equal(span.traceId, line.trace_id);
    assert.equal(span.spanId, line.span_id);
    assert.equal(span.kind, 3); // SPAN_KIND_CLIENT
    assert.equal(span.name, 'chat sim-model');
    assert.equal(span.scope.name, 'modelperfobs');
    assert.equal(span.attributes['gen_ai.operation.name'], 'chat');
    assert.equal(span.attributes['gen_ai.provider.name'], 'openai');
    assert.equal(span.attributes['gen_ai.request.model'], 'sim-model');
    assert.equal(span.attributes['gen_ai.response.model'], line.response_model);
    assert.equal(span.attributes['gen_ai.response.id'], line.response_id);
    assert.equal(Number(span.attributes['gen_ai.usage.input_tokens']), line.prompt_tokens);
    assert.equal(Number(span.attributes['gen_ai.usage.output_tokens']), line.completion_tokens);
    assert.deepEqual(span.attributes['gen_ai.response.finish_reasons'].values.map((v) => v.stringValue), [line.finish_reason]);
    assert.equal(span.attributes['server.address'], '127.0.0.1');
    assert.equal(span.attributes['modelperfobs.outcome'], 'ok');
    assert.equal(span.attributes['error.type'], undefined);
    if (line.stream) assert.equal(span.attributes['gen_ai.response.time_to_first_chunk'], line.ttft_ms / 1000);
    assert.equal(span.start, BigInt(Date.parse(line.started_at)) * 1000000n + BigInt(Number(line.started_at.slice(23, 26))) * 1000n);
    // The engine received the proxy's span as its parent, in the same trace, and its own span
    // (vLLM's shape) is a child of the proxy's.
    const engine = truth.find((t) => t.response_id === line.response_id);
    assert.equal(engine.traceparent, `00-${line.trace_id}-${line.span_id}-01`);
    const server = engineSpans.find((s) => s.traceId === line.trace_id);
    assert.ok(server, `an engine span in trace ${line.trace_id}`);
    assert.equal(server.name, 'llm_request');
    assert.equal(server.parentSpanId, line.span_id);
    assert.equal(server.attributes['gen_ai.request.id'], line.response_id);
    assert.equal(Number(server.attributes['gen_ai.usage.completion_tokens']), engine.completion_tokens);
    assert.ok(Math.abs(server.attributes['gen_ai.latency.e2e'] * 1000 - engine.e2e_ms) < 0.01);
    assert.ok(Math.abs(server.attributes['gen_ai.latency.time_to_first_token'] * 1000 - engine.ttft_ms) < 0.01);
    for (const k of ['time_in_queue', 'time_in_model_prefill', 'time_in_model_decode', 'time_in_model_inference']) {
      assert.equal(typeof server.attributes[`gen_ai.latency.${k}`], 'number', k);
    }
    // The engine's request lies inside the proxy's.
    assert.ok(server.start >= span.start - 1000000n && server.end <= span.end + 1000000n); // 1 ms: two processes' clocks
  }
  const continued = lines.find((l) => l.trace_id === CLIENT_TRACE);
  assert.ok(continued, 'the client trace is continued');
  const span = proxySpans.find((s) => s.traceId === CLIENT_TRACE);
  assert.equal(span.parentSpanId, CLIENT_SPAN);
  assert.equal(span.traceState, 'vendor=x');
  assert.notEqual(lines.filter((l) => l.trace_id !== CLIENT_TRACE)[0].trace_id, CLIENT_TRACE);
  // Metrics: cumulative histograms; the last export (at stop) counts all three requests.
  const last = otlp.metrics.at(-1).resourceMetrics[0].scopeMetrics[0].metrics;
  const byName = Object.fromEntries(last.map((m) => [m.name, m]));
  const duration = byName['gen_ai.client.operation.duration'];
  assert.equal(duration.unit, 's');
  assert.equal(duration.histogram.aggregationTemporality, 2);
  assert.equal(duration.histogram.dataPoints.reduce((n, p) => n + Number(p.count), 0), 3);
  assert.deepEqual(duration.histogram.dataPoints[0].explicitBounds,
    [0.01, 0.02, 0.04, 0.08, 0.16, 0.32, 0.64, 1.28, 2.56, 5.12, 10.24, 20.48, 40.96, 81.92]);
  const tokens = byName['gen_ai.client.token.usage'];
  assert.equal(tokens.unit, '{token}');
  const output = tokens.histogram.dataPoints.find((p) => attrs(p.attributes)['gen_ai.token.type'] === 'output');
  assert.equal(Number(output.sum), lines.reduce((n, l) => n + l.completion_tokens, 0));
  assert.equal(Number(byName['gen_ai.client.operation.time_to_first_chunk'].histogram.dataPoints[0].count), 2);
  // Without OTEL_SEMCONV_STABILITY_OPT_IN: v1.41.0's names only.
  assert.ok(Object.keys(byName).every((n) => !n.startsWith('gen_ai.client.inference.')), Object.keys(byName).join());
});

// Issue 39: the latest GenAI conventions (open-telemetry/semantic-conventions-genai, its
// non-normative/migration.md) under OTEL_SEMCONV_STABILITY_OPT_IN, decoded with the official
// decoders; the guide's cache-hit ratio query evaluated by promtool over the proxy's own series.
test('OTEL_SEMCONV_STABILITY_OPT_IN=gen_ai_latest_experimental: the renamed metrics, and the guide\'s cache-hit query works', async () => {
  const otlp = await receiver();
  const st = await stack(['--otlp-endpoint', otlp.url, '--otlp-metrics-interval', '200ms'],
    { OTEL_BSP_SCHEDULE_DELAY: '50', OTEL_SEMCONV_STABILITY_OPT_IN: 'http, gen_ai_latest_experimental' });
  // One long system prompt four times: the simulator's prefix cache serves it from the second on.
  const system = Array.from({ length: 200 }, (_, i) => `rule ${i}`).join(' ');
  const client = new OpenAI({ baseURL: `${st.proxyURL}/v1`, apiKey: 'unused', maxRetries: 0 });
  let page = '';
  try {
    assert.match(st.line, /GenAI metrics as gen_ai_latest_experimental/);
    for (let i = 0; i < 4; i += 1) {
      const s = await client.chat.completions.create({
        model: 'sim-model', messages: [{ role: 'system', content: system }, { role: 'user', content: `q${i}` }],
        max_tokens: 3, stream: true, stream_options: { include_usage: true },
      });
      for await (const c of s) void c;
    }
    // The proxy counts a request when it finishes its line, which can be just after the client
    // read the last byte: the page once all four are counted (CI once read it with three).
    page = await metricsUntil(st.adminURL, /^modelperfobs_requests_total\{[^}]*outcome="ok"[^}]*\} 4(\.0)?$/m);
  } finally {
    await st.stop();
    await otlp.close();
  }
  assert.match(page, /^modelperfobs_requests_total\{[^}]*outcome="ok"[^}]*\} 4(\.0)?$/m);
  const lines = readJsonl(st.ledger);
  assert.equal(lines.length, 4);
  const input = lines.reduce((n, l) => n + l.prompt_tokens, 0);
  const cached = lines.reduce((n, l) => n + (l.cached_prompt_tokens ?? 0), 0);
  assert.ok(cached > 0, 'the prefix cache served some of the prompts');
  // OTLP, decoded by the official decoders: the new names only; usage as monotonic cumulative sums.
  const last = otlp.metrics.at(-1).resourceMetrics[0].scopeMetrics[0].metrics;
  const byName = Object.fromEntries(last.map((m) => [m.name, m]));
  assert.deepEqual(Object.keys(byName).sort(), [
    'gen_ai.client.inference.duration',
    'gen_ai.client.inference.operation.input_tokens',
    'gen_ai.client.inference.operation.output_tokens',
    'gen_ai.client.inference.time_per_output_chunk',
    'gen_ai.client.inference.time_to_first_chunk',
    'gen_ai.client.inference.usage.cache_read.input_tokens',
    'gen_ai.client.inference.usage.input_tokens',
    'gen_ai.client.inference.usage.output_tokens',
  ]);
  const usage = byName['gen_ai.client.inference.usage.input_tokens'].sum;
  assert.equal(usage.isMonotonic, true);
  assert.equal(usage.aggregationTemporality, 2);
  assert.equal(usage.dataPoints.reduce((n, p) => n + Number(p.asInt), 0), input);
  assert.equal(attrs(usage.dataPoints[0].attributes)['gen_ai.token.modality'], 'unknown');
  const read = byName['gen_ai.client.inference.usage.cache_read.input_tokens'].sum;
  assert.equal(read.dataPoints.reduce((n, p) => n + Number(p.asInt), 0), cached);
  assert.equal(Number(byName['gen_ai.client.inference.operation.output_tokens'].histogram.dataPoints[0].sum),
    lines.reduce((n, l) => n + l.completion_tokens, 0));
  assert.equal(Number(byName['gen_ai.client.inference.duration'].histogram.dataPoints[0].count), 4);
  // The spans carry the cache read under the conventions' attribute.
  const spans = otlp.spans.filter((s) => s.kind === 3);
  assert.equal(spans.reduce((n, s) => n + Number(s.attributes['gen_ai.usage.cache_read.input_tokens'] ?? 0), 0), cached);
  // /metrics: the Prometheus spelling of the same names, no v1.41.0 token histogram.
  assert.doesNotMatch(page, /gen_ai_client_token_usage/);
  assert.doesNotMatch(page, /gen_ai_client_operation_time_to_first_chunk/);
  // The migration guide's "Cache hit ratio" query, in the Prometheus 2 spelling of its names, over
  // the proxy's counters as a Prometheus scraping it would have stored them (0, then the page).
  const series = page.split('\n').filter((l) => /^gen_ai_client_inference_usage_(cache_read_)?input_tokens_total\{/.test(l));
  assert.equal(series.length, 2, page);
  const dir = mkdtempSync(join(tmpdir(), 'mpo-promql-'));
  const yaml = [
    'evaluation_interval: 1m',
    'tests:',
    '  - interval: 1m',
    '    input_series:',
    ...series.map((l) => {
      const [name, value] = [l.slice(0, l.lastIndexOf(' ')), l.slice(l.lastIndexOf(' ') + 1)];
      return `      - series: '${name}'\n        values: '0 ${value} ${value} ${value} ${value} ${value}'`;
    }),
    '    promql_expr_test:',
    '      - expr: sum(increase(gen_ai_client_inference_usage_cache_read_input_tokens_total[5m])) / sum(increase(gen_ai_client_inference_usage_input_tokens_total[5m]))',
    '        eval_time: 5m',
    '        exp_samples:',
    `          - value: ${cached / input}`,
  ].join('\n');
  writeFileSync(join(dir, 'ratio.test.yml'), `${yaml}\n`);
  execFileSync('promtool', ['test', 'rules', join(dir, 'ratio.test.yml')], { stdio: 'pipe' });
});

test('OTLP/JSON is spoken when asked', async () => {
  const otlp = await receiver();
  const st = await stack(['--otlp-endpoint', otlp.url, '--otlp-protocol', 'http/json'],
    { OTEL_BSP_SCHEDULE_DELAY: '50', OTEL_METRICS_EXPORTER: 'none' });
  try {
    await chat(st.proxyURL, 1);
    await otlp.until(() => otlp.spans.length >= 1);
  } finally {
    await st.stop();
    await otlp.close();
  }
  const [line] = readJsonl(st.ledger);
  assert.equal(otlp.spans[0].traceId, line.trace_id);
  assert.equal(otlp.spans[0].spanId, line.span_id);
  assert.equal(otlp.metrics.length, 0);
});

test('a 503 with Retry-After is retried and the spans still arrive', async () => {
  const otlp = await receiver((req, res, n) => {
    if (n > 1) return false;
    res.writeHead(503, { 'retry-after': '1' });
    res.end('busy');
    return true;
  });
  const st = await stack(['--otlp-endpoint', otlp.url], { OTEL_BSP_SCHEDULE_DELAY: '50', OTEL_METRICS_EXPORTER: 'none' });
  try {
    await chat(st.proxyURL, 1);
    await otlp.until(() => otlp.spans.length >= 1);
    // The exporter counts the export once it has read the collector's answer: poll for it.
    const exported = /^modelperfobs_otlp_spans_exported_total 1(\.0)?$/m;
    const page = await metricsUntil(st.adminURL, exported);
    assert.match(page, /^modelperfobs_otlp_export_requests_total\{result="retried",signal="traces"\} 1(\.0)?$/m);
    assert.match(page, exported);
  } finally {
    await st.stop();
    await otlp.close();
  }
  assert.equal(otlp.posts, 2);
});

// Collectors that fail in each way: the proxy serves every request and writes every line.
// A collector that refuses: port 1 on loopback, where nothing listens. (A port freed a moment ago
// was taken by another test's server in a parallel run, which answered 4xx: rejected, not refused.)
async function downCollector() {
  return { url: 'http://127.0.0.1:1', close: async () => {} };
}
async function rawCollector(onSocket) {
  const sockets = new Set();
  const s = createTcpServer((c) => { sockets.add(c); c.on('error', () => {}); onSocket(c); });
  await new Promise((resolve) => s.listen(0, '127.0.0.1', resolve));
  return {
    url: `http://127.0.0.1:${s.address().port}`,
    close: () => new Promise((resolve) => { for (const c of sockets) c.destroy(); s.close(resolve); }),
  };
}

for (const [name, make, counted] of [
  ['down (refused)', downCollector, /result="(retried|failed)",signal="traces"\} [1-9]/],
  ['slow (never answers)', () => rawCollector(() => {}), /result="(retried|failed)",signal="traces"\} [1-9]/],
  ['answering garbage', () => rawCollector((c) => c.on('data', () => c.end('garbage\r\n\r\n'))), /result="(retried|failed)",signal="traces"\} [1-9]/],
  ['refusing with 400', () => receiver((req, res) => { res.writeHead(400); res.end('\x00\xffnot protobuf'); return true; }), /result="rejected",signal="traces"\} [1-9]/],
]) {
  test(`a collector ${name} costs the clients nothing`, async () => {
    const collector = await make();
    const st = await stack(['--otlp-endpoint', collector.url, '--drain-timeout', '1'],
      { OTEL_BSP_SCHEDULE_DELAY: '20', OTEL_EXPORTER_OTLP_TIMEOUT: '300', OTEL_METRICS_EXPORTER: 'none' });
    let page = '';
    try {
      const answers = await Promise.all([1, 2, 3, 4].map((i) => chat(st.proxyURL, i)));
      assert.ok(answers.every((a) => a.length > 0));
      // The exporter's failures are counted (polled: they happen on the exporter's own schedule).
      page = await metricsUntil(st.adminURL, counted);
      assert.match(page, counted);
      assert.equal(await chat(st.proxyURL, 5, {}, false) !== '', true);
    } finally {
      await st.stop();
      await collector.close();
    }
    const lines = readJsonl(st.ledger);
    assert.equal(lines.length, 5);
    assert.ok(lines.every((l) => l.outcome === 'ok' && /^[0-9a-f]{32}$/.test(l.trace_id)));
  });
}

// A proxy and a simulator of `engine` settings both sending spans to one receiver while `send`
// runs its requests; the spans as a file. OTLP/JSON from both: the receiver's raw bodies, one per
// line, are what the collector's file exporter writes.
async function tracedRun(engine, send) {
  const otlp = await receiver();
  const dir = mkdtempSync(join(tmpdir(), 'mpo-traces-'));
  const profile = join(dir, 'profile.json');
  writeFileSync(profile, JSON.stringify({ engine }));
  const st = await stack(['--otlp-endpoint', otlp.url],
    { OTEL_EXPORTER_OTLP_PROTOCOL: 'http/json', OTEL_BSP_SCHEDULE_DELAY: '50', OTEL_METRICS_EXPORTER: 'none' },
    ['--otlp-traces-endpoint', `${otlp.url}/v1/traces`, '--profile', profile]);
  try {
    await send(st);
  } finally {
    await st.stop();
    await otlp.close();
  }
  const traces = join(dir, 'traces.jsonl');
  writeFileSync(traces, otlp.raw.join('\n') + '\n');
  return { st, traces };
}

// Decode behind another request's prompt, from vLLM's spans: the simulator reads a 2,000-token prompt in
// chunks of 256 tokens (chunked prefill), each step as long as its chunk, and a short request already
// decoding beside it gets a token a step; three more decode alone afterwards. The spans' prefill windows tell
// the report which decode met the prompt and what it cost (docs/REPORT.md "Decode behind other
// requests' prompts").
test('report --traces finds decode held up by another request\'s prompt from the engine spans', async () => {
  // A stream once its response head came (the simulator sends it on accept, as vLLM does), and its end.
  const open = (baseURL, content, maxTokens) =>
    new OpenAI({ baseURL: `${baseURL}/v1`, apiKey: 'unused', maxRetries: 0 }).chat.completions.create({
      model: 'sim-model', messages: [{ role: 'user', content }], max_tokens: maxTokens, stream: true,
      stream_options: { include_usage: true },
    });
  const drain = async (s) => { for await (const c of s) void c; };
  const longPrompt = Array.from({ length: 2000 }, (_, i) => `w${i}`).join(' ');
  const { st, traces } = await tracedRun(
    { step_base_s: 0.002, step_per_prefill_token_s: 0.0005, max_num_batched_tokens: 256 },
    async (s) => {
      // The short answer is decoding (its first chunk came) when the long prompt arrives: the
      // scheduler, like vLLM's, runs it first and fills the rest of each step with the prompt's chunk.
      // (Sent the other way round, the prompt's chunks fill every step's budget and the short request
      // waits in the queue until they end.)
      const short = (await open(s.proxyURL, 'short one', 40))[Symbol.asyncIterator]();
      await short.next();
      const rest = async () => { while (!(await short.next()).done); };
      await Promise.all([rest(), open(s.proxyURL, longPrompt, 4).then(drain)]);
      for (const i of [2, 3, 4]) await drain(await open(s.proxyURL, `short ${i}`, 40));
    });
  const report = JSON.parse(execFileSync(BIN, ['report', '--input', st.ledger, '--traces', traces, '--format', 'json']));
  const group = report.result.groups[0];
  const d = group.decode_interference;
  assert.ok(d, JSON.stringify(group.ranking));
  assert.equal(d.overlapped, 1, JSON.stringify(d));
  // The short answer beside the prompt: about 8 steps of 0.13 s instead of 2 ms ones.
  assert.ok(d.lost_ms > 500, JSON.stringify(d));
  assert.ok(d.overlapped_tpot_p50_ms > 5 * d.others_tpot_p50_ms, JSON.stringify(d));
  const decode = group.ranking.find((c) => c.candidate === 'decode');
  assert.match(decode.evidence.join('\n'), /decode behind other requests' prompts: 1 of \d+ requests decoded while another's prompt was being read \(vLLM spans/);
});

// First tokens behind a longer prompt, from vLLM's spans: a short request sent once a 2,000-token
// prompt is in (its head came, on accept) waits in the queue while the prompt's chunks fill every
// step (vLLM's rule: waiting requests only within a step's leftover budget); three short ones sent
// alone before are what it is compared with (docs/REPORT.md "First tokens behind longer prompts").
test('report --traces names the first tokens that waited behind a longer prompt from the engine spans', async () => {
  const open = (baseURL, content, maxTokens) =>
    new OpenAI({ baseURL: `${baseURL}/v1`, apiKey: 'unused', maxRetries: 0 }).chat.completions.create({
      model: 'sim-model', messages: [{ role: 'user', content }], max_tokens: maxTokens, stream: true,
      stream_options: { include_usage: true },
    });
  const drain = async (s) => { for await (const c of s) void c; };
  const { st, traces } = await tracedRun(
    { step_base_s: 0.002, step_per_prefill_token_s: 0.0005, max_num_batched_tokens: 256 },
    async (s) => {
      for (const i of [1, 2, 3]) await drain(await open(s.proxyURL, `alone ${i}`, 4));
      for (const i of [1, 2, 3]) {
        const longPrompt = Array.from({ length: 2000 }, (_, w) => `p${i}w${w}`).join(' ');
        const long = await open(s.proxyURL, longPrompt, 4);
        await Promise.all([drain(long), open(s.proxyURL, `held ${i}`, 4).then(drain)]);
      }
    });
  const report = JSON.parse(execFileSync(BIN, ['report', '--input', st.ledger, '--traces', traces, '--format', 'json']));
  const group = report.result.groups[0];
  assert.equal(group.held_prompts.length, 1, JSON.stringify(group.held_prompts));
  const h = group.held_prompts[0];
  assert.match(h.source, /^vLLM spans/);
  assert.equal(h.from_tokens, 0);
  assert.equal(h.longer_from_tokens, 1024, JSON.stringify(h));
  assert.equal(h.held, 3, JSON.stringify(h));
  assert.equal(h.unheld, 3, JSON.stringify(h));
  // Eight steps of about 0.13 s against one of a few ms.
  assert.ok(h.held_ttft_p50_ms > h.unheld_ttft_p50_ms + 500, JSON.stringify(h));
  const md = execFileSync(BIN, ['report', '--input', st.ledger, '--traces', traces]).toString();
  assert.match(md, /\*\*TTFT tail\*\*: first tokens behind longer prompts: 3 of 6 prompts of 0-63 tokens waited while prompts of 1024 tokens or more were being read \(vLLM spans/);
});

test('attribute --traces joins the engine spans to the ledger: queue, prefill and the rest', async () => {
  // Two slots for six requests: the engine queues four of them.
  const { st, traces } = await tracedRun({ max_num_seqs: 2, step_base_s: 0.01 },
    (s) => Promise.all([1, 2, 3, 4, 5, 6].map((i) => chat(s.proxyURL, i))));
  const out = JSON.parse(execFileSync(BIN, ['attribute', '--ledger', st.ledger, '--traces', traces, '--format', 'json']));
  assert.equal(out.schema, 'modelperfobs.engine-trace-attribution.v1');
  assert.equal(out.validity.valid, true, JSON.stringify(out.validity));
  assert.equal(out.result.requests.length, 6);
  assert.equal(out.result.lines_unmatched, 0);
  const truth = readJsonl(st.truth);
  const us = (t) => Date.parse(t) * 1000 + Number(t.slice(23, 26));
  let queued = 0;
  for (const r of out.result.requests) {
    assert.equal(r.grade, 'request-correlated');
    assert.equal(r.correlation_source, 'engine-trace');
    assert.equal(r.match, 'parent');
    const t = truth.find((x) => x.response_id === r.engine_request_id);
    assert.ok(t, r.engine_request_id);
    // The engine's own queue and prefill, exactly as its truth has them (microsecond times).
    assert.ok(Math.abs(r.server_queue_ms - (us(t.scheduled_at) - us(t.arrival_at)) / 1000) < 0.002);
    assert.ok(Math.abs(r.server_prefill_ms - (us(t.first_token_at) - us(t.scheduled_at)) / 1000) < 0.002);
    // What the client saw through the proxy is the server's time plus a little outside it.
    assert.ok(r.outside_ttft_ms >= 0 && r.outside_ttft_ms < 50, `outside ${r.outside_ttft_ms}`);
    if (r.server_queue_ms > 5) queued += 1;
  }
  assert.ok(queued >= 2, `queued requests: ${queued}`);
  assert.ok(out.result.ttft_p95_composition.queue_share > 0);
  const md = execFileSync(BIN, ['attribute', '--ledger', st.ledger, '--traces', traces]).toString();
  assert.match(md, /TTFT p95 is [0-9.]+ ms: .* \d+% is queue on the server/);
  // The report carries the same split.
  const report = JSON.parse(execFileSync(BIN, ['report', '--input', st.ledger, '--traces', traces, '--format', 'json']));
  assert.equal(report.result.engine_trace.requests.length, 6);
  assert.deepEqual(report.result.engine_trace.parts, out.result.parts);
  // Issue 37: the spans split each request's TTFT for the ranking: the engine's own queue decides
  // queueing, and what lies outside the engine is transport's evidence.
  const group = report.result.groups[0];
  assert.match(group.engine_split.source, /^vLLM spans/);
  assert.equal(group.engine_split.requests, 6);
  // The simulator sends its head on accept, as vLLM's HTTP layer does: the run decides that rule.
  assert.equal(group.engine_split.head_rule, 'on_accept', JSON.stringify(group.engine_split));
  assert.ok(group.engine_split.queue_ms.max > 5, JSON.stringify(group.engine_split));
  assert.ok(group.engine_split.outside_ms.p50 >= 0 && group.engine_split.outside_ms.p50 < 50);
  const queueing = group.ranking.find((c) => c.candidate === 'queueing');
  assert.match(queueing.evidence[0], /^vLLM spans .*: the engine held the request in its queue [0-9.]+ ms/);
  assert.ok(Math.abs(queueing.score - group.engine_split.queue_ms.p50 / 500) < 0.01, JSON.stringify(queueing));
  const transport = group.ranking.find((c) => c.candidate === 'transport');
  assert.match(transport.evidence[0], /passed outside the engine/);
  assert.ok(Math.abs(transport.score - group.engine_split.outside_ms.p50 / 200) < 0.01, JSON.stringify(transport));
  const reportMd = execFileSync(BIN, ['report', '--input', st.ledger, '--traces', traces]).toString();
  assert.match(reportMd, /## Engine spans joined to requests \(request-correlated, source engine-trace\)/);
  const html = execFileSync(BIN, ['report', '--input', st.ledger, '--traces', traces, '--format', 'html']).toString();
  assert.match(html, /<section id="engine-spans-joined-to-requests"><h2>Engine spans joined to requests<\/h2>.*TTFT p95 is [0-9.]+ ms/s);
});

// Clients that do not stream (the proxy measures no TTFT): the engine's spans split each request
// all the same. Its decode began at the line's e2e less the engine's decode time; the engine's own
// queue decides queueing, what lies outside the engine's e2e is transport's, and its decode per
// token is decode's (before: "not_enough_evidence: turn on streaming").
test('report --traces judges requests not streamed from the engine spans', async () => {
  // One slot for six requests of 3 tokens at 50 ms a step: the engine queues five of them.
  const { st, traces } = await tracedRun({ max_num_seqs: 1, step_base_s: 0.05 },
    (s) => Promise.all([1, 2, 3, 4, 5, 6].map((i) => chat(s.proxyURL, i, {}, false))));
  const lines = readJsonl(st.ledger);
  assert.equal(lines.length, 6);
  assert.ok(lines.every((l) => l.stream === false && l.ttft_ms === null), JSON.stringify(lines[0]));
  const report = JSON.parse(execFileSync(BIN, ['report', '--input', st.ledger, '--traces', traces, '--format', 'json']));
  const group = report.result.groups[0];
  const split = group.engine_split;
  assert.ok(split, JSON.stringify(group.ranking));
  assert.match(split.source, /^vLLM spans .*\(not streamed\)$/);
  assert.equal(split.not_streamed, true);
  assert.equal(split.requests, 6);
  // Five waited for the one slot, each behind answers of about 0.2 s.
  assert.ok(split.queue_ms.p50 > 100, JSON.stringify(split));
  assert.ok(split.outside_ms.p50 >= 0 && split.outside_ms.p50 < 50, JSON.stringify(split));
  assert.ok(group.engine_tpot_ms.p50 > 30 && group.engine_tpot_ms.p50 < 200, JSON.stringify(group.engine_tpot_ms));
  const score = (name) => group.ranking.find((c) => c.candidate === name);
  assert.equal(group.ranking[0].candidate, 'queueing', JSON.stringify(group.ranking));
  assert.match(score('queueing').evidence[0], /^vLLM spans .*: the engine held the request in its queue [0-9.]+ ms p50 \(over 6 of 6 requests not streamed/);
  assert.ok(Math.abs(score('queueing').score - split.queue_ms.p50 / 500) < 0.01);
  assert.match(score('transport').evidence[0], /ms of e2e \(p50; p90 [0-9.]+ ms\) passed outside the engine/);
  assert.equal(score('not_enough_evidence').score, 0);
  assert.match(score('decode').evidence[0], /the engine's decode took [0-9.]+ ms p50 per token after the first/);
});
