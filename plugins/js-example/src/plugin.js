// A tiny-harness plugin in JavaScript: extends the `tools` section and adds `slugify`.
//
// The exported `plugin` interface is an exported object named after it; the imported `host`
// interface is a module named by its WIT id. Records are plain objects with camelCase fields,
// enums are their case names as strings. A `result` is returned by returning the value (ok) or
// throwing the error record, a plain `{ code, message }` object (err); a thrown `Error` traps,
// which the harness reports as `[plugin.failed]`.

import { log } from 'tiny-harness:plugin/host@0.2.0';

const SLUGIFY = 'slugify';

const PARAMETERS = {
  type: 'object',
  properties: {
    text: { type: 'string', description: 'The title or phrase to turn into a slug.' },
  },
  required: ['text'],
  additionalProperties: false,
};

/** Lower-case ASCII letters and digits; each run of anything else becomes one `-`. */
function slug(text) {
  // No `normalize` here: the engine is built without Intl, so accented letters are separators.
  return text
    .toLowerCase()
    .replace(/[^a-z0-9]+/g, '-')
    .replace(/^-+|-+$/g, '');
}

export const plugin = {
  info() {
    return { name: 'js-example', version: '0.1.0' };
  },

  sections(_ctx) {
    return [
      {
        kind: 'extend',
        name: 'tools',
        body: `To name a file or a heading anchor after a title, call \`${SLUGIFY}\`.`,
      },
    ];
  },

  tools(_ctx) {
    return [
      {
        name: SLUGIFY,
        description: 'Turns a title into a URL slug: lower-case letters and digits joined by dashes.',
        parameters: JSON.stringify(PARAMETERS),
      },
    ];
  },

  invoke(name, args) {
    if (name !== SLUGIFY) {
      throw { code: 'tool.not_found', message: `no tool named "${name}"` };
    }
    const result = slug(JSON.parse(args).text);
    if (result === '') {
      throw { code: 'slugify.empty', message: 'the text has no letters or digits' };
    }
    log('info', `slugified ${result.length} characters`);
    return result;
  },
};
