// A requester of MCP tasks (the io.modelcontextprotocol/tasks extension of 2026-07-28), for
// the tasks tests of tool-sdk's MCP server: the TypeScript SDK's client at 2026-07-28 with the
// official extension package's task session, which calls a tool, follows the task the server
// makes of the call, and can cancel it.
//
//   node tasks-client.mjs URL TOOL ARGUMENTS_JSON [--cancel-after MS]
//
// prints {"status": ..., "result": ...}: the task's outcome and, when it completed, the tool's
// result. With --cancel-after, the task is cancelled (tasks/cancel) that many milliseconds
// after it started. The SDK's client does not carry the extension's wire shapes itself, so its
// requests go out through `rawDispatch`, the package's hook for that: one JSON-RPC POST each.

import { Client, StreamableHTTPClientTransport } from '@modelcontextprotocol/client';
import {
  createTaskSessionFromClient,
  resultFromTaskOutcome,
} from '@modelcontextprotocol/ext-tasks/client';

const [url, tool, argumentsJson, flag, cancelAfter] = process.argv.slice(2);
if (!url || !tool || !argumentsJson || (flag && flag !== '--cancel-after')) {
  console.error('usage: node tasks-client.mjs URL TOOL ARGUMENTS_JSON [--cancel-after MS]');
  process.exit(2);
}
const version = '2026-07-28';
const clientInfo = { name: 'ext-tasks-peer', version: '1.0.0' };
const client = new Client(clientInfo, {
  capabilities: {},
  versionNegotiation: { mode: { pin: version } },
});
await client.connect(new StreamableHTTPClientTransport(new URL(url)));

let nextId = 0;
async function rawDispatch(request, options) {
  const body = { jsonrpc: '2.0', id: ++nextId, ...request };
  const params = request.params ?? {};
  const headers = {
    'content-type': 'application/json',
    accept: 'application/json, text/event-stream',
    'mcp-protocol-version': version,
    'mcp-method': request.method,
  };
  const name = params.name ?? params.taskId;
  if (name !== undefined) headers['mcp-name'] = name;
  const response = await fetch(url, {
    method: 'POST',
    headers,
    body: JSON.stringify(body),
    signal: options?.signal,
  });
  const text = await response.text();
  let answer;
  if ((response.headers.get('content-type') ?? '').includes('text/event-stream')) {
    for (const line of text.split('\n')) {
      const data = line.startsWith('data:') ? line.slice(5).trim() : '';
      if (data && JSON.parse(data).id === body.id) answer = JSON.parse(data);
    }
  } else if (text) {
    answer = JSON.parse(text);
  }
  if (!answer) throw new Error(`no answer to ${request.method}: HTTP ${response.status} ${text}`);
  return answer.error
    ? { kind: 'error', error: answer.error }
    : { kind: 'result', result: answer.result };
}

const session = createTaskSessionFromClient(client, {
  endpointId: url,
  rawDispatch,
  v2RequestFraming: { protocolVersion: version, clientInfo, clientCapabilities: {} },
});
try {
  const execution = await session.callTool(tool, JSON.parse(argumentsJson));
  if (flag) {
    await new Promise((resolve) => setTimeout(resolve, Number(cancelAfter)));
    await execution.cancel();
  }
  const outcome = await execution.result();
  const result = outcome.status === 'completed' ? resultFromTaskOutcome(outcome) : null;
  console.log(JSON.stringify({ status: outcome.status, result }));
} finally {
  await session.close();
  await client.close();
}
