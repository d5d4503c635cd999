// How a followed operation shows where it stands: on a terminal, one progress bar on stderr,
// redrawn in place and kept below the log lines; elsewhere (piped, CI) one plain line on
// stdout each time the step changes. Byte counts (uploads) use the same bar.
import type { Output } from "./output.ts";

const WIDTH = 28;

export interface ProgressView {
  /** The step changed, or the percentage moved. */
  update(p: { percent: number; label: string; stepChanged: boolean }): void;
  /** Prints a line above the bar. */
  print(line: string): void;
  /** Removes the bar. */
  done(): void;
}

export function progressView(out: Output, stream: NodeJS.WriteStream = process.stderr): ProgressView {
  const live = !out.json && Boolean(stream.isTTY);
  let bar = "";
  const clear = () => {
    if (live && bar) stream.write("\r\x1b[2K");
  };
  const draw = () => {
    if (live && bar) stream.write(bar);
  };
  return {
    update({ percent, label, stepChanged }) {
      if (live) {
        const filled = Math.round((Math.max(0, Math.min(100, percent)) / 100) * WIDTH);
        clear();
        bar = `${out.paint("cyan", "█".repeat(filled))}${out.paint("dim", "░".repeat(WIDTH - filled))} ${String(Math.round(percent)).padStart(3)}%  ${label}`;
        draw();
      } else if (stepChanged && !out.json) {
        out.line(`${out.paint("cyan", "==>")} ${label}`);
      }
    },
    print(line) {
      clear();
      out.line(line);
      draw();
    },
    done() {
      clear();
      bar = "";
    },
  };
}

/** 1.5 MB, in the units people read. */
export function formatBytes(n: number): string {
  const units = ["B", "KB", "MB", "GB", "TB"];
  let v = n;
  let i = 0;
  while (v >= 1024 && i < units.length - 1) {
    v /= 1024;
    i++;
  }
  return `${i === 0 ? v : v.toFixed(1)} ${units[i]}`;
}
