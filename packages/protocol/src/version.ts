/** Version of the agent control protocol (the `v` of every control message). */
export const PROTOCOL_VERSION = 1;
