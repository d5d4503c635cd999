// Small DOM and formatting helpers shared by the pages.

/** h("button", { class: "x", onclick: fn }, "text", child, [more]) */
export function h(tag, attrs = {}, ...children) {
  const el = document.createElement(tag);
  for (const [k, v] of Object.entries(attrs ?? {})) {
    if (v === undefined || v === null || v === false) continue;
    if (k.startsWith("on") && typeof v === "function") el.addEventListener(k.slice(2), v);
    else if (k === "class") el.className = v;
    else if (k === "text") el.textContent = v;
    else if (k === "dataset") Object.assign(el.dataset, v);
    else if (v === true) el.setAttribute(k, "");
    else el.setAttribute(k, String(v));
  }
  append(el, children);
  return el;
}

function append(el, children) {
  for (const c of children) {
    if (c === null || c === undefined || c === false) continue;
    if (Array.isArray(c)) append(el, c);
    else el.append(c instanceof Node ? c : String(c));
  }
}

export function clear(el) {
  el.replaceChildren();
  return el;
}

export const fmt = {
  pct: (n) => (n === null || n === undefined ? "–" : `${n.toFixed(1)} %`),
  gbFromMb: (mb) => (mb === null || mb === undefined ? "–" : (mb / 1024).toFixed(1)),
  gb: (gb) => (gb === null || gb === undefined ? "–" : gb >= 100 ? gb.toFixed(0) : gb.toFixed(1)),
  /** Bytes in binary units (KiB, MiB, GiB, TiB). */
  bytes(n) {
    if (n === null || n === undefined) return "–";
    if (n < 1024) return `${n} B`;
    const units = ["KiB", "MiB", "GiB", "TiB"];
    let v = n / 1024;
    let i = 0;
    while (v >= 1024 && i < units.length - 1) {
      v /= 1024;
      i++;
    }
    return `${v.toFixed(v >= 100 ? 0 : 1)} ${units[i]}`;
  },
  load: (n) => (n === null || n === undefined ? "–" : n.toFixed(2)),
  time: (iso) => (iso ? new Date(iso).toLocaleString() : "–"),
  clock: (iso) => (iso ? new Date(iso).toLocaleTimeString() : ""),
  ago(iso) {
    if (!iso) return "never";
    const s = Math.max(0, Math.round((Date.now() - new Date(iso).getTime()) / 1000));
    if (s < 60) return `${s} s ago`;
    if (s < 3600) return `${Math.round(s / 60)} min ago`;
    if (s < 86400) return `${Math.round(s / 3600)} h ago`;
    return `${Math.round(s / 86400)} d ago`;
  },
};

/** A status shown in words with a matching style (never by colour alone). */
export function badge(status, label = status) {
  return h("span", { class: `badge badge-${String(status).replace(/[^a-z_]/g, "")}` }, label);
}

/** A labelled form field. */
export function field(label, control, hint) {
  const id = control.id || `f-${Math.random().toString(36).slice(2, 9)}`;
  control.id = id;
  const hintEl = hint ? h("span", { class: "hint", id: `${id}-hint` }, hint) : null;
  if (hintEl) control.setAttribute("aria-describedby", hintEl.id);
  return h("div", { class: "field" }, h("label", { for: id }, label), control, hintEl);
}

/** A labelled checkbox: the box, then its label. */
export function checkField(label, control, hint) {
  const f = field(label, control, hint);
  f.classList.add("check");
  f.prepend(control);
  return f;
}

/** A data table: a caption for screen readers, one header row, then the rows. */
export function table(caption, headers, rows) {
  return h(
    "table",
    {},
    h("caption", { class: "visually-hidden" }, caption),
    h("thead", {}, h("tr", {}, headers.map((t) => h("th", { scope: "col" }, t)))),
    h("tbody", {}, rows),
  );
}

/**
 * The API's per-field problems of a refused form (ApiError `details`, paths like
 * "body/ram_mb"), each shown under the control named like the path's first field (here
 * name="ram_mb") and tied to it for screen readers; the earlier ones are cleared.
 */
export function showFieldErrors(form, details = []) {
  if (!form) return;
  for (const old of form.querySelectorAll(".field-error")) {
    const control = form.elements.namedItem(old.dataset.for);
    if (control instanceof Element) {
      control.removeAttribute("aria-invalid");
      const rest = (control.getAttribute("aria-describedby") ?? "").split(/\s+/).filter((id) => id !== "" && id !== old.id);
      if (rest.length) control.setAttribute("aria-describedby", rest.join(" "));
      else control.removeAttribute("aria-describedby");
    }
    old.remove();
  }
  for (const d of details) {
    const name = /^body\/([^/]+)/.exec(d.path ?? "")?.[1];
    const control = name ? form.elements.namedItem(name) : null;
    if (!(control instanceof Element) || !control.id) continue;
    const box = control.closest(".field") ?? control.parentElement;
    let el = box.querySelector(".field-error");
    if (!el) {
      el = h("span", { class: "field-error", id: `${control.id}-error`, dataset: { for: name } });
      box.append(el);
      control.setAttribute("aria-describedby", `${control.getAttribute("aria-describedby") ?? ""} ${el.id}`.trim());
    }
    control.setAttribute("aria-invalid", "true");
    el.textContent = el.textContent ? `${el.textContent}; ${d.message}` : d.message;
  }
}

/**
 * A form's submit handler: the default submission is stopped, the submit button disabled
 * while `work` runs, and a failure shown through `showError`, with the API's per-field
 * problems next to their fields.
 */
export function onSubmit(submit, showError, work) {
  const run = onAction(
    submit,
    (err) => {
      showFieldErrors(submit.form, err?.details);
      showError(err);
    },
    async () => {
      showFieldErrors(submit.form);
      await work();
    },
  );
  return async (ev) => {
    ev.preventDefault();
    await run();
  };
}

/** A button's click handler: the button disabled while `work` runs, a failure shown through `showError`. */
export function onAction(button, showError, work) {
  return async () => {
    button.disabled = true;
    try {
      await work();
    } catch (err) {
      showError(err);
    } finally {
      button.disabled = false;
    }
  };
}
