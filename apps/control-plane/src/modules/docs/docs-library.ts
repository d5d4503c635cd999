// The docs of apps/control-plane/docs, read and rendered once at start. The folder ships
// with the package (the image copies it beside dist/, installers/control-plane/Containerfile),
// and sits at the same place relative to this file in src/ and in dist/.
import { readdirSync, readFileSync } from "node:fs";
import path from "node:path";
import { renderMarkdown, type DocLink } from "./markdown.ts";

export const DOCS_DIR = path.join(import.meta.dirname, "../../../docs");

/** A topic is the file's name without `.md`: lower case letters, digits and hyphens. */
const TOPIC_FILE = /^([a-z0-9-]+)\.md$/;

export interface Doc {
  topic: string;
  /** The text of the file's first `# ` heading. */
  title: string;
  /** The first paragraph after it, as HTML: what a reader comes to the doc for. */
  summary: string;
  html: string;
}

/** The index's reading order: first steps, using it, running it. A topic not named here comes after these. */
const READING_ORDER = ["try-it", "api", "dashboard", "cli", "agent", "environments", "domains-https", "backups", "migrations", "security", "production", "operating", "capacity", "settings", "testing"];

const rank = (topic: string) => {
  const i = READING_ORDER.indexOf(topic);
  return i === -1 ? READING_ORDER.length : i;
};

/** Every doc of the folder by topic, in reading order. Throws when the folder or a title is missing. */
export function loadDocs(dir: string = DOCS_DIR): Map<string, Doc> {
  const files = readdirSync(dir).filter((name) => TOPIC_FILE.test(name));
  const topics = new Set(files.map((name) => name.slice(0, -".md".length)));
  // `other.md#part` becomes `/docs/other#part`; a link to any other file is not served here.
  const docLink: DocLink = (file, fragment) => {
    const topic = TOPIC_FILE.exec(file.replace(/^\.\//, ""))?.[1];
    return topic !== undefined && topics.has(topic) ? `/docs/${topic}${fragment}` : null;
  };
  const docs = files.map((name): Doc => {
    const source = readFileSync(path.join(dir, name), "utf8");
    const title = /^# (.+)$/m.exec(source)?.[1]?.trim();
    if (title === undefined) throw new Error(`docs: ${name} has no "# " title`);
    const intro = source.split(/^# .+$/m)[1]?.trim().split(/\n\s*\n/)[0] ?? "";
    return {
      topic: name.slice(0, -".md".length),
      title: title.replaceAll("`", ""),
      summary: renderMarkdown(intro, docLink),
      html: renderMarkdown(source, docLink),
    };
  });
  docs.sort((a, b) => rank(a.topic) - rank(b.topic) || a.topic.localeCompare(b.topic));
  return new Map(docs.map((d) => [d.topic, d]));
}
