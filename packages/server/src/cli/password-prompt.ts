import { createInterface } from 'node:readline';
import { Writable, type Readable } from 'node:stream';

/**
 * Reads a password: with a terminal, prompts without echo; otherwise reads the first line of stdin, so scripts can
 * pipe it in.
 */
export async function readPassword(
  prompt: string,
  input: Readable & { isTTY?: boolean; setRawMode?: (raw: boolean) => void } = process.stdin,
  output: Writable = process.stderr,
): Promise<string> {
  if (!input.isTTY) {
    const rl = createInterface({ input, terminal: false });
    for await (const line of rl) {
      rl.close();
      return line;
    }
    throw new Error('no password on standard input');
  }
  output.write(prompt);
  let muted = false;
  const mutedOutput = new Writable({
    write(chunk: Buffer, _enc, done) {
      if (!muted) output.write(chunk);
      done();
    },
  });
  const rl = createInterface({ input, output: mutedOutput, terminal: true });
  muted = true;
  try {
    return await new Promise<string>((resolvePassword, reject) => {
      rl.once('line', resolvePassword);
      rl.once('SIGINT', () => reject(new Error('cancelled')));
      rl.once('close', () => reject(new Error('no password entered')));
    });
  } finally {
    rl.close();
    output.write('\n');
  }
}
