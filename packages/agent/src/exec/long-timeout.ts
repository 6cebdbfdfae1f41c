/** setTimeout accepts at most this many milliseconds (about 24.8 days); longer delays fire at once. */
const MAX_TIMER_MS = 2 ** 31 - 1;

/** Like setTimeout, for delays of any length (timeout_sec goes up to 31 days); returns a cancel function. */
export function setLongTimeout(ms: number, callback: () => void): () => void {
  const due = Date.now() + ms;
  let timer: NodeJS.Timeout;
  const arm = (left: number) => {
    timer = setTimeout(
      () => {
        const rest = due - Date.now();
        if (rest > 0) arm(rest);
        else callback();
      },
      Math.min(left, MAX_TIMER_MS),
    );
    timer.unref();
  };
  arm(ms);
  return () => clearTimeout(timer);
}
