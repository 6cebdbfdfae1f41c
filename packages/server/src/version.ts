/** svcd's version, reported by GET /status; a test keeps it equal to package.json. */
export const SVCD_VERSION = '0.1.0';
