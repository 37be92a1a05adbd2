/**
 * At most `perSecond` lines a second, in bursts of as many, for lines an outsider can cause at will (a
 * rejected credential): a flood of bad requests cannot fill the disk. A token bucket, refilled on use.
 */
export class LineBudget {
  readonly #perSecond: number;
  #tokens: number;
  #last = performance.now();
  #dropped = 0;

  constructor(perSecond: number) {
    this.#perSecond = perSecond;
    this.#tokens = perSecond;
  }

  /** Whether the next line may be written: the number of lines dropped since the last one written, or undefined to drop it. */
  take(): number | undefined {
    const now = performance.now();
    this.#tokens = Math.min(this.#perSecond, this.#tokens + ((now - this.#last) / 1000) * this.#perSecond);
    this.#last = now;
    if (this.#tokens < 1) {
      this.#dropped++;
      return undefined;
    }
    this.#tokens--;
    const dropped = this.#dropped;
    this.#dropped = 0;
    return dropped;
  }
}
