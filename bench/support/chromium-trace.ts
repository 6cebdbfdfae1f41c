/**
 * Where a page's main thread spent a traced step: a Chromium performance trace (playwright's
 * `browser.startTracing` / `stopTracing`, Chromium only) summarised by event name, with self time (an event's
 * duration less its children's), for the renderers' main threads (`CrRendererMain`).
 */

/** The categories asked for: top-level tasks, the timeline's events (style, layout, paint, scripts) and V8's. */
export const TRACE_CATEGORIES = [
  'toplevel',
  'devtools.timeline',
  'disabled-by-default-devtools.timeline',
  'v8',
  'v8.execute',
  'blink.user_timing',
];

interface TraceEvent {
  name: string;
  ph: string;
  ts: number;
  dur?: number;
  pid: number;
  tid: number;
  args?: { name?: string; data?: { url?: string } };
}

export interface TraceSummary {
  /** From the first to the last event of the main threads. */
  spanMs: number;
  /** Time inside top-level tasks on the main threads (the rest the thread was idle, e.g. waiting on the network). */
  busyMs: number;
  /** Self time by event name (scripts by their file), largest first. */
  selfMs: [string, number][];
}

const fileOf = (url: string): string => url.split('?')[0]?.split('/').pop() || url || '(no url)';

/** The event's name, with the script's file for the events that run or compile one. */
function keyOf(event: TraceEvent): string {
  const url = event.args?.data?.url;
  return url === undefined ? event.name : `${event.name} ${fileOf(url)}`;
}

/** Complete events ('X') of one thread, with begin/end pairs ('B'/'E') joined into them. */
function completeEvents(events: TraceEvent[]): TraceEvent[] {
  const out: TraceEvent[] = [];
  const open: TraceEvent[] = [];
  for (const event of events) {
    if (event.ph === 'X' && event.dur !== undefined) out.push(event);
    else if (event.ph === 'B') open.push(event);
    else if (event.ph === 'E') {
      const begin = open.pop();
      if (begin) out.push({ ...begin, ph: 'X', dur: event.ts - begin.ts });
    }
  }
  return out.sort((a, b) => a.ts - b.ts || (b.dur ?? 0) - (a.dur ?? 0));
}

/** A trace's events, and the renderer main threads among them as `pid:tid`. */
function parseTrace(trace: Buffer | string): { events: TraceEvent[]; mains: Set<string> } {
  const parsed = JSON.parse(trace.toString()) as { traceEvents?: TraceEvent[] } | TraceEvent[];
  const events = Array.isArray(parsed) ? parsed : (parsed.traceEvents ?? []);
  const mains = new Set(
    events
      .filter((e) => e.ph === 'M' && e.name === 'thread_name' && e.args?.name === 'CrRendererMain')
      .map((e) => `${e.pid}:${e.tid}`),
  );
  return { events, mains };
}

export function summariseTrace(trace: Buffer | string): TraceSummary {
  const { events, mains } = parseTrace(trace);
  const byThread = new Map<string, TraceEvent[]>();
  for (const event of events) {
    const thread = `${event.pid}:${event.tid}`;
    if (!mains.has(thread) || event.ph === 'M') continue;
    const list = byThread.get(thread) ?? [];
    list.push(event);
    byThread.set(thread, list);
  }
  const self = new Map<string, number>();
  let busy = 0;
  let first = Infinity;
  let last = -Infinity;
  for (const list of byThread.values()) {
    const stack: { end: number; key: string }[] = [];
    for (const event of completeEvents(list)) {
      const dur = event.dur ?? 0;
      first = Math.min(first, event.ts);
      last = Math.max(last, event.ts + dur);
      while (stack.length > 0 && (stack[stack.length - 1]?.end ?? 0) <= event.ts) stack.pop();
      const parent = stack[stack.length - 1];
      if (parent) self.set(parent.key, (self.get(parent.key) ?? 0) - dur);
      else busy += dur;
      const key = keyOf(event);
      self.set(key, (self.get(key) ?? 0) + dur);
      stack.push({ end: event.ts + dur, key });
    }
  }
  return {
    spanMs: Number.isFinite(first) ? (last - first) / 1000 : 0,
    busyMs: busy / 1000,
    selfMs: [...self.entries()]
      .map(([k, us]): [string, number] => [k, us / 1000])
      .sort((a, b) => b[1] - a[1]),
  };
}

/** The summary as lines for the bench's progress output: span, busy, then the `top` largest self times. */
export function traceLines(summary: TraceSummary, top = 20): string {
  return [
    `  span ${summary.spanMs.toFixed(1)} ms, main threads busy ${summary.busyMs.toFixed(1)} ms`,
    ...summary.selfMs.slice(0, top).map(([k, ms]) => `  ${ms.toFixed(1).padStart(7)} ms  ${k}`),
  ].join('\n');
}

/**
 * The main threads' timeline, for reading a load step by step: every request sent (ResourceSendRequest) and every
 * top-level task of at least `minMs`, with its longest child events, in ms from the first event.
 */
export function timelineLines(trace: Buffer | string, minMs = 8): string {
  const { events, mains } = parseTrace(trace);
  const own = completeEvents(events.filter((e) => mains.has(`${e.pid}:${e.tid}`) && e.ph !== 'M'));
  const sends = events.filter((e) => e.name === 'ResourceSendRequest');
  const start = Math.min(...own.map((e) => e.ts), ...sends.map((e) => e.ts));
  const lines: [number, string][] = sends.map((e) => [e.ts, `request ${fileOf(e.args?.data?.url ?? '')}`]);
  let end = -Infinity;
  const top = own.filter((e) => {
    if (e.ts < end) return false;
    end = e.ts + (e.dur ?? 0);
    return true;
  });
  for (const task of top) {
    const dur = (task.dur ?? 0) / 1000;
    if (dur < minMs) continue;
    const taskEnd = task.ts + (task.dur ?? 0);
    const children = own
      .filter((e) => e !== task && e.ts >= task.ts && e.ts < taskEnd && (e.dur ?? 0) >= minMs * 250)
      .sort((a, b) => (b.dur ?? 0) - (a.dur ?? 0))
      .slice(0, 4)
      .map((e) => `${keyOf(e)} ${((e.dur ?? 0) / 1000).toFixed(0)}`);
    lines.push([task.ts, `task ${dur.toFixed(0)} ms: ${children.join(', ')}`]);
  }
  return lines
    .sort((a, b) => a[0] - b[0])
    .map(([ts, text]) => `  ${((ts - start) / 1000).toFixed(0).padStart(6)} ms  ${text}`)
    .join('\n');
}
