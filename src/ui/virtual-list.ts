/**
 * A scrolling list that keeps only the rows in view (plus a few either side) in the DOM, so a
 * service with 10,000 instances costs the same to draw, scroll and update as one with 20.
 * Rows have one height, measured from the first drawn row (CSS may change it, e.g. on phones).
 */
export class VirtualList<T> {
  private items: readonly T[] = [];
  private rowHeightPx = 0;
  private readonly spacer: HTMLDivElement;
  private readonly window: HTMLDivElement;
  private frame = 0;

  constructor(
    private readonly viewport: HTMLElement,
    private readonly renderRow: (item: T, index: number) => HTMLElement,
    private readonly overscan = 8,
  ) {
    viewport.classList.add('vlist');
    this.spacer = document.createElement('div');
    this.spacer.className = 'vlist-spacer';
    this.window = document.createElement('div');
    this.window.className = 'vlist-window';
    this.spacer.append(this.window);
    viewport.append(this.spacer);
    viewport.addEventListener('scroll', () => this.schedule(), { passive: true });
    new ResizeObserver(() => {
      this.rowHeightPx = 0;
      this.schedule();
    }).observe(viewport);
  }

  /** Shows these items, drawn now (call it from an animation frame). */
  setItems(items: readonly T[]): void {
    this.items = items;
    this.draw();
  }

  get length(): number {
    return this.items.length;
  }

  /** Draws the visible rows again at the next frame (their content changed). */
  schedule(): void {
    if (this.frame === 0) this.frame = requestAnimationFrame(() => this.draw());
  }

  /** Draws the rows in view now. */
  draw(): void {
    if (this.frame !== 0) cancelAnimationFrame(this.frame);
    this.frame = 0;
    const count = this.items.length;
    if (this.rowHeightPx === 0 && count > 0) {
      const probe = this.renderRow(this.items[0]!, 0);
      this.window.replaceChildren(probe);
      this.rowHeightPx = probe.getBoundingClientRect().height || 32;
    }
    const rowPx = this.rowHeightPx || 32;
    this.spacer.style.height = `${count * rowPx}px`;
    const first = Math.max(0, Math.floor(this.viewport.scrollTop / rowPx) - this.overscan);
    const visible = Math.ceil((this.viewport.clientHeight || 600) / rowPx) + 2 * this.overscan;
    const last = Math.min(count, first + visible);
    const rows: HTMLElement[] = [];
    for (let index = first; index < last; index++) rows.push(this.renderRow(this.items[index]!, index));
    this.window.style.transform = `translateY(${first * rowPx}px)`;
    this.window.replaceChildren(...rows);
  }
}
