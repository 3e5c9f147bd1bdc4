// A client for bench/syscalls.sh: ROUNDS rounds of CONNS connections opened at once, each sending
// one streamed one-token chat request with `Connection: close` and reading the answer to its close.
//   node bench/one_request_per_connection.mjs PORT CONNS ROUNDS
import net from "node:net";

const [port, conns, rounds] = process.argv.slice(2).map(Number);
const body = JSON.stringify({
  model: "sim-model",
  messages: [{ role: "user", content: "hi" }],
  max_tokens: 1,
  ignore_eos: true,
  stream: true,
});
const request =
  "POST /v1/chat/completions HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\n" +
  `Content-Length: ${Buffer.byteLength(body)}\r\nConnection: close\r\n\r\n${body}`;

function one() {
  return new Promise((resolve, reject) => {
    let got = 0;
    const s = net.connect(port, "127.0.0.1", () => s.write(request));
    s.on("data", (d) => (got += d.length));
    s.on("error", reject);
    s.on("close", () => (got > 0 ? resolve(got) : reject(new Error("no answer"))));
  });
}

for (let r = 0; r < rounds; ++r) await Promise.all(Array.from({ length: conns }, one));
