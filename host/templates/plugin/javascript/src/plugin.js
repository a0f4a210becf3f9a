// The `{{plugin_name}}` plugin for tiny-harness: defines the `{{plugin_name}}` section of the
// system prompt and adds the `{{tool_name}}` tool.
//
// The exported `plugin` interface is an exported object named after it; the imported `host`
// interface is a module named by its WIT id. Records are plain objects with camelCase fields,
// enums are their case names as strings. A `result` is returned by returning the value (ok) or
// throwing the error record, a plain `{ code, message }` object (err); a thrown `Error` traps,
// which the harness reports as `[plugin.failed]`.

import { log } from 'tiny-harness:plugin/host@{{wit_version}}';

// The plugin's name: in logs, in `harness plugins`, and the name of its section.
const NAME = '{{plugin_name}}';
const VERSION = '0.1.0';
// The tool's name: unique across the plugins a harness loads.
const TOOL = '{{tool_name}}';

const PARAMETERS = {
  type: 'object',
  properties: {
    who: { type: 'string', description: 'The name of the person to greet.' },
  },
  required: ['who'],
  additionalProperties: false,
};

export const plugin = {
  info() {
    return { name: NAME, version: VERSION };
  },

  // Called once at start-up: edits to the system prompt.
  sections(ctx) {
    const body = `${ctx.selfCard.name} can greet a person by name with \`${TOOL}\`: call it when asked to greet someone.`;
    return [{ kind: 'define', name: NAME, body }];
  },

  // Called once at start-up: the tools, each with a JSON Schema for its arguments.
  tools(_ctx) {
    return [
      { name: TOOL, description: 'Greets a person by name.', parameters: JSON.stringify(PARAMETERS) },
    ];
  },

  // Runs one call. The host has checked `args` against the tool's schema; the text returned is
  // what the model reads, a thrown `{ code, message }` reaches it as `[code] message`.
  invoke(name, args) {
    if (name !== TOOL) {
      throw { code: 'tool.not_found', message: `no tool named "${name}"` };
    }
    const who = JSON.parse(args).who.trim();
    if (who === '') {
      throw { code: 'greet.no_name', message: '`who` is blank: give a name' };
    }
    log('info', `greeting ${who.length} characters`);
    return `Hello, ${who}, from ${NAME}!`;
  },
};
