// The generators' command: `make new-service|new-rpc|new-interceptor|new-worker` run it with the Makefile's
// variables as options, `npm run new` with none (it asks which generator). In a terminal a missing value is asked
// for; elsewhere (CI, a pipe) it is a one-line error naming the variable. Every value is checked before anything
// is written; a refused one is one line on stderr and exit code 1.
//   node --import tsx generators/cli.ts <service|rpc|interceptor|worker> [--name=…] [--service=…] [--kind=…] [--http=…]
// Hand-written rather than plop: four text questions need node:readline, not plop's 23 MB of prompts and templating.
import path from "node:path";
import { fileURLToPath } from "node:url";
import { parseArgs } from "node:util";
import { apply } from "./apply.js";
import { ask, askGenerator, missing, Prompter, type Terminal } from "./ask.js";
import { type Answers, catalog } from "./catalog.js";
import { GeneratorError } from "./repo.js";

/** The repository: the generators live in its generators/ folder, whatever the working directory. */
const ROOT = path.dirname(path.dirname(fileURLToPath(import.meta.url)));

function parse(argv: string[]): { wanted: string | undefined; given: Answers } {
  try {
    const option = { type: "string" } as const;
    const { positionals, values } = parseArgs({
      args: argv,
      allowPositionals: true,
      options: { name: option, service: option, kind: option, http: option },
    });
    if (positionals.length > 1) throw new GeneratorError(`one generator at a time, not "${positionals.join(" ")}"`);
    return { wanted: positionals[0], given: values as Answers };
  } catch (err) {
    throw new GeneratorError((err as Error).message);
  }
}

async function main(argv: string[], term: Terminal & { interactive: boolean }): Promise<string> {
  const { wanted, given } = parse(argv);
  const generators = catalog(ROOT);
  const names = generators.map((g) => g.name).join(", ");
  let generator = generators.find((g) => g.name === wanted);
  if (wanted !== undefined && !generator) throw new GeneratorError(`no generator "${wanted}": use ${names}`);
  if (!generator && !term.interactive) throw new GeneratorError(`name a generator: ${names}`);
  for (const key of Object.keys(given)) {
    if (generator && !generator.questions.some((q) => q.key === key)) throw new GeneratorError(`${generator.name} takes no --${key}`);
  }

  let prompter: Prompter | undefined;
  let answers = given;
  try {
    if (!generator) {
      prompter = new Prompter(term);
      generator = await askGenerator(generators, prompter, term.output);
    }
    if (term.interactive && missing(generator.questions, given).length > 0) {
      prompter ??= new Prompter(term);
      answers = await ask(generator.questions, given, prompter);
    }
  } finally {
    prompter?.close();
  }
  return `${generator.name}: ${apply(ROOT, generator.plan(ROOT, answers), { generate: true })}`;
}

try {
  const interactive = process.stdin.isTTY === true;
  const written = await main(process.argv.slice(2), { input: process.stdin, output: process.stdout, interactive });
  process.stdout.write(`✔ ${written}\n`);
} catch (err) {
  if (!(err instanceof GeneratorError)) throw err;
  process.stderr.write(`✖ ${err.message}\n`);
  process.exitCode = 1;
}
