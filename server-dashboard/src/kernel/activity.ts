/**
 * Work this process is carrying for someone right now — a relayed call, a streamed reply — that a
 * restart would cut off. `POST /self/restart` refuses (409) while any is running, as the reference does
 * while a chat turn of its process is going.
 */
export class HostActivity {
  private readonly running = new Map<number, string>();
  private next = 0;

  /** Marks `what` as running until the returned function is called (a second call does nothing). */
  begin(what: string): () => void {
    const id = this.next++;
    this.running.set(id, what);
    return () => {
      this.running.delete(id);
    };
  }

  /** What is running, by name, in the order it began. */
  current(): string[] {
    return [...this.running.values()];
  }
}
