// The prompts, for a terminal: each missing value is asked for, checked as soon as it is typed and asked again
// with the reason when it cannot be used. node:readline is enough for a few text questions.
import { createInterface } from "node:readline/promises";
import type { Answers, Generator, Question } from "./catalog.js";
import { GeneratorError } from "./repo.js";

export interface Terminal {
  input: NodeJS.ReadableStream;
  output: NodeJS.WritableStream;
}

/**
 * The questions to ask: every one when no value was given at all (`make new-rpc` alone), else only the required
 * ones still missing, so `make new-interceptor NAME=audit` asks nothing and takes the default service.
 */
export function missing(questions: Question[], given: Answers): Question[] {
  const empty = (q: Question) => (given[q.key] ?? "") === "";
  const none = questions.every(empty);
  return questions.filter((q) => empty(q) && (none || q.required));
}

/** One readline session over the terminal (one for every question: lines typed ahead are kept). */
export class Prompter {
  readonly #rl;
  readonly #lines;
  readonly #output;
  #interrupted = false;
  #closed = false;

  constructor(term: Terminal) {
    this.#output = term.output;
    this.#rl = createInterface({ input: term.input, output: term.output });
    // Ctrl-C at a prompt: nothing is written yet.
    this.#rl.on("SIGINT", () => {
      this.#interrupted = true;
      this.#rl.close();
    });
    this.#rl.on("close", () => (this.#closed = true));
    this.#lines = this.#rl[Symbol.asyncIterator]();
  }

  /** Asks `q` until the answer passes its check; `answers` are the ones before it. */
  async question(q: Question, answers: Answers): Promise<string> {
    for (;;) {
      const fallback = q.default?.(answers) ?? "";
      const choices = q.choices ? ` (${q.choices.map((c, i) => `${i + 1} ${c}`).join(", ")})` : "";
      const prompt = `${q.message}${choices}${fallback ? ` [${fallback}]` : ""}: `;
      // Input that has ended (answers piped in ahead) still has its lines to read, but no prompt to redraw.
      if (this.#closed) this.#output.write(prompt);
      else {
        this.#rl.setPrompt(prompt);
        this.#rl.prompt();
      }
      const line = await this.#lines.next();
      if (line.done)
        throw new GeneratorError(this.#interrupted ? "interrupted: nothing written" : `${q.variable} is required: no answer given`);
      const typed = line.value.trim();
      // A choice by its number, too.
      const value = (q.choices && /^\d+$/.test(typed) ? q.choices[Number(typed) - 1] : undefined) ?? (typed || fallback);
      const problem = q.check(value, answers);
      if (problem === undefined) return value;
      this.#output.write(`  ${problem}\n`);
    }
  }

  close(): void {
    this.#rl.close();
  }
}

/**
 * `given` completed with an answer to each question `missing()` names. A given value is checked in its turn, so
 * `make new-rpc SERVICE=nope` is refused before NAME is asked for.
 */
export async function ask(questions: Question[], given: Answers, prompter: Prompter): Promise<Answers> {
  const answers = { ...given };
  const toAsk = missing(questions, given);
  for (const q of questions) {
    if (toAsk.includes(q)) answers[q.key] = await prompter.question(q, answers);
    else if ((answers[q.key] ?? "") !== "") {
      const problem = q.check(answers[q.key]!, answers);
      if (problem !== undefined) throw new GeneratorError(problem);
    }
  }
  return answers;
}

/** Which generator, when none was named (`npm run new`). */
export async function askGenerator(generators: Generator[], prompter: Prompter, output: NodeJS.WritableStream): Promise<Generator> {
  output.write(`${generators.map((g) => `  ${g.name}: ${g.description}`).join("\n")}\n`);
  const names = generators.map((g) => g.name);
  const name = await prompter.question(
    {
      key: "generator",
      variable: "GENERATOR",
      message: "Generator",
      required: true,
      choices: names,
      check: (v) => (names.includes(v) ? undefined : `choose one of ${names.join(", ")}`),
    },
    {},
  );
  return generators.find((g) => g.name === name)!;
}
