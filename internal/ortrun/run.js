// Runs an ONNX model in onnxruntime-node for Locus's tests (package ortrun).
// Sessions use one thread: the tests run many small models, often several processes at once.
// Reads one JSON request on stdin and writes one JSON reply on stdout:
//   {"jobs": [{"model": PATH, "inputs": {NAME: {"type": "float32"|"int64", "dims": [...], "data": [...]}}}, ...]}
//     -> {"results": [{"outputs": {NAME: {"dims": [...], "data": [...]}}} or {"error": MESSAGE}, ...]}
//   {"model": PATH, "greedy": {"prompts": [[ids...], ...], "steps": N, "context": C}}
//     -> {"generated": [[ids...], ...]}: N tokens each, argmax of the last position's
//        logits of output "logits", fed back as input "ids" (the last C tokens each step).
'use strict';
const ort = require('onnxruntime-node');

async function main() {
  const chunks = [];
  for await (const c of process.stdin) chunks.push(c);
  const req = JSON.parse(Buffer.concat(chunks).toString('utf8'));
  if (req.jobs) {
    const results = [];
    for (const job of req.jobs) {
      try {
        results.push({ outputs: await run(job) });
      } catch (e) {
        results.push({ error: String(e && e.message || e) });
      }
    }
    process.stdout.write(JSON.stringify({ results }));
    return;
  }
  const session = await ort.InferenceSession.create(req.model, { intraOpNumThreads: 1, interOpNumThreads: 1 });
  if (req.greedy) {
    const generated = [];
    for (const prompt of req.greedy.prompts) {
      const seq = prompt.slice();
      const out = [];
      for (let i = 0; i < req.greedy.steps; i++) {
        const ctx = seq.slice(Math.max(0, seq.length - req.greedy.context));
        const ids = new ort.Tensor('int64', BigInt64Array.from(ctx.map(BigInt)), [1, ctx.length]);
        const res = await session.run({ ids });
        const logits = res.logits;
        const vocab = logits.dims[2];
        const last = logits.data.subarray((ctx.length - 1) * vocab, ctx.length * vocab);
        let best = 0;
        for (let v = 1; v < vocab; v++) if (last[v] > last[best]) best = v;
        seq.push(best);
        out.push(best);
      }
      generated.push(out);
    }
    process.stdout.write(JSON.stringify({ generated }));
  }
}

async function run(job) {
  const session = await ort.InferenceSession.create(job.model, { intraOpNumThreads: 1, interOpNumThreads: 1 });
  const feeds = {};
  for (const [name, t] of Object.entries(job.inputs)) {
    const data = t.type === 'int64' ? BigInt64Array.from(t.data.map(BigInt)) : Float32Array.from(t.data);
    feeds[name] = new ort.Tensor(t.type, data, t.dims);
  }
  const res = await session.run(feeds);
  const outputs = {};
  for (const [name, t] of Object.entries(res)) {
    outputs[name] = { dims: t.dims, data: Array.from(t.data, Number) };
  }
  return outputs;
}

main().catch((e) => { process.stderr.write(String(e && e.stack || e) + '\n'); process.exit(1); });
