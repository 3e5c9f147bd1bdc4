// The official openai Node SDK against `modelperfobs simulate`: a real client, over loopback.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { mkdtempSync, readFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createInterface } from 'node:readline';
import OpenAI from 'openai';
import { start, stop, listeningURL } from './processes.mjs';

const BIN = process.env.MPO_BIN;
let sim;
let baseURL;

before(async () => {
  assert.ok(BIN, 'MPO_BIN must point at the modelperfobs binary');
  sim = spawn(BIN, ['simulate', '--listen', '127.0.0.1:0', '--model', 'qwen3'], { stdio: ['ignore', 'pipe', 'inherit'] });
  const lines = createInterface({ input: sim.stdout });
  const first = await new Promise((resolve, reject) => {
    lines.once('line', resolve);
    sim.once('exit', (code) => reject(new Error(`simulate exited early with ${code}`)));
  });
  const m = first.match(/listening on (http:\/\/[^ ]+)/);
  assert.ok(m, `unexpected first line: ${first}`);
  baseURL = `${m[1]}/v1`;
});

after(() => { sim?.kill('SIGTERM'); });

test('openai SDK streams a chat completion with usage from the simulator', async () => {
  const client = new OpenAI({ baseURL, apiKey: 'unused', maxRetries: 0 });
  const stream = await client.chat.completions.create({
    model: 'qwen3',
    messages: [{ role: 'user', content: 'Say something about queues.' }],
    max_tokens: 12,
    stream: true,
    stream_options: { include_usage: true },
  });
  let text = '';
  let contentChunks = 0;
  let usage = null;
  let finish = null;
  for await (const chunk of stream) {
    if (chunk.usage) usage = chunk.usage;
    for (const choice of chunk.choices) {
      if (choice.delta?.content) { text += choice.delta.content; contentChunks += 1; }
      if (choice.finish_reason) finish = choice.finish_reason;
    }
  }
  assert.equal(contentChunks, 12);
  assert.ok(text.trim().split(/\s+/).length >= 12, `text: ${text}`);
  assert.equal(finish, 'length');
  assert.ok(usage, 'the usage chunk arrived');
  assert.equal(usage.completion_tokens, 12);
  assert.equal(usage.total_tokens, usage.prompt_tokens + 12);
});

test('openai SDK gets a typed 404 for an unknown model', async () => {
  const client = new OpenAI({ baseURL, apiKey: 'unused', maxRetries: 0 });
  await assert.rejects(
    client.chat.completions.create({ model: 'nope', messages: [{ role: 'user', content: 'x' }] }),
    (err) => err.status === 404 && /does not exist/.test(err.message),
  );
});

test('openai SDK lists the served model and reads a non-streamed completion', async () => {
  const client = new OpenAI({ baseURL, apiKey: 'unused', maxRetries: 0 });
  const models = await client.models.list();
  assert.deepEqual(models.data.map((m) => m.id), ['qwen3']);
  const res = await client.completions.create({ model: 'qwen3', prompt: 'Hello', max_tokens: 3 });
  assert.equal(res.usage.completion_tokens, 3);
  assert.equal(res.choices[0].finish_reason, 'length');
});

// A request for two choices through the proxy, as an application asks for alternatives: the SDK's
// stream helper assembles each choice from its interleaved chunks (vLLM's shape, which the
// simulator imitates), and the proxy's line counts both choices, their tokens, and times each
// choice's gaps apart (read across choices, one step's two tokens would look 0 ms apart).
test('openai SDK assembles two streamed choices through the proxy, and the line counts both', async () => {
  const dir = mkdtempSync(join(tmpdir(), 'mpo-node-n2-'));
  const ledger = join(dir, 'ledger.jsonl');
  const p = await start(['proxy', '--backend', baseURL.replace(/\/v1$/, ''), '--listen', '127.0.0.1:0',
    '--admin-listen', 'off', '--ledger', ledger]);
  try {
    const client = new OpenAI({ baseURL: `${listeningURL(p.line)}/v1`, apiKey: 'unused', maxRetries: 0 });
    const stream = client.chat.completions.stream({
      model: 'qwen3', messages: [{ role: 'user', content: 'Two ways to say it.' }], max_tokens: 8, n: 2,
      ignore_eos: true, stream_options: { include_usage: true },
    });
    const done = await stream.finalChatCompletion();
    assert.equal(done.choices.length, 2);
    for (const [i, choice] of done.choices.entries()) {
      assert.equal(choice.index, i);
      assert.equal(choice.finish_reason, 'length');
      assert.ok(choice.message.content.trim().split(/\s+/).length >= 4, `choice ${i}: ${choice.message.content}`);
    }
    assert.notEqual(done.choices[0].message.content, done.choices[1].message.content);
    assert.equal(done.usage.completion_tokens, 16);
  } finally {
    await stop(p.child);
  }
  const lines = readFileSync(ledger, 'utf8').trim().split('\n').map((l) => JSON.parse(l));
  assert.equal(lines.length, 1);
  assert.equal(lines[0].choices, 2);
  assert.equal(lines[0].completion_tokens, 16);
  assert.equal(lines[0].content_events, 16);
  assert.ok(lines[0].itl_p50_ms > 1, `itl_p50_ms ${lines[0].itl_p50_ms}: each choice's own gaps`);
});
