// The backup of a migration, on its page: a file sent from the browser (its SHA-256 computed
// first, read in slices; tier_1 as one POST, larger tiers resumable with Pause and Resume),
// or a backup the control plane downloads from an HTTPS URL.
import { client, ok } from "./api.js";
import { field, fmt, h, onSubmit } from "./dom.js";
import { sha256OfFile } from "./sha256.js";
import { directUpload, resumable, TusUpload } from "./uploads.js";

/** A progress bar with its words beside it ("12.0 MiB of 60.0 MiB"). */
function progressRow(label) {
  const bar = h("progress", { max: "100", value: "0", "aria-label": label });
  const text = h("span", { class: "upload-progress-text" });
  const row = h("div", { class: "upload-progress", hidden: true }, bar, " ", text);
  return {
    row,
    show(done, total, prefix = "") {
      row.hidden = false;
      const pct = total > 0 ? Math.min(100, Math.floor((done / total) * 100)) : 0;
      bar.value = pct;
      text.textContent = `${prefix}${fmt.bytes(done)} of ${fmt.bytes(total)} (${pct} %)`;
    },
    hide() {
      row.hidden = true;
    },
  };
}

/**
 * The upload section of a migration. `m` is the migration when the page opened; `after()` is
 * called once a backup arrived or an import started (the page reloads the record).
 */
