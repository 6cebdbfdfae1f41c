export const SVC_VERSION = '0.1.0';
