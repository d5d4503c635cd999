// The agent's version, sent in `hello` and at enrolment. A constant rather than a read of
// package.json, so the single-executable build carries it without a file beside it; a test
// keeps the two equal.
export const AGENT_VERSION = "0.1.0";