export function uploadSection(ctx, m, after) {
  const id = m.id;
  const file = h("input", { type: "file", name: "backup", accept: ".zip,.tar,.gz,.tgz,.sql,.dump" });
  const send = h("button", { type: "submit" }, "Upload backup");
  const pause = h("button", { type: "button", class: "secondary", hidden: true }, "Pause");
  const resume = h("button", { type: "button", class: "secondary", hidden: true }, "Resume");
  const state = h("p", { class: "upload-state", role: "status" });
  const hashing = progressRow("Checksum progress");
  const sending = progressRow("Upload progress");
  const section = h("section", { class: "card migration-upload", "aria-labelledby": "upload-h" });
  let tus = null;

  const waiting = resumable.fileName(id);
  if (waiting) state.textContent = `An upload of ${waiting} was interrupted: choose the same file again to continue where it stopped.`;

  /** While a file is being hashed or sent (or paused), the form takes no other. */
  function setBusy(busy) {
    send.disabled = busy;
    file.disabled = busy;
    section.dataset.busy = String(busy);
  }

  /** Sends chunks until done or paused; a pause leaves Resume, a failure the API's message. */
  async function runTus() {
    pause.hidden = false;
    resume.hidden = true;
    setBusy(true);
    try {
      await tus.start();
      if (!ctx.current()) return;
      pause.hidden = true;
      state.textContent = "Backup received and verified; the analysis started.";
      ctx.announce("Backup uploaded.");
      tus = null;
      setBusy(false);
      after();
    } catch (err) {
      if (!ctx.current()) return;
      pause.hidden = true;
      if (err.name === "AbortError") {
        resume.hidden = false;
        sending.show(tus.offset, tus.file.size);
        state.textContent = `Paused at ${fmt.bytes(tus.offset)}.`;
        return;
      }
      tus = null;
      setBusy(false);
      state.textContent = "";
      ctx.showError(err);
    }
  }

  pause.addEventListener("click", () => tus?.pause());
  resume.addEventListener("click", () => void runTus());
  // Leaving the page stops the work (a resumable upload continues when the file is chosen again here).
  const leaving = new AbortController();
  ctx.onCleanup(() => {
    leaving.abort();
    tus?.pause();
  });

  const form = h(
    "form",
    { class: "upload-form" },
    field("Backup file", file, "A .zip with dump.sql, filestore/ and manifest.json, a .tar(.gz) holding a SQL dump, or a database-only .sql"),
    h("div", { class: "actions" }, send, pause, resume),
    hashing.row,
    sending.row,
    state,
  );
  // Not onSubmit(): that enables the button again when the handler returns, while a
  // resumable upload goes on (runTus) after it.
  form.addEventListener("submit", (ev) => {
    ev.preventDefault();
    void begin().catch((err) => {
      if (!ctx.current()) return;
      setBusy(false);
      state.textContent = "";
      ctx.showError(err);
    });
  });
  async function begin() {
    const f = file.files?.[0];
    if (!f) throw new Error("Choose the backup file first.");
    setBusy(true);
    const saved = resumable.find(id, f);
    if (saved) {
      // The same file as an interrupted upload: ask the server where it stopped, no new init
      // (a new init would replace that upload).
      state.textContent = `Continuing the upload of ${f.name}…`;
      tus = new TusUpload({ migrationId: id, file: f, url: saved.url, sha256: saved.sha256, chunkSize: 10 * 1024 * 1024, onProgress: (n) => sending.show(n, f.size), onRetry: retried });
      try {
        await tus.head();
        return void runTus();
      } catch (err) {
        tus = null;
        if (err.code !== "upload_gone") throw err;
      }
    }
    state.textContent = "Computing the SHA-256 of the file…";
    const sha256 = await sha256OfFile(f, (n) => hashing.show(n, f.size, "Checksum: "), leaving.signal);
    if (!ctx.current()) return;
    const init = await ok(client.POST("/migrations/{migration_id}/upload/init", { params: { path: { migration_id: id }, query: { file_name: f.name, file_size: f.size, sha256 } } }));
    if (init.protocol === "multipart") {
      state.textContent = `Uploading ${f.name}…`;
      const out = await directUpload(init.upload_url, f, sha256, { onProgress: (n) => sending.show(n, f.size), signal: leaving.signal });
      if (!ctx.current()) return;
      state.textContent = `Backup received and verified (SHA-256 ${out.sha256}); the analysis started.`;
      ctx.announce("Backup uploaded.");
      setBusy(false);
      after();
      return;
    }
    if (init.protocol !== "tus") throw new Error("This backup store takes large backups in parallel parts, which the dashboard does not send yet: use Import from URL or the API.");
    state.textContent = `Uploading ${f.name} in ${fmt.bytes(init.chunk_size_bytes)} chunks…`;
    tus = new TusUpload({ migrationId: id, file: f, endpoint: init.upload_url, sha256, chunkSize: init.chunk_size_bytes, onProgress: (n) => sending.show(n, f.size), onRetry: retried });
    void runTus();
  }

  function retried(err, wait) {
    if (ctx.current()) state.textContent = `${err.message} Trying again in ${Math.round(wait / 1000)} s…`;
  }

  section.append(h("h2", { id: "upload-h" }, "Upload the backup"), form, importForm(ctx, id, after));
  return section;
}

/** Import from URL: the control plane downloads the backup itself (progress comes as events). */
function importForm(ctx, id, after) {
  const url = h("input", { type: "url", name: "cloud_url", placeholder: "https://…", autocomplete: "off", required: true });
  const submit = h("button", { type: "submit", class: "secondary" }, "Import from URL");
  const form = h("form", { class: "import-form" }, h("h3", {}, "Or import from a URL"), field("Backup URL", url, "A public HTTPS link answering the file (a presigned link valid at least an hour)"), submit);
  form.addEventListener(
    "submit",
    onSubmit(submit, ctx.showError, async () => {
      const out = await ok(client.POST("/migrations/{migration_id}/import-url", { params: { path: { migration_id: id } }, body: { cloud_url: url.value.trim() } }));
      ctx.announce(out.message);
      after();
    }),
  );
  return form;
}

/** The bytes of an upload or import under way, from the record or a migration_progress event. */
export function receivedText(received, total) {
  if (!total) return received ? `${fmt.bytes(received)} received` : "";
  return `${fmt.bytes(received)} of ${fmt.bytes(total)} received (${Math.floor((received / total) * 100)} %)`;
}
