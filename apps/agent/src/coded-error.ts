// An error with a stable code that callers branch on (never on the message). Subclasses set
// `name` as a literal: the shipped executable is minified, so class names are not kept.
export class CodedError<Code extends string = string> extends Error {
  readonly code: Code;

  constructor(code: Code, message: string) {
    super(message);
    this.code = code;
  }
}
