// The official openai SDK (Responses API) and the official Anthropic TypeScript SDK (Messages API)
// through `modelperfobs proxy` in front of `modelperfobs simulate`: each receives exactly what it
// receives directly, and the proxy's ledger lines agree with the simulator's truth (tokens exact,
// TTFT never earlier than the engine's).
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync, readFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import OpenAI from 'openai';
import { start, stop, listeningURL } from './processes.mjs';
import Anthropic from '@anthropic-ai/sdk';

const dir = mkdtempSync(join(tmpdir(), 'mpo-apis-'));
const ledger = join(dir, 'ledger.jsonl');
const truth = join(dir, 'truth.jsonl');
let sim, proxy, simURL, proxyURL;

before(async () => {
  const s = await start(['simulate', '--listen', '127.0.0.1:0', '--model', 'qwen3', '--reasoning', '--truth', truth]);
  sim = s.child;
  simURL = listeningURL(s.line);
  const p = await start(['proxy', '--backend', simURL, '--listen', '127.0.0.1:0', '--admin-listen', 'off', '--ledger', ledger]);
  proxy = p.child;
  proxyURL = listeningURL(p.line);
});

after(async () => {
  await stop(proxy);
  await stop(sim);
});

async function responsesStream(baseURL, i) {
  const client = new OpenAI({ baseURL: `${baseURL}/v1`, apiKey: 'unused', maxRetries: 0 });
  const stream = await client.responses.create({
    model: 'qwen3', input: `responses question ${i}`, max_output_tokens: 6 + i, stream: true,
  });
  let text = '';
  let reasoning = '';
  let final = null;
  const types = [];
  for await (const event of stream) {
    types.push(event.type);
    if (event.type === 'response.output_text.delta') text += event.delta;
    if (event.type === 'response.reasoning_text.delta') reasoning += event.delta;
    if (event.type === 'response.completed' || event.type === 'response.incomplete') final = event.response;
  }
  return { text, reasoning, usage: final?.usage, status: final?.status, types };
}

async function messagesStream(baseURL, i) {
  const client = new Anthropic({ baseURL, apiKey: 'unused', maxRetries: 0 });
  const stream = client.messages.stream({
    model: 'qwen3', max_tokens: 6 + i, messages: [{ role: 'user', content: `messages question ${i}` }],
  });
  const message = await stream.finalMessage();
  const text = message.content.filter((b) => b.type === 'text').map((b) => b.text).join('');
  const thinking = message.content.filter((b) => b.type === 'thinking').map((b) => b.thinking).join('');
  return { text, thinking, usage: message.usage, stop_reason: message.stop_reason };
}

test('the openai SDK streams a Responses API response through the proxy and gets what it gets directly', async () => {
  for (let i = 0; i < 3; i += 1) {
    const direct = await responsesStream(simURL, i);
    const proxied = await responsesStream(proxyURL, i);
    assert.ok(proxied.text.length > 0, 'output text arrived');
    assert.equal(proxied.text, direct.text);
    assert.equal(proxied.reasoning, direct.reasoning);
    assert.deepEqual(proxied.usage, direct.usage);
    assert.deepEqual(proxied.types, direct.types);
    assert.equal(proxied.usage.output_tokens, 6 + i);
    assert.equal(proxied.status, 'incomplete');  // max_output_tokens ended it
  }
});

test('the Anthropic SDK streams a message through the proxy and gets what it gets directly', async () => {
  for (let i = 0; i < 3; i += 1) {
    const direct = await messagesStream(simURL, i);
    const proxied = await messagesStream(proxyURL, i);
    assert.ok(proxied.text.length > 0, 'text arrived');
    assert.equal(proxied.text, direct.text);
    assert.equal(proxied.thinking, direct.thinking);
    assert.deepEqual(proxied.usage, direct.usage);
    assert.equal(proxied.usage.output_tokens, 6 + i);
    assert.equal(proxied.stop_reason, 'max_tokens');
  }
});

test("the proxy's ledger lines for both APIs agree with the simulator's truth", async () => {
  await stop(proxy);  // flushes the ledger
  await stop(sim);    // flushes the truth
  const lines = readFileSync(ledger, 'utf8').trim().split('\n').map((l) => JSON.parse(l));
  const byId = new Map(readFileSync(truth, 'utf8').trim().split('\n').map((l) => JSON.parse(l))
    .map((t) => [t.observation_id, t]));
  assert.equal(lines.length, 6);
  assert.deepEqual(lines.map((l) => l.operation).sort(), ['messages', 'messages', 'messages', 'responses', 'responses', 'responses']);
  for (const l of lines) {
    const t = byId.get(l.observation_id);
    assert.ok(t, `a truth line for ${l.observation_id}`);
    assert.equal(l.outcome, 'ok');
    assert.equal(l.token_source, 'usage');
    assert.equal(l.completion_tokens, t.completion_tokens);
    assert.equal(l.prompt_tokens, t.prompt_tokens);
    assert.equal(l.cached_prompt_tokens, t.cached_prompt_tokens);
    assert.ok(l.ttft_ms >= t.ttft_ms, `ttft ${l.ttft_ms} ms is not earlier than the engine's ${t.ttft_ms} ms`);
    assert.ok(l.content_events >= 1);
  }
});
