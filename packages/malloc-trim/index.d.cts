/** glibc's malloc_trim(0): whether memory was given back. null when the addon is not built. */
export declare const trim: (() => boolean) | null;
/** glibc's mmap and trim thresholds set to their defaults, no longer raised: whether both were set. null when not built. */
export declare const keepDefaultThresholds: (() => boolean) | null;
