// SHA-256 of a file read piece by piece. WebCrypto's digest() takes the whole input at once,
// which for a multi-GB backup would mean holding it all in memory; this incremental
// implementation (FIPS 180-4) reads the file in 4 MiB slices and keeps only 64 bytes of state.

// Int32Array throughout: the sums stay 32-bit integers in the engine instead of doubles (several times faster).
const K = new Int32Array([
  0x428a2f98, 0x71374491, 0xb5c0fbcf, 0xe9b5dba5, 0x3956c25b, 0x59f111f1, 0x923f82a4, 0xab1c5ed5, 0xd807aa98, 0x12835b01, 0x243185be, 0x550c7dc3, 0x72be5d74, 0x80deb1fe, 0x9bdc06a7, 0xc19bf174,
  0xe49b69c1, 0xefbe4786, 0x0fc19dc6, 0x240ca1cc, 0x2de92c6f, 0x4a7484aa, 0x5cb0a9dc, 0x76f988da, 0x983e5152, 0xa831c66d, 0xb00327c8, 0xbf597fc7, 0xc6e00bf3, 0xd5a79147, 0x06ca6351, 0x14292967,
  0x27b70a85, 0x2e1b2138, 0x4d2c6dfc, 0x53380d13, 0x650a7354, 0x766a0abb, 0x81c2c92e, 0x92722c85, 0xa2bfe8a1, 0xa81a664b, 0xc24b8b70, 0xc76c51a3, 0xd192e819, 0xd6990624, 0xf40e3585, 0x106aa070,
  0x19a4c116, 0x1e376c08, 0x2748774c, 0x34b0bcb5, 0x391c0cb3, 0x4ed8aa4a, 0x5b9cca4f, 0x682e6ff3, 0x748f82ee, 0x78a5636f, 0x84c87814, 0x8cc70208, 0x90befffa, 0xa4506ceb, 0xbef9a3f7, 0xc67178f2,
]);

export class Sha256 {
  constructor() {
    this.h = new Int32Array([0x6a09e667, 0xbb67ae85, 0x3c6ef372, 0xa54ff53a, 0x510e527f, 0x9b05688c, 0x1f83d9ab, 0x5be0cd19]);
    this.w = new Int32Array(64);
    this.buf = new Uint8Array(64);
    this.bufLen = 0;
    this.length = 0;
  }

  /** Adds bytes (a Uint8Array) to the digest. */
  update(data) {
    this.length += data.length;
    let i = 0;
    if (this.bufLen > 0) {
      const take = Math.min(64 - this.bufLen, data.length);
      this.buf.set(data.subarray(0, take), this.bufLen);
      this.bufLen += take;
      i = take;
      if (this.bufLen < 64) return this;
      compress(this.h, this.w, this.buf, 0);
      this.bufLen = 0;
    }
    for (; i + 64 <= data.length; i += 64) compress(this.h, this.w, data, i);
    if (i < data.length) {
      this.buf.set(data.subarray(i), 0);
      this.bufLen = data.length - i;
    }
    return this;
  }

  /** The digest as 64 lowercase hex characters; the object is spent afterwards. */
  hex() {
    const bits = this.length * 8;
    const pad = new Uint8Array((this.bufLen < 56 ? 64 : 128) - this.bufLen);
    pad[0] = 0x80;
    // The length in bits, big-endian, in the last 8 bytes (split: numbers above 2^32 lose bit ops).
    const hi = Math.floor(bits / 0x100000000);
    const lo = bits >>> 0;
    const n = pad.length;
    pad[n - 8] = hi >>> 24;
    pad[n - 7] = hi >>> 16;
    pad[n - 6] = hi >>> 8;
    pad[n - 5] = hi;
    pad[n - 4] = lo >>> 24;
    pad[n - 3] = lo >>> 16;
    pad[n - 2] = lo >>> 8;
    pad[n - 1] = lo;
    const length = this.length;
    this.update(pad);
    this.length = length;
    return Array.from(this.h, (x) => (x >>> 0).toString(16).padStart(8, "0")).join("");
  }
}

/** One 64-byte block of p at offset o into the state h (w: scratch). */
function compress(h, w, p, o) {
  for (let t = 0; t < 16; t++, o += 4) w[t] = (p[o] << 24) | (p[o + 1] << 16) | (p[o + 2] << 8) | p[o + 3];
  for (let t = 16; t < 64; t++) {
    const a = w[t - 15];
    const b = w[t - 2];
    const s0 = ((a >>> 7) | (a << 25)) ^ ((a >>> 18) | (a << 14)) ^ (a >>> 3);
    const s1 = ((b >>> 17) | (b << 15)) ^ ((b >>> 19) | (b << 13)) ^ (b >>> 10);
    w[t] = (((w[t - 16] + s0) | 0) + ((w[t - 7] + s1) | 0)) | 0;
  }
  let a = h[0], b = h[1], c = h[2], d = h[3], e = h[4], f = h[5], g = h[6], k = h[7];
  for (let t = 0; t < 64; t++) {
    const S1 = ((e >>> 6) | (e << 26)) ^ ((e >>> 11) | (e << 21)) ^ ((e >>> 25) | (e << 7));
    const t1 = (((((k + S1) | 0) + ((e & f) ^ (~e & g))) | 0) + ((K[t] + w[t]) | 0)) | 0;
    const S0 = ((a >>> 2) | (a << 30)) ^ ((a >>> 13) | (a << 19)) ^ ((a >>> 22) | (a << 10));
    const t2 = (S0 + ((a & b) ^ (a & c) ^ (b & c))) | 0;
    k = g;
    g = f;
    f = e;
    e = (d + t1) | 0;
    d = c;
    c = b;
    b = a;
    a = (t1 + t2) | 0;
  }
  h[0] = (h[0] + a) | 0;
  h[1] = (h[1] + b) | 0;
  h[2] = (h[2] + c) | 0;
  h[3] = (h[3] + d) | 0;
  h[4] = (h[4] + e) | 0;
  h[5] = (h[5] + f) | 0;
  h[6] = (h[6] + g) | 0;
  h[7] = (h[7] + k) | 0;
}

const SLICE = 4 * 1024 * 1024;

/**
 * The SHA-256 (hex) of a File or Blob, read one slice at a time (the page stays responsive
 * between slices). onProgress(bytesDone) after each slice; stops with an AbortError when
 * `signal` is aborted.
 */
export async function sha256OfFile(file, onProgress, signal) {
  const hash = new Sha256();
  for (let at = 0; at < file.size; at += SLICE) {
    if (signal?.aborted) throw new DOMException("Stopped", "AbortError");
    hash.update(new Uint8Array(await file.slice(at, at + SLICE).arrayBuffer()));
    onProgress?.(Math.min(file.size, at + SLICE));
  }
  return hash.hex();
}
