// The bytes of a pg_dump custom-format archive as they stream past (pg-custom-archive.ts reads
// them): exact reads of a few bytes, and long runs (a table's data) passed on in the pieces they
// arrive in, never gathered. A read past the end is the archive's fault: PgArchiveError.

/** Why an archive cannot be read: "malformed" (truncated, lying, over a bound) or "unsupported" (a version or compression not read). */
export class PgArchiveError extends Error {
  constructor(
    readonly code: "malformed" | "unsupported",
    message: string,
  ) {
    super(message);
    this.name = "PgArchiveError";
  }
}

const EMPTY = Buffer.alloc(0);

/** A pull reader over chunks (a Readable, or any async iterable of bytes). */
export class ArchiveBytes {
  private buf: Buffer = EMPTY;
  private pos = 0;
  /** Bytes consumed so far. */
  offset = 0;
  private readonly source: AsyncIterator<Uint8Array>;

  constructor(chunks: AsyncIterable<Uint8Array>) {
    this.source = chunks[Symbol.asyncIterator]();
  }

  /** The next chunk into the buffer (keeping what is left); false at the end of the input. */
  private async more(): Promise<boolean> {
    const next = await this.source.next();
    if (next.done) return false;
    const chunk = Buffer.from(next.value.buffer, next.value.byteOffset, next.value.byteLength);
    this.buf = this.pos < this.buf.length ? Buffer.concat([this.buf.subarray(this.pos), chunk]) : chunk;
    this.pos = 0;
    return true;
  }

  private truncated(): PgArchiveError {
    return new PgArchiveError("malformed", `the archive ends early (truncated at byte ${this.offset + this.buf.length - this.pos})`);
  }

  async byte(): Promise<number> {
    if (this.pos >= this.buf.length && !(await this.more())) throw this.truncated();
    this.offset++;
    return this.buf[this.pos++]!;
  }

  /** Exactly `n` bytes (the caller bounds n). */
  async read(n: number): Promise<Buffer> {
    if (this.buf.length - this.pos >= n) {
      const out = this.buf.subarray(this.pos, this.pos + n);
      this.pos += n;
      this.offset += n;
      return out;
    }
    const parts: Buffer[] = [];
    await this.pass(n, (piece) => void parts.push(Buffer.from(piece)));
    return Buffer.concat(parts);
  }

  /** The next `n` bytes, to `each` in the pieces they arrive in (views of the input's chunks, which are never reused: a piece may be kept). */
  async pass(n: number, each: (piece: Buffer) => void | Promise<void>): Promise<void> {
    while (n > 0) {
      if (this.pos >= this.buf.length && !(await this.more())) throw this.truncated();
      const take = Math.min(n, this.buf.length - this.pos);
      const piece = this.buf.subarray(this.pos, this.pos + take);
      this.pos += take;
      this.offset += take;
      n -= take;
      await each(piece);
    }
  }

  /** True when the input has no byte left. */
  async atEnd(): Promise<boolean> {
    return this.pos >= this.buf.length && !(await this.more());
  }

  /** Ends the input early (closes the stream behind it). */
  async close(): Promise<void> {
    await this.source.return?.();
  }
}
