/** Where each keyset page seen so far began; the last is the page shown (undefined: the first page). */
export class PageTrail {
  private cursors: (string | undefined)[] = [undefined];

  /** The cursor the page shown starts after (or before, for lists read newest first). */
  get cursor(): string | undefined {
    return this.cursors.at(-1);
  }

  get onFirst(): boolean {
    return this.cursors.length === 1;
  }

  /** How many items the pages before the one shown held. */
  offset(pageSize: number): number {
    return (this.cursors.length - 1) * pageSize;
  }

  reset(): void {
    this.cursors = [undefined];
  }

  back(): void {
    if (this.cursors.length > 1) this.cursors = this.cursors.slice(0, -1);
  }

  forward(cursor: string): void {
    this.cursors = [...this.cursors, cursor];
  }
}
