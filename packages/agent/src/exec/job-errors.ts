import { ControlError } from '@svc/platform';
import { CONTROL_ERRORS } from '@svc/protocol';

/**
 * Why a job did not start, as the `error` answer to `job.run` (svcd records the job as failed with the message).
 * One factory per code.
 */
export const jobErrors = {
  /** `[remote-commands]` or `[remote-scripts]` switched off. */
  disabled: (message: string) => new ControlError(CONTROL_ERRORS.disabled, message),
  /** The allow/deny filters refuse the command line. */
  refused: (message: string) => new ControlError(CONTROL_ERRORS.refused, message),
  /** The process could not be started: bad cwd, interpreter, sudo, script file or spawn error. */
  failed: (message: string) => new ControlError(CONTROL_ERRORS.failed, message),
};
