// Drives a running tiny-harness with the official A2A JavaScript SDK (@a2a-js/sdk).
//
// Usage: node client.mjs BASE_URL
//
// Over each 1.0 binding the agent card lists (JSON-RPC, HTTP+JSON, then gRPC) it fetches the card,
// sends a blocking message, streams one, gets the task, lists tasks, subscribes to a running
// task and cancels another; then it does a send, a get and a cancel over the card's JSON-RPC
// 0.3 interface with the SDK's 0.3 compatibility transport. The harness must run the scripted
// model of interop/script.toml. Prints one line per check; exits non-zero at the first failure.
//
// With A2A_BEARER_TOKEN set, every call presents it (`Authorization: Bearer`), as a caller of
// the harness's `[[server.callers]]`: only a caller that proves who it is lists its tasks. Over
// gRPC it goes as `authorization` metadata. The gRPC binding is exercised only when the card
// lists it (the harness runs with `server.grpc_bind`).
//
// With A2A_WEBHOOK_URL set (a webhook the harness's `[push] allowed_hosts` lets it reach), it
// also sets a push config on a running task over each 1.0 binding, gets it, lists it, sets and
// deletes a second one, and follows the task to its end; it prints `push-token: TOKEN` for each
// config it leaves, so the caller can check that the webhook heard that task complete with it.

import { randomUUID } from 'node:crypto';
import { Role, TaskState } from '@a2a-js/sdk';
import {
  ClientFactory,
  ClientFactoryOptions,
  JsonRpcTransportFactory,
  RestTransportFactory,
} from '@a2a-js/sdk/client';
import { GrpcTransportFactory } from '@a2a-js/sdk/client/grpc';
import { InterceptingCall } from '@grpc/grpc-js';

const TOKEN = process.env.A2A_BEARER_TOKEN || '';

// fetch with the bearer token, when there is one.
function authenticatedFetch(input, init = {}) {
  if (!TOKEN) {
    return fetch(input, init);
  }
  const headers = new Headers(init.headers);
  headers.set('Authorization', `Bearer ${TOKEN}`);
  return fetch(input, { ...init, headers });
}

// Every gRPC call with the bearer token as metadata, when there is one.
function withToken(options, nextCall) {
  return new InterceptingCall(nextCall(options), {
    start(metadata, listener, next) {
      if (TOKEN) {
        metadata.set('authorization', `Bearer ${TOKEN}`);
      }
      next(metadata, listener);
    },
  });
}

const BINDINGS = ['JSONRPC', 'HTTP+JSON'];

function check(condition, what) {
  if (!condition) {
    throw new Error(`check failed: ${what}`);
  }
  console.log(`ok: ${what}`);
}

function request(text, returnImmediately = false) {
  return {
    // Every field given, empty or not: the SDK's gRPC encoder writes an absent string as
    // "undefined" and iterates every repeated field.
    message: {
      messageId: randomUUID(),
      contextId: '',
      taskId: '',
      role: Role.ROLE_USER,
      parts: [{ content: { $case: 'text', value: text }, mediaType: '', filename: '' }],
      extensions: [],
      referenceTaskIds: [],
    },
    configuration: { returnImmediately, acceptedOutputModes: [] },
  };
}

/** The task id and final state a stream of StreamResponse leaves. */
async function lastTaskState(events) {
  let taskId = '';
  let state = TaskState.TASK_STATE_UNSPECIFIED;
  for await (const event of events) {
    const payload = event.payload;
    if (payload?.$case === 'task') {
      taskId = payload.value.id;
      state = payload.value.status?.state;
    } else if (payload?.$case === 'statusUpdate') {
      taskId = payload.value.taskId;
      state = payload.value.status?.state;
    }
  }
  return { taskId, state };
}

async function exercise(baseUrl, binding) {
  const options = ClientFactoryOptions.createFrom(ClientFactoryOptions.default, {
    preferredTransports: [binding],
    transports: [
      new JsonRpcTransportFactory({ fetchImpl: authenticatedFetch }),
      new RestTransportFactory({ fetchImpl: authenticatedFetch }),
      new GrpcTransportFactory({ grpcCallOptions: { interceptors: [withToken] } }),
    ],
  });
  const client = await new ClientFactory(options).createFromUrl(baseUrl);

  const sent = await client.sendMessage(request('hello'));
  check(sent.status?.state === TaskState.TASK_STATE_COMPLETED, `${binding}: a blocking send completes`);

  const task = await client.getTask({ id: sent.id, historyLength: 1 });
  check(task.status?.state === TaskState.TASK_STATE_COMPLETED, `${binding}: getTask`);
  check(task.history.length === 1, `${binding}: getTask trims history to 1`);

  const page = await client.listTasks({
    tenant: '',
    contextId: sent.contextId,
    status: TaskState.TASK_STATE_UNSPECIFIED,
    pageToken: '',
  });
  check(page.tasks.length === 1 && page.tasks[0].id === sent.id, `${binding}: listTasks by context`);

  const streamed = await lastTaskState(client.sendMessageStream(request('stream')));
  check(streamed.state === TaskState.TASK_STATE_COMPLETED, `${binding}: a stream ends completed`);

  const running = await client.sendMessage(request('subscribe', true));
  const followed = await lastTaskState(client.resubscribeTask({ tenant: '', id: running.id }));
  check(followed.state === TaskState.TASK_STATE_COMPLETED, `${binding}: resubscribeTask follows to the end`);

  const doomed = await client.sendMessage(request('cancel me', true));
  const canceled = await client.cancelTask({ tenant: '', id: doomed.id });
  check(canceled.status?.state === TaskState.TASK_STATE_CANCELED, `${binding}: cancelTask`);

  if (process.env.A2A_WEBHOOK_URL) {
    await pushConfigs(client, binding, process.env.A2A_WEBHOOK_URL);
  }
}

