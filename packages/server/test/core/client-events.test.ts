/** The in-process client events (core/clients/local-client-events.ts) and the job watch built on them. */
import { describe, expect, test } from 'vitest';
import { LocalClientEvents } from '../../src/core/clients/local-client-events.js';
import { JobWatch, jobOutputTo } from '../../src/core/jobs/job-watch.js';

const owner = { nodeId: 'node-1', epoch: 1 };

describe('LocalClientEvents', () => {
  test('handlers of a type run in subscription order, then the handlers of the event’s key', () => {
    const events = new LocalClientEvents();
    const seen: string[] = [];
    events.subscribeTo('attached', 'a', () => seen.push('key a'));
    events.subscribe('attached', (e) => seen.push(`first ${e.clientId}`));
    events.subscribeTo('attached', 'b', () => seen.push('key b'));
    events.subscribe('attached', (e) => seen.push(`second ${e.clientId}`));
    events.subscribe('detached', () => seen.push('detached'));
    events.publish('attached', { clientId: 'a', owner });
    expect(seen).toEqual(['first a', 'second a', 'key a']);
  });

  test('an event published from a handler reaches every handler after the current one, in publication order', () => {
    const events = new LocalClientEvents();
    const seen: string[] = [];
    events.subscribe('attached', (e) => {
      seen.push(`1 attached ${e.clientId}`);
      events.publish('detached', { clientId: e.clientId, owner });
    });
    events.subscribe('attached', (e) => seen.push(`2 attached ${e.clientId}`));
    events.subscribe('detached', (e) => seen.push(`3 detached ${e.clientId}`));
    events.publish('attached', { clientId: 'x', owner });
    expect(seen).toEqual(['1 attached x', '2 attached x', '3 detached x']);
  });

  test('unsubscribing stops delivery at once, also in the middle of an event; a new subscriber waits for the next', () => {
    const events = new LocalClientEvents();
    const seen: string[] = [];
    let offSecond = () => undefined as void;
    const offFirst = events.subscribe('removed', (e) => {
      seen.push(`first ${e.clientId}`);
      offSecond();
      events.subscribe('removed', (later) => seen.push(`late ${later.clientId}`));
    });
    offSecond = events.subscribe('removed', (e) => seen.push(`second ${e.clientId}`));
    events.publish('removed', { clientId: 'a' });
    expect(seen).toEqual(['first a']);
    offFirst();
    offFirst(); // twice is harmless
    events.publish('removed', { clientId: 'b' });
    expect(seen).toEqual(['first a', 'late b']);
  });

  test('followed tells whether a key has subscribers, and forgets a key whose last subscriber left', () => {
    const events = new LocalClientEvents();
    expect(events.followed('jobOutput', 'j1')).toBe(false);
    const off1 = events.subscribeTo('jobOutput', 'j1', () => undefined);
    const off2 = events.subscribeTo('jobOutput', 'j1', () => undefined);
    expect(events.followed('jobOutput', 'j1')).toBe(true);
    expect(events.followed('jobFinished', 'j1')).toBe(false);
    off1();
    expect(events.followed('jobOutput', 'j1')).toBe(true);
    off2();
    expect(events.followed('jobOutput', 'j1')).toBe(false);
  });

  test('a handler that throws does not keep the event from the others; the publisher gets the error', () => {
    const events = new LocalClientEvents();
    const seen: string[] = [];
    events.subscribe('removed', () => {
      throw new Error('boom');
    });
    events.subscribe('removed', (e) => seen.push(e.clientId));
    expect(() => events.publish('removed', { clientId: 'a' })).toThrow('boom');
    // Delivery is not stuck after a failure.
    expect(() => events.publish('removed', { clientId: 'b' })).toThrow('boom');
    expect(seen).toEqual(['a', 'b']);
  });
});

describe('JobWatch over client events', () => {
  test('passes output of the job’s own client and the finish once, then stops watching', () => {
    const events = new LocalClientEvents();
    const watch = new JobWatch(events);
    const output = jobOutputTo(events);
    const seen: string[] = [];
    expect(output.wants('j1')).toBe(false);
    watch.watch('j1', 'c1', {
      chunk: (jid, stream, text) => seen.push(`${jid} ${stream} ${text}`),
      finished: (jid, status) => seen.push(`${jid} ${status}`),
    });
    expect(output.wants('j1')).toBe(true);
    output.chunk('c1', 'j1', 'stdout', 'hello');
    output.chunk('other', 'j1', 'stdout', 'spoofed');
    output.chunk('c1', 'j2', 'stderr', 'not watched');
    events.publish('jobFinished', { jid: 'j1', status: 'successful' });
    events.publish('jobFinished', { jid: 'j1', status: 'failed' });
    expect(seen).toEqual(['j1 stdout hello', 'j1 successful']);
    expect(output.wants('j1')).toBe(false);
  });

  test('unwatch drops the listener; watching a jid again replaces its listener', () => {
    const events = new LocalClientEvents();
    const watch = new JobWatch(events);
    const seen: string[] = [];
    watch.watch('j1', 'c1', { finished: () => seen.push('old') });
    watch.watch('j1', 'c1', { finished: () => seen.push('new') });
    events.publish('jobFinished', { jid: 'j1', status: 'successful' });
    watch.watch('j2', 'c1', { finished: () => seen.push('j2') });
    watch.unwatch('j2');
    events.publish('jobFinished', { jid: 'j2', status: 'successful' });
    expect(seen).toEqual(['new']);
    expect(events.followed('jobFinished', 'j2')).toBe(false);
  });
});
