// A client for bench/lull.sh: LOOPS connections kept alive, each sending one non-streamed
// one-token chat request, reading its answer, then staying silent for a lull drawn from
// LULL_MS - 2 .. LULL_MS + 2 ms (around the backend's keep-alive time), TRIALS times. Prints one JSON
// object: the statuses counted, the requests sent that got no answer (the connection failed under
// them), and the connections found closed before a request was sent (then sent on a new one).
//   node bench/lull.mjs PORT LOOPS TRIALS LULL_MS
import net from "node:net";

const [port, loops, trials, lullMs] = process.argv.slice(2).map(Number);
const body = JSON.stringify({ model: "sim-model", messages: [{ role: "user", content: "hi" }], max_tokens: 1 });
const request =
  "POST /v1/chat/completions HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\n" +
  `Content-Length: ${Buffer.byteLength(body)}\r\n\r\n${body}`;
const counts = { statuses: {}, no_answer: 0, found_closed: 0 };

function connect() {
  return new Promise((resolve, reject) => {
    const s = net.connect(port, "127.0.0.1", () => resolve(s));
    s.once("error", reject);
    s.on("error", () => {}); // a reset after the answer: the next request finds the connection closed
  });
}

// One request on `s`; resolves to the status, or null when the connection failed first.
function ask(s) {
  return new Promise((resolve) => {
    let buf = Buffer.alloc(0);
    const done = (v) => {
      s.removeAllListeners("data");
      s.removeAllListeners("close");
      s.off("error", failed);
      resolve(v);
    };
    s.on("data", (d) => {
      buf = Buffer.concat([buf, d]);
      const end = buf.indexOf("\r\n\r\n");
      if (end < 0) return;
      const head = buf.subarray(0, end).toString();
      const length = Number(/content-length:\s*(\d+)/i.exec(head)?.[1] ?? 0);
      if (buf.length >= end + 4 + length) done(Number(head.split(" ")[1]));
    });
    const failed = () => done(null);
    s.on("close", failed);
    s.on("error", failed);
    s.write(request, (err) => err && failed());
  });
}

async function loop() {
  let s = await connect();
  for (let t = 0; t < trials; ++t) {
    if (s.destroyed || s.readableEnded || !s.writable) {
      ++counts.found_closed;
      s.destroy();
      s = await connect();
    }
    const status = await ask(s);
    if (status === null) {
      ++counts.no_answer;
      s.destroy();
      s = await connect();
    } else {
      counts.statuses[status] = (counts.statuses[status] ?? 0) + 1;
    }
    await new Promise((r) => setTimeout(r, lullMs - 2 + Math.floor(Math.random() * 5)));
  }
  s.destroy();
}

await Promise.all(Array.from({ length: loops }, loop));
console.log(JSON.stringify(counts));
