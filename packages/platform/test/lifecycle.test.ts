import { EventEmitter } from 'node:events';
import { afterEach, expect, test, vi } from 'vitest';
import { onShutdown, type ShutdownProcess } from '@svc/platform';

function fakeProcess() {
  const emitter = new EventEmitter();
  const exit = vi.fn<(code: number) => void>();
  const proc: ShutdownProcess = {
    on: (event, listener) => emitter.on(event, listener),
    removeListener: (event, listener) => emitter.removeListener(event, listener),
    exit,
  };
  return { proc, exit, emit: (signal: NodeJS.Signals) => emitter.emit(signal, signal), emitter };
}

afterEach(() => {
  vi.useRealTimers();
});

test('runs the handler once with the signal and exits 0 when it resolves', async () => {
  const { proc, exit, emit } = fakeProcess();
  const handler = vi.fn(() => Promise.resolve());
  onShutdown(handler, { process: proc });
  emit('SIGTERM');
  await vi.waitFor(() => expect(exit).toHaveBeenCalledWith(0));
  expect(handler).toHaveBeenCalledExactlyOnceWith('SIGTERM');
  expect(exit).toHaveBeenCalledTimes(1);
});

test('exits 1 when the handler throws, also synchronously', async () => {
  const rejecting = fakeProcess();
  onShutdown(() => Promise.reject(new Error('boom')), { process: rejecting.proc });
  rejecting.emit('SIGINT');
  await vi.waitFor(() => expect(rejecting.exit).toHaveBeenCalledWith(1));

  const throwing = fakeProcess();
  onShutdown(
    () => {
      throw new Error('boom');
    },
    { process: throwing.proc },
  );
  throwing.emit('SIGTERM');
  await vi.waitFor(() => expect(throwing.exit).toHaveBeenCalledWith(1));
});

test('exits 1 when the handler overruns the timeout, and only once', async () => {
  vi.useFakeTimers();
  const { proc, exit, emit } = fakeProcess();
  let finish = () => {};
  onShutdown(() => new Promise<void>((resolve) => (finish = resolve)), { process: proc, timeoutMs: 5000 });
  emit('SIGTERM');
  await vi.advanceTimersByTimeAsync(4999);
  expect(exit).not.toHaveBeenCalled();
  await vi.advanceTimersByTimeAsync(1);
  expect(exit).toHaveBeenCalledExactlyOnceWith(1);
  finish();
  await vi.advanceTimersByTimeAsync(0);
  expect(exit).toHaveBeenCalledTimes(1);
});

test('a second signal forces exit 1 at once', () => {
  const { proc, exit, emit } = fakeProcess();
  const handler = vi.fn(() => new Promise<void>(() => {}));
  onShutdown(handler, { process: proc });
  emit('SIGTERM');
  emit('SIGINT');
  expect(exit).toHaveBeenCalledExactlyOnceWith(1);
  expect(handler).toHaveBeenCalledTimes(1);
});

test('the returned function removes the listeners', () => {
  const { proc, emitter } = fakeProcess();
  const dispose = onShutdown(() => Promise.resolve(), { process: proc });
  expect(emitter.listenerCount('SIGTERM')).toBe(1);
  dispose();
  expect(emitter.listenerCount('SIGTERM') + emitter.listenerCount('SIGINT')).toBe(0);
});
