// Builds the plugin: `node build.mjs [OUTPUT]` (default `try/plugins/{{plugin_name}}.wasm`).
import { mkdir, writeFile } from 'node:fs/promises';
import { dirname } from 'node:path';
import { fileURLToPath } from 'node:url';
import { componentize } from '@bytecodealliance/componentize-js';

const here = (path) => fileURLToPath(new URL(path, import.meta.url));
const output = process.argv[2] ?? here('try/plugins/{{plugin_name}}.wasm');

const { component } = await componentize({
  sourcePath: here('src/plugin.js'),
  witPath: here('wit'),
  worldName: 'harness-plugin',
  // No outbound HTTP and no incoming-request handler: the harness grants neither by default.
  disableFeatures: ['http', 'fetch-event'],
});
await mkdir(dirname(output), { recursive: true });
await writeFile(output, component);
