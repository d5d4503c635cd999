// The agent's version, sent in `hello` and at enrolment. A constant rather than a read of
// package.json, so the single-executable build carries it without a file beside it; a test
// keeps the two equal. The packaging may replace __BERTH_AGENT_VERSION__ (installers/build:
// --version-override, for update tests); from source it is undefined.
declare const __BERTH_AGENT_VERSION__: string | undefined;

export const AGENT_VERSION: string = typeof __BERTH_AGENT_VERSION__ === "string" ? __BERTH_AGENT_VERSION__ : "0.1.0";
