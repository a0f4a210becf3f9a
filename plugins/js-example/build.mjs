// Builds the plugin: `node build.mjs [OUTPUT]` (default `js-example.wasm`).
import { writeFile } from 'node:fs/promises';
import { fileURLToPath } from 'node:url';
import { componentize } from '@bytecodealliance/componentize-js';

const here = (path) => fileURLToPath(new URL(path, import.meta.url));
const output = process.argv[2] ?? here('js-example.wasm');

const { component } = await componentize({
  sourcePath: here('src/plugin.js'),
  witPath: here('../../wit'),
  worldName: 'harness-plugin',
  // No outbound HTTP and no incoming-request handler: the harness grants neither.
  disableFeatures: ['http', 'fetch-event'],
});
await writeFile(output, component);
