// The official openai SDK through `modelperfobs proxy` (unmodified, same content as directly),
// then the DuckDB query of docs/FORMATS.md on the ledger the proxy wrote.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync, readFileSync } from 'node:fs';
import { execFileSync } from 'node:child_process';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import OpenAI from 'openai';
import { BIN, start, stop, listeningURL } from './processes.mjs';
import { DuckDBInstance } from '@duckdb/node-api';

const dir = mkdtempSync(join(tmpdir(), 'mpo-node-'));
const ledger = join(dir, 'runs', 'qwen', 'model-perf.jsonl');
let sim, proxy, simURL, proxyURL;

before(async () => {
  const s = await start(['simulate', '--listen', '127.0.0.1:0', '--model', 'qwen3']);
  sim = s.child;
  simURL = listeningURL(s.line);
  const p = await start(['proxy', '--backend', simURL, '--listen', '127.0.0.1:0', '--admin-listen', 'off', '--ledger', ledger]);
  proxy = p.child;
  proxyURL = listeningURL(p.line);
});

after(async () => {
  if (proxy.exitCode === null) await stop(proxy);
  await stop(sim);
});

async function streamText(baseURL, i) {
  const client = new OpenAI({ baseURL: `${baseURL}/v1`, apiKey: 'unused', maxRetries: 0 });
  const stream = await client.chat.completions.create({
    model: 'qwen3', messages: [{ role: 'user', content: `question ${i}` }], max_tokens: 6 + i,
    stream: true, stream_options: { include_usage: true },
  });
  let text = '';
  let usage = null;
  for await (const chunk of stream) {
    if (chunk.usage) usage = chunk.usage;
    text += chunk.choices[0]?.delta?.content ?? '';
  }
  return { text, usage };
}

test('the openai SDK streams through the proxy and gets the same content as directly', async () => {
  for (let i = 0; i < 3; i += 1) {
    const direct = await streamText(simURL, i);
    const proxied = await streamText(proxyURL, i);
    assert.equal(proxied.text, direct.text);
    assert.deepEqual(proxied.usage, direct.usage);
  }
});

test("DuckDB runs the query of docs/FORMATS.md on the proxy's ledger", async () => {
  await stop(proxy);  // flushes the ledger
  const lines = readFileSync(ledger, 'utf8').trim().split('\n');
  assert.equal(lines.length, 3);
  const db = await DuckDBInstance.create(':memory:');
  const con = await db.connect();
  const r = await con.runAndReadAll(`
    SELECT model, count(*) AS requests,
           quantile_cont(ttft_ms, 0.95) AS ttft_p95_ms,
           quantile_cont(tpot_ms, 0.95) AS tpot_p95_ms,
           quantile_cont(output_tokens_per_second, 0.5) AS output_tok_s_p50,
           sum(completion_tokens) AS completion_tokens
    FROM read_json_auto('${ledger}') GROUP BY model`);
  const rows = r.getRowObjects();
  assert.equal(rows.length, 1);
  assert.equal(Number(rows[0].requests), 3);
  assert.equal(Number(rows[0].completion_tokens), 6 + 7 + 8);
  assert.ok(rows[0].ttft_p95_ms > 0);
  assert.ok(rows[0].tpot_p95_ms > 0);
  assert.ok(rows[0].output_tok_s_p50 > 0);
});

test("report's percentiles equal DuckDB's quantile_cont on the same ledger", async () => {
  if (proxy.exitCode === null) await stop(proxy);
  const report = JSON.parse(execFileSync(BIN, ['report', '--input', ledger, '--format', 'json'], { encoding: 'utf8' }));
  assert.equal(report.schema, 'modelperfobs.report.v1');
  const group = report.result.groups[0];
  const db = await DuckDBInstance.create(':memory:');
  const con = await db.connect();
  const r = await con.runAndReadAll(`
    SELECT quantile_cont(ttft_ms, 0.5) AS t50, quantile_cont(ttft_ms, 0.95) AS t95, quantile_cont(ttft_ms, 0.99) AS t99,
           quantile_cont(tpot_ms, 0.95) AS p95, quantile_cont(e2e_ms, 0.9) AS e90, max(e2e_ms) AS emax
    FROM read_json_auto('${ledger}')`);
  const row = r.getRowObjects()[0];
  assert.equal(group.ttft_ms.p50, row.t50);
  assert.equal(group.ttft_ms.p95, row.t95);
  assert.equal(group.ttft_ms.p99, row.t99);
  assert.equal(group.tpot_ms.p95, row.p95);
  assert.equal(group.e2e_ms.p90, row.e90);
  assert.equal(group.e2e_ms.max, row.emax);
});
