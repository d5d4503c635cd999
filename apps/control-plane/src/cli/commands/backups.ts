// Placeholder: filled in by the command's owner.
import type { Command } from "commander";
import type { Context } from "../context.ts";

export function registerBackups(_program: Command, _context: () => Context): void {}
