// The README read top to bottom as a new operator does, then the pages under docs/ (docs/troubleshooting.md goes on
// from the README's walk-through) and the chart's README: `npm start` (the package's own start script, on a free port
// instead of 8888), then every curl and `topology-extender explain|simulate|pending|storage` command of their sh blocks
// in order, on that one server, each answer compared with the JSON block (every field) or text shown after it, or with the JSON of a
// comment right after the command (the fields it shows: the README says so where it shows only some). So an example that depends on what a
// later one does, or on a step the README does not show, fails here. Commands that need a cluster, Helm or Docker
// are listed in NOT_RUN (test/chart runs the Helm ones): a command of another kind fails until it is handled.
import assert from 'node:assert/strict';
import { type ChildProcess, execFile, spawn } from 'node:child_process';
import { once } from 'node:events';
import { readFile } from 'node:fs/promises';
import { createInterface } from 'node:readline';
import { after, before, it } from 'node:test';
import { promisify } from 'node:util';
import { docs } from '../helpers/readme.ts';

const NOT_RUN = [
  /^npm (ci|start|test|run serve)\b/,
  /^kubectl /,
  /^helm /,
  /^docker /,
  /^npx topology-extender serve\b/,
];

/** The CLI's analysis commands, run without a server: their output is compared with the text the README shows. */
const ANALYSIS = ['explain', 'simulate', 'pending', 'storage'];

type Command = { words: string[]; comment: string; heredoc?: string };

/** The commands of a sh block, split as a shell would (quotes, `\` continuations, `#` comments, one heredoc). */
export function shellCommands(text: string): Command[] {
  const out: Command[] = [];
  let words: string[] = [];
  let word = '';
  let inWord = false;
  let comment = '';
  const endWord = () => {
    if (inWord) words.push(word);
    word = '';
    inWord = false;
  };
  let i = 0;
  while (i < text.length) {
    const c = text[i];
    if (c === "'" || c === '"') {
      const end = text.indexOf(c, i + 1);
      word += text.slice(i + 1, end);
      inWord = true;
      i = end + 1;
    } else if (c === '\\' && text[i + 1] === '\n') {
      i += 2;
    } else if (c === '#' && !inWord) {
      const end = text.indexOf('\n', i);
      comment = text.slice(i + 1, end < 0 ? undefined : end).trim();
      i = end < 0 ? text.length : end;
    } else if (c === '\n') {
      endWord();
      const command: Command = { words, comment };
      i++;
      const delimiter = words.find((w) => w.startsWith('<<'))?.slice(2);
      if (delimiter) {
        const end = text.indexOf(`\n${delimiter}\n`, i - 1);
        command.heredoc = text.slice(i, end + 1);
        i = end + delimiter.length + 2;
      }
      if (words.length > 0 || comment) out.push(command);
      words = [];
      comment = '';
    } else if (c === ' ' || c === '\t') {
      endWord();
      i++;
    } else {
      word += c;
      inWord = true;
      i++;
    }
  }
  return out;
}

/** The fenced blocks of each documentation file, in order; `next` is the block right after, in the same file. */
const fileBlocks = docs().map(({ file, text }) =>
  [...text.matchAll(/^```(\w*)\n([\s\S]*?)^```$/gm)].map((m) => ({
    file,
    lang: m[1],
    text: m[2],
    line: text.slice(0, m.index).split('\n').length,
  })),
);