/** The four push-config calls on a running task, which then ends with a config in place. */
async function pushConfigs(client, binding, webhook) {
  const running = await client.sendMessage(request('push me', true));
  const slug = binding.toLowerCase().replace('+', '-');
  const token = `js-${slug}-${randomUUID().slice(0, 8)}`;
  const url = `${webhook}/js/${slug}`;
  // Every field given, for the gRPC encoder (see request()).
  const config = (id, tokenValue) => ({ tenant: '', id, taskId: running.id, url, token: tokenValue });
  const created = await client.createTaskPushNotificationConfig(config('kept', token));
  check(created.id === 'kept' && created.url === url, `${binding}: createTaskPushNotificationConfig`);
  const got = await client.getTaskPushNotificationConfig({ tenant: '', taskId: running.id, id: 'kept' });
  check(got.url === url && got.token === token, `${binding}: getTaskPushNotificationConfig`);
  await client.createTaskPushNotificationConfig(config('dropped', 'dropped'));
  const listRequest = { tenant: '', taskId: running.id, pageSize: 0, pageToken: '' };
  let listed = await client.listTaskPushNotificationConfig(listRequest);
  const ids = listed.configs.map((c) => c.id).sort();
  check(ids.join(',') === 'dropped,kept', `${binding}: listTaskPushNotificationConfig`);
  await client.deleteTaskPushNotificationConfig({ tenant: '', taskId: running.id, id: 'dropped' });
  listed = await client.listTaskPushNotificationConfig(listRequest);
  check(
    listed.configs.length === 1 && listed.configs[0].id === 'kept',
    `${binding}: deleteTaskPushNotificationConfig`,
  );
  // Polled, not followed: the task may have ended by now, and a subscription to an ended task
  // is refused.
  const ended = [
    TaskState.TASK_STATE_COMPLETED,
    TaskState.TASK_STATE_FAILED,
    TaskState.TASK_STATE_CANCELED,
    TaskState.TASK_STATE_REJECTED,
  ];
  let task = await client.getTask({ tenant: '', id: running.id, historyLength: 0 });
  for (let i = 0; i < 300 && !ended.includes(task.status?.state); i++) {
    await new Promise((resolve) => setTimeout(resolve, 100));
    task = await client.getTask({ tenant: '', id: running.id, historyLength: 0 });
  }
  check(task.status?.state === TaskState.TASK_STATE_COMPLETED, `${binding}: the pushed task completes`);
  console.log(`push-token: ${token}`);
}

/** A send, a get and a cancel over the card's JSON-RPC 0.3 interface. */
async function exerciseLegacy(baseUrl) {
  const card = await (await fetch(`${baseUrl}/.well-known/agent-card.json`)).json();
  const legacy = card.supportedInterfaces.filter(
    (i) => i.protocolBinding === 'JSONRPC' && i.protocolVersion.startsWith('0.3'),
  );
  check(legacy.length === 1, 'the card lists a JSON-RPC 0.3 interface');
  const options = ClientFactoryOptions.createFrom(ClientFactoryOptions.default, {
    transports: [
      new JsonRpcTransportFactory({
        legacyCompat: { enabled: true },
        fetchImpl: authenticatedFetch,
      }),
    ],
  });
  const legacyCard = { ...card, supportedInterfaces: legacy };
  const client = await new ClientFactory(options).createFromAgentCard(legacyCard);

  const sent = await client.sendMessage(request('hello 0.3'));
  check(sent.status?.state === TaskState.TASK_STATE_COMPLETED, 'JSONRPC 0.3: a blocking send completes');
  const task = await client.getTask({ id: sent.id });
  check(task.id === sent.id && task.status?.state === TaskState.TASK_STATE_COMPLETED, 'JSONRPC 0.3: getTask');
  const doomed = await client.sendMessage(request('cancel me', true));
  const canceled = await client.cancelTask({ id: doomed.id });
  check(canceled.status?.state === TaskState.TASK_STATE_CANCELED, 'JSONRPC 0.3: cancelTask');
}

async function main() {
  const baseUrl = process.argv[2];
  if (!baseUrl) {
    console.error('usage: node client.mjs BASE_URL');
    process.exit(2);
  }
  const card = await (await fetch(`${baseUrl}/.well-known/agent-card.json`)).json();
  check(card.name === 'tiny-harness', 'the card is fetched');
  const bindings = [...BINDINGS];
  if (card.supportedInterfaces.some((i) => i.protocolBinding === 'GRPC')) {
    bindings.push('GRPC');
  }
  for (const binding of bindings) {
    await exercise(baseUrl, binding);
  }
  await exerciseLegacy(baseUrl);
  console.log('javascript @a2a-js/sdk: all checks passed');
}

main().catch((error) => {
  console.error(error);
  process.exit(1);
});
