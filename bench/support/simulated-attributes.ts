/**
 * Tags and labels of a simulated agent, varied and derived from its client id (`<prefix><n>`), so that client-group
 * benchmarks know the members of each group: tags `simulated`, `rack-<n mod 100>`, `even`/`odd`; labels
 * `bench: load-simulator`, `zone: z<n mod 10>`.
 */
export function simulatedAttributes(clientId: string): { tags: string[]; labels: Record<string, string> } {
  const n = Number(/(\d+)$/.exec(clientId)?.[1] ?? '0');
  return {
    tags: ['simulated', `rack-${n % 100}`, n % 2 === 0 ? 'even' : 'odd'],
    labels: { bench: 'load-simulator', zone: `z${n % 10}` },
  };
}
