import { Stack, Title } from '@mantine/core';
import { useQueryClient } from '@tanstack/react-query';
import { useNavigate } from '@tanstack/react-router';
import { useState } from 'react';
import { createSchedule } from '../api/schedules.js';
import { AnchorLink } from '../components/links.js';
import { ScheduleFormCard } from '../components/schedule-form.js';
import { emptyScheduleForm } from '../lib/schedule-form.js';

export function ScheduleNewPage() {
  const navigate = useNavigate();
  const queryClient = useQueryClient();
  const [initial] = useState(emptyScheduleForm);
  return (
    <Stack>
      <AnchorLink to="/schedules" size="sm">
        ← Schedules
      </AnchorLink>
      <Title order={1} size="h2">
        New schedule
      </Title>
      <ScheduleFormCard
        initial={initial}
        submitLabel="Create the schedule"
        save={createSchedule}
        onSaved={(schedule) => {
          void queryClient.invalidateQueries({ queryKey: ['schedules'] });
          void navigate({ to: '/schedules/$id', params: { id: schedule.id } });
        }}
      />
    </Stack>
  );
}
