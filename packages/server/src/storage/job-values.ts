/** A boolean as the SMALLINT the job tables store it as. */
export const flag = (value: boolean): number => (value ? 1 : 0);

/** PostgreSQL text cannot hold NUL; output is stored with NUL as U+FFFD, like other undecodable bytes. */
export const storable = (text: string): string => text.replaceAll('\u0000', '\uFFFD');
