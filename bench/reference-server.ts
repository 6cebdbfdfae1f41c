/**
 * Reference for the status benchmark: a bare Fastify 5 server, logger off, no auth, one route that answers
 * the same JSON body as svcd's GET /api/v1/status. REFERENCE_STATUS_DATA is the `data` object to serve.
 * Listens on 127.0.0.1 on a free port and prints `{"port":N}` on stdout once it accepts connections.
 */
import Fastify from 'fastify';

const raw = process.env['REFERENCE_STATUS_DATA'];
if (!raw) {
  process.stderr.write('reference-server: set REFERENCE_STATUS_DATA to the JSON `data` object to serve\n');
  process.exit(2);
}
const data: unknown = JSON.parse(raw);
// Same shape of work as svcd's route: an async handler awaiting a resolved promise, serialised by Fastify.
const getStatus = (): Promise<unknown> => Promise.resolve(data);

const app = Fastify({ logger: false });
app.get('/api/v1/status', async () => ({ data: await getStatus() }));

await app.listen({ host: '127.0.0.1', port: 0 });
const address = app.server.address();
if (!address || typeof address === 'string') throw new Error('reference-server: no TCP address');
process.stdout.write(`${JSON.stringify({ port: address.port })}\n`);

for (const signal of ['SIGTERM', 'SIGINT'] as const) {
  process.once(signal, () => {
    app.close().then(
      () => process.exit(0),
      () => process.exit(1),
    );
  });
}
