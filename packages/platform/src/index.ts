export {
  parseDuration,
  formatDuration,
  durationSchema,
  durationToMilliseconds,
  durationTypeError,
} from './duration.js';
export {
  ConfigError,
  SettingError,
  configErrorMap,
  formatZodIssues,
  validateConfig,
  parseTomlConfig,
  loadTomlConfig,
  dropToleratedKeys,
  readErrorReason,
  type ConfigLoadOptions,
  type ToleratedKeys,
} from './config-loader.js';
export { createLogger, type Logger, type LoggerOptions, type LogLevel } from './logger.js';
export { createLineLogger, type LineLogger } from './line-logger.js';
export { onShutdown, type ShutdownOptions, type ShutdownProcess } from './lifecycle.js';
export { describeValue } from './values.js';
export * from './control-peer.js';
export { Backoff, abortableSleep, type BackoffOptions } from './backoff.js';
export { splice, type SpliceChannel } from './splice.js';
export { SocketReadBuffer, type ChunkHandler } from './socket-read-buffer.js';
export { RelayGarbage, RELAY_GC_BYTES } from './relay-garbage.js';
export {
  MemoryReclaim,
  RECLAIM_QUIET_MS,
  reclaimLogFields,
  type MemoryReclaimTiming,
  type ReclaimOutcome,
} from './memory-reclaim.js';
export { keepCHeapThresholds } from './malloc-trim.js';
export {
  countOpenDescriptors,
  countOpenDescriptorsInPool,
  isDescriptorExhaustion,
  readDescriptorLimit,
} from './descriptors.js';
export * from './fs.js';
export { monotonicMs } from './monotonic.js';
export { WebSocketStream, WebSocketProtocolError, type WebSocketStreamOptions } from './ws-socket-stream.js';
export { connectWebSocket, WebSocketHandshakeError, type WebSocketConnectOptions } from './ws-client.js';
export { acceptUpgrade, upgradeHeaderProblem } from './ws-server-handshake.js';
export * from './job-frames.js';
export { readPemFile, type PemKind } from './pem-file.js';
export { EXIT_CONFIG, EXIT_USAGE, exitCodeOf } from './exit-codes.js';
export { parsedString, rejectValue } from './zod-transforms.js';
export * from './secret-redactor.js';
