// The quantile fixture that core's C++ test checks our quantile_cont against was computed by
// DuckDB; this re-computes every value with DuckDB so the two can never drift apart.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { DuckDBInstance } from '@duckdb/node-api';

test('DuckDB quantile_cont gives exactly the values in the fixture', async () => {
  const path = join(process.env.MPO_SOURCE_DIR ?? '.', 'tests/fixtures/SYNTHETIC_quantile_cont_duckdb.json');
  const fixture = JSON.parse(readFileSync(path, 'utf8'));
  const instance = await DuckDBInstance.create(':memory:');
  const con = await instance.connect();
  let checked = 0;
  for (const c of fixture.cases) {
    const list = `[${c.values.map((v) => v.toString()).join(',')}]::DOUBLE[]`;
    for (const [i, q] of fixture.quantiles.entries()) {
      const r = await con.runAndReadAll(`SELECT quantile_cont(x, ${q}) FROM (SELECT unnest(${list}) AS x)`);
      assert.equal(r.getRows()[0][0], c.expected[i], `n=${c.values.length} q=${q}`);
      checked += 1;
    }
  }
  assert.ok(checked >= 40);
});