let server: ChildProcess;
let base: string;
before(async () => {
  // What `npm start` runs, on a free port.
  const start: string = JSON.parse(await readFile('package.json', 'utf8')).scripts.start;
  // Leading NAME=VALUE words are the process's environment (the chart's MALLOC_* setting, docs/operating.md: Sizing memory).
  const words = start.split(' ');
  const env = { ...process.env };
  while (/^\w+=/.test(words[0])) {
    const [name, value] = words.shift()!.split('=');
    env[name] = value;
  }
  const [exec, node, ...argv] = words;
  assert.deepEqual([exec, node], ['exec', 'node'], 'the start script execs node (so that npm signals reach it)');
  server = spawn(process.execPath, [...argv, '--port', '0'], { stdio: ['ignore', 'pipe', 'inherit'], env });
  for await (const line of createInterface({ input: server.stdout! })) {
    const port = /"address":"http:\/\/127\.0\.0\.1:(\d+)"/.exec(line)?.[1];
    if (port) {
      base = `http://127.0.0.1:${port}`;
      break;
    }
  }
  assert.ok(base, '`npm start` printed the address it listens on');
  server.stdout!.resume();
});
after(async () => {
  if (server.exitCode === null) {
    server.kill('SIGTERM');
    await once(server, 'exit');
  }
});

it("every curl and explain command of the README and docs/, in the README's order on one `npm start`, answers what it shows", async () => {
  const files = new Map<string, string>();
  let ran = 0;
  for (const [b, block, blocks] of fileBlocks.flatMap((blocks) =>
    blocks.map((block, i) => [i, block, blocks] as const),
  )) {
    if (block.lang !== 'sh') continue;
    const next = blocks[b + 1];
    // The block the README shows as the answer: right after this one, for its last command.
    const shown = next && next.line === block.line + block.text.split('\n').length + 1 ? next : undefined;
    const commands = shellCommands(block.text);
    for (const [c, { words, heredoc }] of commands.entries()) {
      const where = `${block.file} line ${block.line}: ${words.join(' ').slice(0, 100)}`;
      const last = commands.slice(c + 1).every((x) => x.words.length === 0);
      // A comment on a line of its own right after a command is the answer it shows, when it is JSON.
      const following = commands[c + 1];
      const commented = following?.words.length === 0 ? following.comment : '';
      if (words.length === 0) continue;
      if (words[0] === 'cat' && words[1] === '>' && heredoc !== undefined) {
        files.set(words[2], heredoc);
      } else if (words[0] === 'curl') {
        const url = words.find((w) => w.includes('localhost:8888'));
        assert.ok(url, `${where}: a curl to the server npm start runs`);
        const data = words[words.indexOf('-d') + 1];
        const body = !words.includes('-d') ? undefined : data.startsWith('@') ? files.get(data.slice(1)) : data;
        assert.ok(!words.includes('-d') || body !== undefined, `${where}: ${data} is written earlier in the README`);
        const res = await fetch(url.replace(/^(http:\/\/)?localhost:8888/, base), {
          method: body === undefined ? 'GET' : 'POST',
          headers: body === undefined ? {} : { 'content-type': 'application/json' },
          body,
        });
        const text = await res.text();
        assert.equal(res.status, 200, `${where}: ${text}`);
        const some = (() => {
          try {
            return JSON.parse(commented);
          } catch {
            return undefined; // a comment abbreviated with `…`, or no JSON at all
          }
        })();
        if (some !== undefined) assert.partialDeepStrictEqual(JSON.parse(text), some, where);
        // A JSON block shows the whole answer: a field it left out would go unsaid.
        else if (last && shown?.lang === 'json')
          assert.deepStrictEqual(JSON.parse(text), JSON.parse(shown.text), where);
        ran++;
      } else if (words[0] === 'npx' && words[1] === 'topology-extender' && ANALYSIS.includes(words[2])) {
        const { stdout } = await promisify(execFile)(process.execPath, ['src/main.ts', ...words.slice(2)]);
        assert.ok(last && shown?.lang === '', `${where}: the README shows its output`);
        assert.equal(stdout, shown.text, where);
        ran++;
      } else {
        const command = words.join(' ');
        assert.ok(
          NOT_RUN.some((r) => r.test(command)),
          `${where}: a command this test does not run: run it or add it to NOT_RUN`,
        );
      }
    }
  }
  assert.ok(ran >= 13, `ran ${ran} of the commands of the README and docs/troubleshooting.md`);
});
