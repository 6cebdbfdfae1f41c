/** glibc's malloc_trim(0): whether memory was given back. null when the addon is not built. */
export declare const trim: (() => boolean) | null;
