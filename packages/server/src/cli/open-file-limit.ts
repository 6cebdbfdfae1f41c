import { isDescriptorExhaustion, readDescriptorLimit, type Logger } from '@svc/platform';
import { descriptorReserve } from '../infra/descriptor-gauge.js';
import { DescriptorExhaustionLog } from '../infra/descriptor-exhaustion.js';

/** The packaged unit's LimitNOFILE=; below it svcd says how many agents its limit allows. */
export const RECOMMENDED_OPEN_FILES = 131_072;

/**
 * Below this many agents the limit is worth a warning at every start: it is the fleet one svcd is built and
 * measured for (BENCHMARKS.md). A machine's usual 20,000 holds 19,000 agents and gets the info line only.
 */
export const WARN_BELOW_AGENTS = 10_000;

/** Agents svcd admits under a soft limit of `limit` descriptors: the limit less the reserve. */
export const agentsAllowedBy = (limit: number): number => limit - descriptorReserve(limit);

/**
 * Logs the open-file limit in effect (each agent holds a descriptor, and the line says how many it allows) and
 * warns when it holds fewer than WARN_BELOW_AGENTS. Node has already raised the soft limit to the hard one at start (node.cc,
 * PlatformInit, as `ulimit -n` cannot be raised past the hard limit by anyone but root), so there is nothing to
 * raise here: only the administrator can lift the hard limit.
 */
export function reportOpenFileLimit(logger: Logger): void {
  const limit = readDescriptorLimit();
  if (!limit)
    return logger.info('open-file limit unknown here: agents are admitted without counting descriptors');
  if (!Number.isFinite(limit.soft)) return logger.info('no open-file limit');
  const fields = { soft: limit.soft, hard: limit.hard, agents_at_most: agentsAllowedBy(limit.soft) };
  logger.info(fields, 'open-file limit');
  if (fields.agents_at_most < WARN_BELOW_AGENTS)
    logger.warn(
      fields,
      `the open-file limit caps svcd at ${fields.agents_at_most} agents; further agents are refused with 503. ` +
        `Raise the hard limit (LimitNOFILE=${RECOMMENDED_OPEN_FILES} in the systemd unit, or ulimit -Hn)`,
    );
}

/**
 * Last line of defence: an EMFILE or ENFILE thrown where no caller caught it (a timer, a stream opened by a
 * dependency) is logged, rate-limited, and svcd goes on; at the limit the failed open has no other effect. Any
 * other uncaught error still ends the process as node would (stack on stderr, exit code 1).
 */
export function surviveDescriptorExhaustion(logger: Logger): void {
  const exhaustion = new DescriptorExhaustionLog(logger);
  process.on('uncaughtException', (err) => {
    if (isDescriptorExhaustion(err)) {
      exhaustion.report('uncaught', err);
      return;
    }
    process.stderr.write(`${err.stack ?? String(err)}\n`);
    process.exit(1);
  });
}
