import { SimpleGrid, TextInput } from '@mantine/core';
import type { StagedOptions } from '../lib/staged-run.js';

/** Batch size, delay and max failures of a staged run (run and schedule forms). */
export function StagedFields({
  value,
  set,
}: {
  value: StagedOptions;
  set: (next: Partial<StagedOptions>) => void;
}) {
  return (
    <SimpleGrid cols={{ base: 1, sm: 3 }}>
      <TextInput
        label="Batch size"
        description="Clients per batch, or a percent (10%); empty: all at once"
        value={value.batchSize}
        onChange={(e) => set({ batchSize: e.currentTarget.value })}
      />
      <TextInput
        label="Delay between batches"
        description="Seconds, or 30s, 5m, 1h"
        value={value.batchDelay}
        onChange={(e) => set({ batchDelay: e.currentTarget.value })}
      />
      <TextInput
        label="Max failures"
        description="Stop starting batches after this many failed jobs, or a percent"
        value={value.maxFailures}
        onChange={(e) => set({ maxFailures: e.currentTarget.value })}
      />
    </SimpleGrid>
  );
}
