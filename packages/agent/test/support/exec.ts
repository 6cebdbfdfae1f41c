import { join } from 'node:path';
import { tmpdir } from 'node:os';

/** data_dir for agents in tests that run no jobs: nothing is ever written there. */
export const NO_JOBS_DATA_DIR = join(tmpdir(), 'svc-test-no-jobs');
