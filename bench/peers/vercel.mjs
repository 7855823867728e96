// The Vercel AI SDK peer of the agent-loop bench: generateText's tool loop over ai/test's
// MockLanguageModelV4, the same `add` tool, T turns of N parallel calls each, then a text
// turn. Prints one JSON line per shape: {"shape":"T10_N1","ns_per_run":...,"runs":...}.
// Run by bench/run with NODE_PATH pointing at the packages it installed.
import { generateText, tool, stepCountIs } from 'ai';
import { MockLanguageModelV4 } from 'ai/test';
import { z } from 'zod';

const usage = {
  inputTokens: { total: 10, noCache: 10, cacheRead: 0, cacheWrite: 0 },
  outputTokens: { total: 5, text: 5, reasoning: 0 },
};

function model(turns, calls) {
  let step = 0;
  return new MockLanguageModelV4({
    doGenerate: async () => {
      const current = step++;
      if (current < turns) {
        const content = [];
        for (let c = 0; c < calls; c++) {
          content.push({
            type: 'tool-call',
            toolCallId: `call_${current}_${c}`,
            toolName: 'add',
            input: JSON.stringify({ a: 2, b: 3 }),
          });
        }
        return { content, finishReason: { unified: 'tool-calls', raw: 'tool_use' }, usage, warnings: [] };
      }
      return {
        content: [{ type: 'text', text: 'done' }],
        finishReason: { unified: 'stop', raw: 'end_turn' },
        usage,
        warnings: [],
      };
    },
  });
}

const add = tool({
  description: 'Adds two numbers.',
  inputSchema: z.object({ a: z.number().int(), b: z.number().int() }),
  execute: async ({ a, b }) => a + b,
});

async function once(turns, calls) {
  const result = await generateText({
    model: model(turns, calls),
    tools: { add },
    prompt: 'go',
    stopWhen: stepCountIs(turns + 1),
  });
  const toolCalls = result.steps.reduce((n, s) => n + s.toolCalls.length, 0);
  if (result.text !== 'done' || toolCalls !== turns * calls) {
    throw new Error(`unexpected run: text=${result.text} calls=${toolCalls}`);
  }
}

const shapes = (process.argv[2] || 'T1_N1,T1_N8,T10_N1,T10_N8,T50_N1,T100_N1').split(',');
const budgetMs = Number(process.env.PEER_BUDGET_MS || 2000);
// Warm every shape first (the JIT), so that the first one measured does not pay for it.
const warmAll = performance.now() + budgetMs;
while (performance.now() < warmAll) {
  for (const shape of shapes) {
    const [, t, n] = shape.match(/T(\d+)_N(\d+)/);
    await once(Number(t), Number(n));
  }
}
for (const shape of shapes) {
  const [, t, n] = shape.match(/T(\d+)_N(\d+)/);
  const turns = Number(t);
  const calls = Number(n);
  // Warm up, then as many runs as fit the budget; the median of 10 batches is reported.
  const warmEnd = performance.now() + budgetMs / 4;
  while (performance.now() < warmEnd) await once(turns, calls);
  const batches = [];
  let runs = 0;
  const end = performance.now() + budgetMs;
  while (batches.length < 10 || performance.now() < end) {
    const per = Math.max(1, Math.round(200 / (turns * calls)));
    const started = process.hrtime.bigint();
    for (let i = 0; i < per; i++) await once(turns, calls);
    batches.push(Number(process.hrtime.bigint() - started) / per);
    runs += per;
    if (batches.length >= 200) break;
  }
  batches.sort((a, b) => a - b);
  const median = batches[Math.floor(batches.length / 2)];
  console.log(JSON.stringify({ peer: 'vercel-ai', shape, ns_per_run: median, runs }));
}
